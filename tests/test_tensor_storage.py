"""Tensor memory and per-element callbacks against torch: untyped_storage()/storage(), torch.frombuffer,
apply_/map_, and the conjugate transposes H/mH."""

import array
import warnings

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")


def _same(build):
    """build(lib) for scriptc and torch give the same value, or the same exception type and text."""
    def run(lib):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                value = build(lib)
        except Exception as exc:  # noqa: BLE001 - the comparison is of which exception and its text
            return isinstance(exc, RuntimeError), type(exc).__name__ if not isinstance(exc, RuntimeError) else "", \
                str(exc)
        if isinstance(value, (lib.Tensor,)):
            return str(value.dtype).split(".")[-1], value.tolist()
        return value
    assert run(scriptc) == run(torch)


STORAGE = [
    lambda t: (lambda x: (x.untyped_storage().nbytes(), x.untyped_storage().size(), len(x.untyped_storage()),
                          x.untyped_storage()[4], x.untyped_storage().element_size()))(t.arange(6.0).reshape(2, 3)),
    lambda t: (lambda x: (x[1].untyped_storage().nbytes(), x[1].untyped_storage().data_ptr() == x.data_ptr(),
                          x.t().untyped_storage().data_ptr() == x.data_ptr(), x[1].data_ptr() == x.data_ptr()))(
        t.arange(6.0).reshape(2, 3)),
    lambda t: (lambda s: (s.size(), len(s), s.nbytes(), s[1], s.tolist(), s.element_size(), str(s.dtype).split(".")[-1]))(
        t.arange(6, dtype=t.int32)[2:].storage()),
    lambda t: t.tensor([1.5, 2.0], dtype=t.bfloat16).storage().tolist(),
]


@pytest.mark.parametrize("build", STORAGE, ids=[str(i) for i in range(len(STORAGE))])
def test_storage_matches_torch(build):
    _same(build)


def test_storage_shares_memory_and_typed_storage_warns_once(monkeypatch):
    from scriptc.tensors import storage as storage_module
    monkeypatch.setattr(storage_module, "_warned_typed", [False])
    x = scriptc.zeros(4)
    storage = x.untyped_storage()
    x[1] = 1.0
    assert storage.tolist()[4:8] == list(np.float32(1.0).tobytes())
    with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
        scriptc.ones(1).storage()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scriptc.ones(1).storage()


FROMBUFFER = [
    lambda t: t.frombuffer(bytearray(b"\x00\x00\x80?\x00\x00\x00@"), dtype=t.float32),
    lambda t: t.frombuffer(bytearray(b"\x00\x00\x80?\x00\x00\x00@"), dtype=t.int16, count=2, offset=2),
    lambda t: t.frombuffer(array.array("f", [1.5, 2.5]), dtype=t.float32),
    lambda t: t.frombuffer(bytearray(8), dtype=t.float32, requires_grad=True).requires_grad,
    lambda t: t.frombuffer(b"", dtype=t.float32),
    lambda t: t.frombuffer(bytearray(3), dtype=t.float32),
    lambda t: t.frombuffer(bytearray(8), dtype=t.float32, count=5),
    lambda t: t.frombuffer(bytearray(8), dtype=t.float32, offset=9),
    lambda t: t.frombuffer([1, 2], dtype=t.float32),
    lambda t: t.frombuffer(bytearray(8), dtype=t.float32, count=0),
]


@pytest.mark.parametrize("build", FROMBUFFER, ids=[str(i) for i in range(len(FROMBUFFER))])
def test_frombuffer_matches_torch(build):
    _same(build)


def test_frombuffer_shares_the_buffer():
    buffer = bytearray(8)
    t = scriptc.frombuffer(buffer, dtype=scriptc.float32)
    t[0] = 5.0
    assert bytes(buffer[:4]) == np.float32(5.0).tobytes()
    buffer[4:8] = np.float32(2.5).tobytes()
    assert t.tolist() == [5.0, 2.5]


CALLBACKS = [
    lambda t: t.tensor([1.0, 2, 3]).apply_(lambda v: v * 2),
    lambda t: t.tensor([1, 2]).apply_(lambda v: v / 2),
    lambda t: t.tensor([[1.0, 2], [3, 4]]).t().apply_(lambda v: v + 1),
    lambda t: t.tensor([1.0, 2, 3]).map_(t.tensor([1.0, 1, 2]), lambda a, b: a * b),
    lambda t: t.tensor([[1.0, 2], [3, 4]]).map_(t.tensor([10.0, 20]), lambda a, b: a + b),
    lambda t: t.tensor([1.0, 2], requires_grad=True).apply_(lambda v: v),
    lambda t: t.tensor([[1.0, 2]]).map_(t.tensor([1.0, 2]).reshape(2, 1), lambda a, b: a + b),
    lambda t: t.tensor([1.0, 2]).map_(t.tensor([3, 4]), lambda a, b: a + b),
    lambda t: t.tensor([1, 2]).map_(t.tensor([True, False]), lambda a, b: a + b),
    lambda t: t.tensor([1.0]).map_(t.tensor([1.0], dtype=t.float16), lambda a, b: a + b),
    lambda t: t.tensor([1 + 1j]).map_(t.tensor([1.0], dtype=t.bfloat16), lambda a, b: a + b),
]


@pytest.mark.parametrize("build", CALLBACKS, ids=[str(i) for i in range(len(CALLBACKS))])
def test_apply_and_map_match_torch(build):
    _same(build)


CONJUGATE = [
    lambda t: t.tensor([[1 + 2j, 3j], [1, 2]]).H, lambda t: t.tensor([[1 + 2j, 3j], [1, 2]]).mH,
    lambda t: t.arange(24.0).reshape(2, 3, 4).mH, lambda t: t.arange(6.0).reshape(2, 3).H,
    lambda t: t.tensor(2.0).H, lambda t: t.ones(2, 3, 4).H, lambda t: t.ones(3).H, lambda t: t.ones(3).mH,
]


@pytest.mark.parametrize("build", CONJUGATE, ids=[str(i) for i in range(len(CONJUGATE))])
def test_conjugate_transposes_match_torch(build):
    _same(build)


def test_conjugate_transpose_is_differentiable():
    x = scriptc.randn(2, 3, requires_grad=True)
    (x.H * scriptc.arange(6.0).reshape(3, 2)).sum().backward()
    assert x.grad.tolist() == scriptc.arange(6.0).reshape(3, 2).t().tolist()
