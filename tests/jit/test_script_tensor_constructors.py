"""Scripted tensor construction against torch: the legacy typed constructors (torch.LongTensor(2, 3),
torch.FloatTensor(data), torch.DoubleTensor()), torch.device(...) values and a str where an op
declares a Device."""

import numpy as np
import pytest

import scriptc
from scriptc.errors import ScriptError

torch = pytest.importorskip("torch")


def _both(make):
    """make(lib) -> a function over lib; scripted with each library."""
    return scriptc.jit.script(make(scriptc)), torch.jit.script(make(torch))


def _data_constructors(lib):
    def build(flag: bool, value: float, n: int):
        return (lib.BoolTensor([flag]), lib.LongTensor([n, 2 * n]), lib.ByteTensor([n]), lib.CharTensor([-n]),
                lib.DoubleTensor([value]), lib.FloatTensor([[value, 1.5]]), lib.IntTensor([n]),
                lib.ShortTensor([n]), lib.HalfTensor([value]))

    return build


def _sized_constructors(lib):
    def build(n: int):
        return lib.LongTensor(n, 3).shape, lib.FloatTensor(2), lib.DoubleTensor(), lib.IntTensor(n, device="cpu")

    return build


def test_legacy_constructors_from_data_give_torch_values_and_dtypes():
    ours, theirs = _both(_data_constructors)
    for args in ((True, 2.5, 3), (False, -1.25, 0)):
        for a, b in zip(ours(*args), theirs(*args), strict=True):
            assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
            assert a.tolist() == b.tolist()


def test_legacy_constructors_from_sizes_are_uninitialized_tensors_of_that_shape():
    ours, theirs = _both(_sized_constructors)
    (shape, two, empty, sized), (t_shape, t_two, t_empty, t_sized) = ours(4), theirs(4)
    assert list(shape) == list(t_shape) == [4, 3]
    assert two.dtype is scriptc.float32 and tuple(two.shape) == tuple(t_two.shape) == (2,)
    assert empty.dtype is scriptc.float64 and empty.shape == (0,) and tuple(t_empty.shape) == (0,)
    assert sized.dtype is scriptc.int32 and tuple(sized.shape) == tuple(t_sized.shape) == (4,)


def _unknown_keyword(lib):
    def bad():
        return lib.LongTensor(hello=1)

    return bad


def _mixed_positionals(lib):
    def bad():
        return lib.LongTensor(1, [2])

    return bad


@pytest.mark.parametrize("make, words", [
    (_unknown_keyword, "Got kwarg hello"),
    (_mixed_positionals, "multiple positional arguments that were not all integers"),
])
def test_legacy_constructor_misuse_fails_to_compile_as_in_torch(make, words):
    for lib, error in ((scriptc, ScriptError), (torch, RuntimeError)):
        with pytest.raises(error, match=words):
            lib.jit.script(make(lib))


def _device_values(lib):
    def build(kind: str, n: int):
        where = lib.device(kind)
        x = lib.zeros(n, device=kind)
        y = lib.ones([n, 2], device="cpu")
        return where.type, x.device == where, x.shape, y.sum()

    return build


def test_torch_device_and_a_str_where_a_device_is_declared_script_as_in_torch():
    ours, theirs = _both(_device_values)
    kind, same, shape, total = ours("cpu", 3)
    t_kind, t_same, t_shape, t_total = theirs("cpu", 3)
    assert (kind, same, list(shape), total.item()) == (t_kind, t_same, list(t_shape), t_total.item())


def _new_tensors(lib):
    def build(x):
        return (x.new_zeros([2], dtype=lib.int64), x.new_ones([1, 2]), x.new_full([2, 1], 3),
                x.new_full([2], 2.5, dtype=lib.float64), x.new_empty([3]).shape)

    return build


def test_new_tensor_methods_take_self_dtype_unless_given():
    ours, theirs = _both(_new_tensors)
    got = ours(scriptc.tensor([1.0, 2.0]))
    expected = theirs(torch.tensor([1.0, 2.0]))
    for g, e in zip(got[:4], expected[:4]):
        assert str(g.dtype).split(".")[-1] == str(e.dtype).split(".")[-1]
        assert g.tolist() == e.tolist()
    assert list(got[4]) == list(expected[4])



