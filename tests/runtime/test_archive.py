"""Archives: round trips, determinism, the standalone runtime's layering, thread safety, validation.
(Hostile archives: test_hostile_archives.py; mutated ones: tests/fuzz/test_archive_fuzz.py.)"""

from __future__ import annotations

import collections
import gc
import io
import json
import struct
import subprocess
import sys
import textwrap
import threading
import zipfile

import numpy as np
import pytest

import scriptc as torch
from scriptc.errors import ArchiveError
from scriptc.runtime import load as runtime_load
from scriptc.runtime import model as model_module
from scriptc.runtime.segments import SegmentStep
from scriptc.runtime.archive import decode_safetensors, encode_safetensors, write_archive
from scriptc.types import TensorType, float32

from ..models import ALL, make_inputs


def _outputs(value):
    return [np.asarray(v) for v in (value if isinstance(value, tuple) else (value,))]


@pytest.mark.parametrize("name", sorted(ALL))
@pytest.mark.parametrize("how", ["trace", "script"])
def test_round_trip_through_jit_load_and_runtime_load(name, how, tmp_path):
    torch.manual_seed(0)
    model = ALL[name]().eval()
    compiled = torch.jit.trace(model, make_inputs(name, 3)) if how == "trace" else torch.jit.script(model)
    path = tmp_path / "model.sc"
    compiled.save(path)
    loaded, standalone = torch.jit.load(path), runtime_load(path)
    for batch in (1, 6):
        x = make_inputs(name, batch)
        with torch.no_grad():
            expected = _outputs(model(x))
        for got in (_outputs(loaded(x)), _outputs(standalone(x.numpy()))):
            for g, e in zip(got, expected):
                np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
    assert list(loaded.state_dict()) == list(model.state_dict())
    assert "def forward" in loaded.code and str(loaded.graph).startswith("graph(")


def test_saving_twice_gives_identical_bytes_and_keeps_extra_files(tmp_path):
    traced = torch.jit.trace(ALL["MLP"]().eval(), make_inputs("MLP", 2))
    a, b = tmp_path / "a.sc", tmp_path / "b.sc"
    torch.jit.save(traced, a, _extra_files={"notes.txt": "hello"})
    torch.jit.save(traced, b, _extra_files={"notes.txt": "hello"})
    assert a.read_bytes() == b.read_bytes()
    extra = {"notes.txt": ""}
    torch.jit.load(a, _extra_files=extra)
    assert extra["notes.txt"] == b"hello"
    with zipfile.ZipFile(a) as zf:
        assert not any(n.endswith(".pkl") for n in zf.namelist())
        assert set(zf.namelist()) >= {"manifest.json", "graphs/forward.ir", "code/forward.py", "weights.safetensors"}


def test_functions_and_exported_methods_save(tmp_path):
    from ..jit.script_corpus import ConstantsModule, calls_helpers
    f = torch.jit.script(calls_helpers)
    torch.jit.save(f, tmp_path / "f.sc")
    x, y = torch.randn(3), torch.randn(3)
    np.testing.assert_allclose(torch.jit.load(tmp_path / "f.sc")(x, y).detach().numpy(), calls_helpers(x, y).numpy(), rtol=1e-6)
    module = ConstantsModule().eval()
    torch.jit.save(torch.jit.script(module), tmp_path / "m.sc")
    loaded = torch.jit.load(tmp_path / "m.sc")
    x = torch.randn(2, 3)
    np.testing.assert_allclose(loaded.doubled(x).detach().numpy(), module.doubled(x).detach().numpy(), rtol=1e-5)


def test_modules_with_ignored_functions_refuse_to_save(tmp_path):
    @torch.jit.ignore
    def python_only(x):
        return x

    class M(torch.nn.Module):
        def forward(self, x):
            return python_only(x)
    with pytest.raises(ArchiveError, match="jit.ignore"):
        torch.jit.save(torch.jit.script(M()), tmp_path / "m.sc")


