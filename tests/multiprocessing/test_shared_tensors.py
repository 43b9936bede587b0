"""Shared-memory tensors: share_memory_ in place, and tensors that cross processes as views of the
same memory (Queue, SimpleQueue, Pipe, Process arguments), with fork and spawn."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc as torch
import scriptc.multiprocessing as mp

TIMEOUT = 60  # seconds: generous, the machine is shared


def test_share_memory_moves_the_storage_in_place_and_views_follow():
    base = torch.arange(12).reshape(3, 4).float()
    before = base[1]  # a view made before the move
    assert not base.is_shared()
    assert base.share_memory_() is base
    after = base[:, 2]  # and one made after
    assert base.is_shared() and before.is_shared() and after.is_shared()
    before[0] = 100.0
    after[2] = -1.0
    assert base.tolist() == [[0, 1, 2, 3], [100, 5, 6, 7], [8, 9, -1, 11]]
    address = base.data_ptr()
    base.share_memory_()  # already shared: nothing moves
    assert base.data_ptr() == address


def test_sharing_a_view_moves_its_base_too():
    base = torch.zeros(4)
    view = base[1:3]
    other = base[2:]
    view.share_memory_()
    assert base.is_shared() and other.is_shared()
    other[0] = 5.0
    assert view.tolist() == [0.0, 5.0] and base.tolist() == [0.0, 0.0, 5.0, 0.0]


def test_module_share_memory_shares_parameters_buffers_and_grads():
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm2d(2))
    model[0].weight.grad = torch.zeros(2, 3)
    weight = model[0].weight
    assert model.share_memory() is model
    assert model[0].weight is weight, "parameters stay the same objects"
    assert all(t.is_shared() for t in model.state_dict().values())
    assert weight.is_shared() and weight.grad.is_shared()


def test_non_leaf_tensors_that_require_grad_cannot_be_sent():
    leaf = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor"):
        mp.reductions.reduce_tensor(leaf * 2)


def _add_one_and_send_back(queue, replies, done):
    tensor = queue.get()
    tensor += 1
    replies.put(tensor[1:])
    done.wait(TIMEOUT)


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_tensor_through_a_queue_is_a_view_of_the_same_memory(method):
    ctx = mp.get_context(method)
    queue, replies, done = ctx.Queue(), ctx.Queue(), ctx.Event()
    child = ctx.Process(target=_add_one_and_send_back, args=(queue, replies, done))
    child.start()
    try:
        tensor = torch.zeros(3)
        queue.put(tensor)  # the sender's storage moves into shared memory
        back = replies.get(timeout=TIMEOUT)
        assert tensor.is_shared() and tensor.tolist() == [1.0, 1.0, 1.0]
        back[0] = 7.0  # the child's view of our memory came back as a view of it
        assert tensor.tolist() == [1.0, 7.0, 1.0] and back.is_shared()
    finally:
        done.set()
        child.join(TIMEOUT)
    assert child.exitcode == 0


def _fill_from_pipe(conn):
    parameter = conn.recv()
    parameter.data.fill_(3.0)
    conn.send((type(parameter).__name__, parameter.requires_grad))
    conn.recv()


def test_parameters_through_a_pipe_keep_their_type():
    parent, child_end = mp.Pipe()
    child = mp.get_context("fork").Process(target=_fill_from_pipe, args=(child_end,))
    child.start()
    try:
        parameter = torch.nn.Parameter(torch.zeros(2))
        parent.send(parameter)
        assert parent.recv() == ("Parameter", True)
        assert parameter.tolist() == [3.0, 3.0]
    finally:
        parent.send("done")
        child.join(TIMEOUT)


def _scale_argument(tensor, factor):
    tensor.mul_(factor)


def test_a_shared_tensor_passed_to_a_spawned_process_is_shared():
    tensor = torch.ones(4).share_memory_()
    child = mp.get_context("spawn").Process(target=_scale_argument, args=(tensor, 5.0))
    child.start()
    child.join(TIMEOUT)
    assert child.exitcode == 0 and tensor.tolist() == [5.0] * 4


def test_simple_queue_and_the_multiprocessing_namespace():
    queue = mp.SimpleQueue()
    tensor = torch.arange(3)
    queue.put(tensor)
    received = queue.get()  # within one process: the same memory, mapped once
    received[0] = 9
    assert tensor.tolist() == [9, 1, 2]
    assert mp.get_context("fork").Queue and mp.set_start_method and mp.cpu_count() >= 1
    assert mp.get_sharing_strategy() == "file_descriptor" and mp.get_all_sharing_strategies() == {"file_descriptor"}
    with pytest.raises(AssertionError, match="invalid sharing strategy"):
        mp.set_sharing_strategy("file_system")


def test_shared_storage_is_anonymous_memory():
    tensors = [torch.ones(1000).share_memory_() for _ in range(5)]
    with open("/proc/self/maps") as fh:
        maps = fh.read()
    assert "/memfd:scriptc-storage" in maps and "/dev/shm/" not in maps, "nothing named that could be left behind"
    np.testing.assert_array_equal(tensors[0].numpy(), np.ones(1000))