def _dense_factories(lib):
    # torchvision's poolers: torch.full_like(b[:, :1], i, dtype=dtype, layout=torch.strided, device=device)
    def build(x: lib.Tensor):
        a = lib.full_like(x, 3, dtype=lib.float64, layout=lib.strided, device=x.device)
        b = lib.zeros(2, layout=x.layout, pin_memory=False)
        return a, b, x.layout == lib.strided
    return build


def test_factories_take_the_dense_layout_and_pin_memory_as_torch_scripts_them():
    ours, theirs = _both(_dense_factories)
    (a, b, dense), (ta, tb, tdense) = ours(scriptc.ones(2)), theirs(torch.ones(2))
    assert a.tolist() == ta.tolist() and a.dtype == scriptc.float64 and b.tolist() == tb.tolist()
    assert dense is tdense is True


def _sparse_zeros(x: scriptc.Tensor):
    return scriptc.zeros(2, layout=scriptc.sparse_coo)


def test_a_sparse_layout_in_scripted_code_is_refused():
    with pytest.raises(ScriptError, match="layout=torch.strided"):
        scriptc.jit.script(_sparse_zeros)


def _sizes_from_tensors(lib):
    def build(masks, im_h, im_w):
        # torchvision's mask pasting, scripted while traced: the sizes arrive as 0-d tensors
        pasted = lib.zeros(0, im_h, im_w)
        return lib.cat((pasted, masks.new_ones(masks.size(0), im_h, im_w))), lib.ones(im_h, 2).shape

    return build


def test_tensors_among_the_varargs_sizes_of_a_factory_are_read_as_ints():
    ours, theirs = _both(_sizes_from_tensors)
    got = ours(scriptc.zeros(3, 1, 1), scriptc.tensor(4), scriptc.tensor(5))
    want = theirs(torch.zeros(3, 1, 1), torch.tensor(4), torch.tensor(5))
    assert got[0].shape == want[0].shape and got[1] == want[1]
    assert got[0].numpy().tolist() == want[0].numpy().tolist()


def _scalar_tensors(lib):
    def build(x, n: int):
        # torchvision's keypoint decoding, scripted while traced: torch.scalar_tensor(maps.size(1), dtype=torch.int64)
        return lib.scalar_tensor(x.size(1), dtype=lib.int64), lib.scalar_tensor(n), lib.scalar_tensor(2.5, dtype=lib.float64)

    return build


def test_scalar_tensor_scripts_as_torchs_with_the_default_dtype_unless_given():
    ours, theirs = _both(_scalar_tensors)
    for got, want in zip(ours(scriptc.zeros(2, 3), 4), theirs(torch.zeros(2, 3), 4)):
        assert str(got.dtype) == str(want.dtype) and got.item() == want.item() and got.dim() == 0


SIZE_FROM_ONE_TENSOR = [
    "torch.zeros(t)", "torch.ones(t, dtype=torch.float64)", "torch.empty(t).shape", "torch.rand(t).shape",
    "torch.zeros(x.sum().long())", "torch.ones(x.size(0))", "x.new_zeros(t)", "x.view(t * 2)", "x.repeat(t)",
    # an overload that takes the tensor as it is still wins over reading it as a size
    "x.pow(t)", "torch.max(x, t)", "x.add(t)",
]


def _compiled(lib, source: str):
    """`source` compiled by `lib`, its `torch` being `lib`."""
    torch = lib  # noqa: F841  (the compilation unit resolves names in this frame)
    return lib.jit.CompilationUnit(source)


@pytest.mark.parametrize("expression", SIZE_FROM_ONE_TENSOR)
def test_one_int_tensor_where_a_size_list_is_declared_is_read_as_its_int(expression):
    source = f"def f(x, t):\n    return {expression}\n"
    results = []
    for lib in (scriptc, torch):
        result = _compiled(lib, source).f(lib.ones(6), lib.tensor(3))
        results.append(result if isinstance(result, list) else (result.numpy(), str(result.dtype)))
    ours, theirs = results
    if isinstance(ours, list):
        assert ours == theirs
    else:
        np.testing.assert_array_equal(ours[0], theirs[0])
        assert ours[1] == theirs[1]


def test_a_tensor_for_a_fixed_size_list_is_refused_as_torch_refuses_it():
    source = "def f(x, t):\n    return x.sum(t)\n"
    with pytest.raises(RuntimeError, match="Arguments for call are not valid"):
        _compiled(torch, source)
    with pytest.raises(ScriptError, match="Arguments for call are not valid"):
        _compiled(scriptc, source)
