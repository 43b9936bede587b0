"""A tensor in scripted str(), str.format(), f-strings and print() is written as real
torch.jit.script writes it (ATen's C++ printer), for every layout of the printer."""

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")


def _as_text(x):
    return str(x) + "|" + "{} and {}".format(x, 3) + "|" + f"v={x}" + "|" + str([x])


# (values, dtype name): each picks another of ATen's number formats or layouts
CASES = [
    ([1.5, -2.25e-3], "float32"), ([[1e10, 2.0], [3.0, 4.0]], "float32"), ([1e-5, 1.0], "float32"),
    ([123456.5, 1.0], "float32"), ([float("nan"), 1.0, float("inf")], "float32"), ([0.001, 0.0005], "float32"),
    ([[1e-3, 2e-4]], "float32"), ([-1.5, 2e6], "float32"), ([1e100, 1.0], "float64"), ([1234567890123], "int64"),
    ([0, 1, 2], "int8"), ([0, 1, 2], "uint8"), ([1.0, 2.0], "float16"), ([True, False], "bool"),
    ([-float("inf"), float("nan")], "float32"), (5, "int64"), (-0.1, "float32"), (True, "bool"), ([], "float64"),
    # the widest negative value sets the column width and the number format as a positive one would
    ([-5.0, -100.0], "float32"), ([5.5, -100.5], "float32"), ([0.5, -20000.5, 3.0], "float32"), ([[-5, -100]], "int64"),
]


def _pair(values, dtype):
    return torch.tensor(values, dtype=getattr(torch, dtype)), scriptc.tensor(values, dtype=getattr(scriptc, dtype))


@pytest.mark.parametrize("values, dtype", CASES)
def test_a_tensor_is_written_as_torch_script_writes_it(values, dtype):
    theirs, ours = _pair(values, dtype)
    assert scriptc.jit.script(_as_text)(ours) == torch.jit.script(_as_text)(theirs)


@pytest.mark.parametrize("shape", [(2, 3, 4), (2, 2, 3, 3), (3, 30), (2, 0), (1, 2, 11)])
def test_matrices_blocks_and_column_groups_are_written_as_torch_script_writes_them(shape):
    values = (np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) * 1000.5 / 7).tolist()
    theirs, ours = _pair(values, "float32")
    assert scriptc.jit.script(_as_text)(ours) == torch.jit.script(_as_text)(theirs)


def test_scripted_print_writes_a_tensor_as_torch_script_does(capfd):
    def show(x):
        print(x, [x])

    torch.jit.script(show)(torch.tensor([[0.5, 2.0]]))
    expected = capfd.readouterr().out
    scriptc.jit.script(show)(scriptc.tensor([[0.5, 2.0]]))
    assert capfd.readouterr().out == expected