def test_runtime_does_not_import_the_frontend(tmp_path):
    path = tmp_path / "mlp.sc"
    torch.jit.save(torch.jit.trace(ALL["MLP"]().eval(), make_inputs("MLP", 2)), path)
    code = textwrap.dedent(f"""
        import sys, numpy as np
        import scriptc.runtime as rt
        model = rt.load({str(path)!r})
        out = model(np.ones((4, 16), np.float32))
        assert out.shape == (4, 4)
        bad = [m for m in sys.modules if m.split(".")[:2] in (["scriptc", "jit"], ["scriptc", "nn"],
               ["scriptc", "autograd"], ["scriptc", "optim"], ["scriptc", "tensors"])]
        print(",".join(bad) or "clean")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "clean"


def test_sixteen_threads_get_exactly_the_single_threaded_results(tmp_path):
    path = tmp_path / "mlp.sc"
    torch.jit.save(torch.jit.trace(ALL["TransformerBlock"]().eval(), make_inputs("TransformerBlock", 2)), path)
    model = runtime_load(path, threads=1)
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal((3, 5, 16)).astype(np.float32) for _ in range(16)]
    expected = [model(x) for x in inputs]
    results = [None] * 16

    def work(i):
        for _ in range(20):
            results[i] = model(inputs[i])
    threads = [threading.Thread(target=work, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for got, want in zip(results, expected):
        np.testing.assert_array_equal(got, want)


def test_weights_are_memory_mapped(tmp_path):
    path = tmp_path / "mlp.sc"
    torch.jit.save(torch.jit.trace(ALL["MLP"]().eval(), make_inputs("MLP", 2)), path)
    model = runtime_load(path)
    w = model.archive.weights["layers.0.weight"]
    assert not w.flags.owndata and not w.flags.writeable


def _archive(tmp_path) -> bytes:
    path = tmp_path / "base.sc"
    torch.jit.save(torch.jit.trace(ALL["MLP"](sizes=(4, 3, 2)).eval(), torch.randn(2, 4)), path)
    return path.read_bytes()


def _rewrite(data: bytes, member: str, content: bytes, tmp_path, add: dict | None = None) -> str:
    import io
    src = zipfile.ZipFile(io.BytesIO(data))
    out = tmp_path / "edited.sc"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zf:
        for info in src.infolist():
            if info.filename == member:
                if content is not None:
                    zf.writestr(info.filename, content)
            else:
                zf.writestr(info, src.read(info))
        for name, value in (add or {}).items():
            zf.writestr(name, value)
    return str(out)


def _manifest(data: bytes) -> dict:
    import io
    return json.loads(zipfile.ZipFile(io.BytesIO(data)).read("manifest.json"))


@pytest.mark.parametrize("edit, message", [
    (lambda m: {**m, "format_version": 99}, "needs scriptc"),
    (lambda m: {k: v for k, v in m.items() if k != "methods"}, "missing field"),
    (lambda m: {**m, "kind": "banana"}, "kind must be"),
    (lambda m: {**m, "kind": "function", "methods": {}}, "methods must be an object of method signatures"),
    (lambda m: {**m, "methods": []}, "methods must be an object of method signatures"),
    (lambda m: {**m, "methods": {"../evil": {}}}, "not a plain relative path"),
    (lambda m: {**m, "methods": {"missing": {}}}, "graphs/missing.ir is missing"),
    (lambda m: {**m, "attributes": {"x": [1, 2]}}, "attribute 'x'"),
])
def test_manifest_problems_are_archive_errors(edit, message, tmp_path):
    data = _archive(tmp_path)
    path = _rewrite(data, "manifest.json", json.dumps(edit(_manifest(data))).encode(), tmp_path)
    with pytest.raises(ArchiveError, match=message):
        runtime_load(path)


@pytest.mark.parametrize("header, message", [
    ({"w": {"dtype": "F99", "shape": [1], "data_offsets": [0, 4]}}, "unknown dtype"),
    ({"w": {"dtype": "F32", "shape": [1 << 40], "data_offsets": [0, 4]}}, "needs"),
    ({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 400]}}, "outside"),
    ({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}, "invalid shape"),
    ({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
      "b": {"dtype": "F32", "shape": [1], "data_offsets": [2, 6]}}, "overlap|outside"),
])
def test_safetensors_header_problems(header, message):
    text = json.dumps(header).encode()
    blob = struct.pack("<Q", len(text)) + text + b"\0" * 8
    with pytest.raises(ArchiveError, match=message):
        decode_safetensors(blob)


def test_safetensors_round_trip_and_bad_ir(tmp_path):
    arrays = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.array([True, False])}
    back = decode_safetensors(encode_safetensors(arrays))
    for k in arrays:
        np.testing.assert_array_equal(back[k], arrays[k])
    data = _archive(tmp_path)
    with pytest.raises(ArchiveError, match=r"graphs/forward.ir: \d+:\d+"):
        runtime_load(_rewrite(data, "graphs/forward.ir", b"graph(%x : Tensor):\n  return (%nope)\n", tmp_path))
    with pytest.raises(ArchiveError, match="missing member"):
        runtime_load(_rewrite(data, "weights.safetensors", None, tmp_path))
    with pytest.raises(ArchiveError, match="not a scriptc archive"):
        (tmp_path / "junk.sc").write_bytes(b"not a zip")
        runtime_load(tmp_path / "junk.sc")


class _Rotary(torch.nn.Module):
    """Rotary embedding as llama's apply_rotary_emb: pairs of features times a complex buffer."""

    def __init__(self, dtype):
        super().__init__()
        angles = torch.outer(torch.arange(4).float(), torch.rand(3))
        self.register_buffer("freqs_cis", torch.polar(torch.ones_like(angles), angles).to(dtype))

    def forward(self, x):
        pairs = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
        return torch.view_as_real(pairs * self.freqs_cis).flatten(-2)


def test_complex64_buffers_are_stored_and_run_in_the_runtime(tmp_path):
    arrays = {"c": (np.arange(6) + 1j * np.arange(6)).astype(np.complex64).reshape(2, 3)}
    back = decode_safetensors(encode_safetensors(arrays))
    assert back["c"].dtype == np.complex64
    np.testing.assert_array_equal(back["c"], arrays["c"])
    torch.manual_seed(0)
    model = _Rotary(torch.complex64)
    x = torch.randn(2, 4, 6)
    path = tmp_path / "rotary.sc"
    torch.jit.trace(model, x).save(path)
    np.testing.assert_allclose(runtime_load(path)(x.numpy()), model(x).numpy(), rtol=1e-6, atol=1e-6)
    with pytest.raises(ArchiveError, match="complex128, which safetensors cannot store"):
        torch.jit.trace(_Rotary(torch.complex128), x).save(tmp_path / "wide.sc")


def _doubles_until_one(x):
    while bool(x.max() < 1.0):
        x = x * 2.0
    return x


def _rejects_zeros(x):
    if bool(x.abs().sum() == 0.0):
        raise ValueError("all zeros")
    return torch.relu(x) + 1.0


def _save_with_typed_input(fn, path) -> None:
    """A scripted function's archive whose input is typed Tensor(float32, [B, 3]), so that load can
    prime it (scripted graphs have no shapes of their own)."""
    graph = torch.jit.script(fn).graph
    graph.inputs[0].type = TensorType(float32, ("B", 3))
    write_archive(path, "function", {"forward": graph}, {}, {}, {}, {})


def test_load_primes_each_method_so_the_first_call_builds_nothing(tmp_path):
    path = tmp_path / "mlp.sc"
    torch.jit.save(torch.jit.trace(ALL["MLP"]().eval(), make_inputs("MLP", 2)), path)
    model = runtime_load(path)
    runner = model.runners["forward"]
    assert runner.group_steps and all(s.kernel is not None for s in runner.group_steps)
    segments = [s for s in runner.steps if isinstance(s, SegmentStep)]
    # The whole MLP is one segment, whose program (for any batch size) the priming calls wrote down.
    assert len(segments) == len(runner.steps) == 1 and all(segments[0].programs.values())

    def built():
        return [dict(s.programs) for s in segments], [dict(s._launches) for s in runner.group_steps]
    prepared = built()
    x = np.random.default_rng(0).standard_normal((3, 16)).astype(np.float32)  # a batch no priming call had
    np.testing.assert_allclose(model(x), runtime_load(path, prime=False, jit=False)(x), rtol=1e-5, atol=1e-6)
    assert built() == prepared


def test_load_leaves_the_young_generations_collected(tmp_path):
    """What loading allocated is collected at load (generation 1 empty), not by a collection that
    the first real call would trigger."""
    path = tmp_path / "mlp.sc"
    torch.jit.save(torch.jit.trace(ALL["MLP"]().eval(), make_inputs("MLP", 2)), path)
    junk = [[i] for i in range(5000)]  # young objects, and collections, before the load
    runtime_load(path)
    assert gc.get_count()[1] == 0
    del junk


def test_priming_repeats_each_batch_within_a_time_budget(tmp_path, monkeypatch):
    path = tmp_path / "mlp.sc"
    torch.jit.save(torch.jit.trace(ALL["MLP"]().eval(), make_inputs("MLP", 2)), path)
    batches = []
    real = model_module.RuntimeModel.run_method
    monkeypatch.setattr(model_module.RuntimeModel, "run_method",
                        lambda self, name, *inputs: batches.append(inputs[0].shape[0]) or real(self, name, *inputs))
    monkeypatch.setattr(model_module, "PRIMING_BUDGET_S", 10.0)  # (room for every call on a busy machine)
    runtime_load(path)
    # Batches 2 and 1 say a wide batch is cheap: it runs as often as the budget allows, then 2 and 1
    # again.
    calls = model_module.PRIMING_CALLS
    assert batches[:2 * calls] == [2] * calls + [1] * calls
    wide = [b for b in batches[2 * calls:] if b == model_module.WIDE_PRIMING_BATCH]
    assert 1 <= len(wide) <= calls and batches[2 * calls:2 * calls + len(wide)] == wide
    again = batches[2 * calls + len(wide):]
    assert 4 <= len(again) <= 2 * calls and again == sorted(again, reverse=True) and again[-1] == 1
    batches.clear()
    # A slow model: two calls per batch (the first writes each segment's program down, the second runs
    # it and sizes its memory), none wide.
    monkeypatch.setattr(model_module, "PRIMING_BUDGET_S", 0.0)
    runtime_load(path)
    assert batches == [2, 2, 1, 1]


def test_the_wide_priming_batch_is_the_widest_power_of_two_that_fits_half_the_budget():
    half = model_module.PRIMING_BUDGET_S / 2
    wide = model_module._wide_priming_batch  # (the fastest batch-1 call, the fastest batch-2 call)
    assert wide(half / 1000, 2 * half / 1000) == model_module.WIDE_PRIMING_BATCH
    assert wide(half / 20, 2 * half / 20) == 16  # a CNN's images: each one costs as much
    assert wide(half / 2, half) == 2  # no wider than the batch-2 calls: none
    assert wide(half * 3, half * 4) == 0
    # A recurrent model's call is mostly its steps' fixed cost: a row more costs a fraction of a call.
    assert wide(half / 12, half / 12 + half / 40) == 32
    assert wide(half / 12, half / 12) == model_module.WIDE_PRIMING_BATCH  # (rows that cost nothing)


def test_priming_skips_loops_and_survives_a_model_that_rejects_zeros(tmp_path):
    loop_path, raise_path = tmp_path / "loop.sc", tmp_path / "raise.sc"
    _save_with_typed_input(_doubles_until_one, loop_path)
    _save_with_typed_input(_rejects_zeros, raise_path)
    loaded = {}
    # On zeros the loop never ends: load must not run it.
    worker = threading.Thread(target=lambda: loaded.update(model=runtime_load(loop_path)), daemon=True)
    worker.start()
    worker.join(60)
    assert not worker.is_alive() and "model" in loaded
    np.testing.assert_array_equal(loaded["model"](np.full((2, 3), 0.3, np.float32)), np.full((2, 3), 1.2, np.float32))
    rejects = runtime_load(raise_path)
    np.testing.assert_array_equal(rejects(np.full((2, 3), -1.0, np.float32)), np.ones((2, 3), np.float32))
    with pytest.raises(Exception, match="all zeros"):
        rejects(np.zeros((2, 3), np.float32))


@pytest.mark.parametrize("how", ["trace", "script"])
def test_submodule_names_that_are_no_identifiers_round_trip(how, tmp_path):
    # torchvision's RegNet names its blocks "block1-0"; CLIP's ResNet has a Sequential entry "-1"
    inner = torch.nn.Sequential(collections.OrderedDict([("-1", torch.nn.AvgPool2d(2)),
                                                         ("0", torch.nn.Conv2d(3, 4, 1))]))
    model = torch.nn.Sequential(collections.OrderedDict([("block1-0", inner), ("head (x)", torch.nn.ReLU())])).eval()
    x = torch.randn(2, 3, 8, 8)
    compiled = torch.jit.trace(model, x) if how == "trace" else torch.jit.script(model)
    path = tmp_path / "model.sc"
    compiled.save(path)
    expected = model(x).detach().numpy()
    np.testing.assert_allclose(torch.jit.load(path)(x).detach().numpy(), expected, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.asarray(runtime_load(path)(x.numpy())), expected, rtol=1e-6, atol=1e-6)


def test_an_archive_read_from_a_file_object_is_consumed_as_torch_reads_it():
    """jit.load leaves a buffer at its end; loading it again without seek(0) is an error, as in torch."""
    real_torch = pytest.importorskip("torch")
    for engine in (torch, real_torch):
        buffer = io.BytesIO()
        engine.jit.save(engine.jit.script(engine.nn.ReLU()), buffer)
        buffer.seek(0)
        engine.jit.load(buffer)
        with pytest.raises(RuntimeError) as refused:
            engine.jit.load(buffer)
        if engine is torch:
            assert isinstance(refused.value, ArchiveError) and "stands at its end" in str(refused.value)
        buffer.seek(0)
        assert engine.jit.load(buffer)(engine.tensor([-1.0, 2.0])).tolist() == [0.0, 2.0]
