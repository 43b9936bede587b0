"""torch.futures against torch: completing a Future (once), waiting across threads, errors, then /
add_done_callback chains, collect_all / wait_all, and what jit.fork returns in eager code."""

import threading

import pytest

import scriptc

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("lib", [scriptc, torch], ids=["scriptc", "torch"])
def test_a_future_completes_once_and_wait_blocks_until_then(lib):
    future = lib.futures.Future()
    assert not future.done()
    threading.Timer(0.05, future.set_result, ("late",)).start()
    assert future.wait() == "late" and future.value() == "late" and future.done()
    with pytest.raises(RuntimeError, match="Attempting to mark a completed Future as complete again"):
        future.set_result(1)


@pytest.mark.parametrize("lib", [scriptc, torch], ids=["scriptc", "torch"])
def test_an_exception_is_raised_by_wait_and_value_and_named_by_a_chained_callback(lib):
    failed = lib.futures.Future()
    failed.set_exception(ValueError("bad input"))
    assert failed.done()
    for read in (failed.wait, failed.value):
        with pytest.raises(ValueError, match="bad input"):
            read()
    chained = failed.then(lambda f: f.wait() + 1)
    with pytest.raises(RuntimeError, match="Got the following error when running the callback: ValueError: bad input"):
        chained.wait()
    with pytest.raises(AssertionError, match="3 is of type <class 'int'>, not an Exception."):
        lib.futures.Future().set_exception(3)


@pytest.mark.parametrize("lib", [scriptc, torch], ids=["scriptc", "torch"])
def test_callbacks_run_on_completion_in_order_and_then_chains_results(lib):
    seen = []
    future = lib.futures.Future()
    future.add_done_callback(lambda f: seen.append(("first", f.value())))
    doubled = future.then(lambda f: f.value() * 2)
    future.add_done_callback(lambda f: 1 / 0)  # logged, not raised
    future.add_done_callback(lambda f: seen.append(("last", f.value())))
    assert seen == [] and not doubled.done()
    future.set_result(21)
    assert seen == [("first", 21), ("last", 21)] and doubled.wait() == 42
    future.add_done_callback(lambda f: seen.append(("after", f.value())))  # already complete: runs now
    assert seen[-1] == ("after", 21)


@pytest.mark.parametrize("lib", [scriptc, torch], ids=["scriptc", "torch"])
def test_collect_all_and_wait_all_join_futures(lib):
    futures = [lib.futures.Future() for _ in range(3)]
    collected = lib.futures.collect_all(futures)
    for i, future in enumerate(reversed(futures)):
        assert not collected.done()
        future.set_result(i)
    assert [f.value() for f in collected.wait()] == [2, 1, 0]
    assert lib.futures.wait_all(futures) == [2, 1, 0]
    assert lib.futures.collect_all([]).wait() == []
    failed = lib.futures.Future()
    failed.set_exception(KeyError("missing"))
    with pytest.raises(KeyError, match="missing"):
        lib.futures.wait_all([futures[0], failed])
    with pytest.raises(KeyError, match="missing"):
        lib.futures.collect_all([failed, futures[1]]).wait()


@pytest.mark.parametrize("lib", [scriptc, torch], ids=["scriptc", "torch"])
def test_jit_fork_in_eager_code_returns_a_completed_future(lib):
    forked = lib.jit.fork(lambda x, k: x * k, 3, k=2)
    assert forked.done() and forked.wait() == 6 and lib.jit.wait(forked) == 6
    assert isinstance(lib.futures.Future(), lib.jit.Future)


@pytest.mark.parametrize("lib", [scriptc, torch], ids=["scriptc", "torch"])
def test_devices_must_name_indexed_devices_this_build_has(lib):
    with pytest.raises(ValueError, match="Expected devices to have indices, got cpu"):
        lib.futures.Future(devices=["cpu"])
    with pytest.raises(RuntimeError, match="not linked with support for cuda devices"):
        lib.futures.Future(devices=["cuda:0"])
