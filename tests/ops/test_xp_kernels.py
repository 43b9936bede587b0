"""Walks the op table's kernels and gradients as source: every op has a kernel that a cupy array module
can run (DESIGN.md, "The op table": kernels are written against `xp`, numpy or cupy).

Without a GPU nothing can run on cupy, so this checks what can be checked from the code: each kernel
takes the array module first; every function it reaches through `xp` (or a gradient's `ctx.xp`)
exists in cupy; and no kernel reaches past `xp` to numpy itself for anything but a scalar type.
The names are checked against the installed cupy, or, where cupy is absent (CI), against
`cupy_names.txt`, the namespace of cupy 14.2 (a test checks the file against an installed cupy).
"""

from __future__ import annotations

import ast
import inspect
import pathlib
import types

import numpy as np
import pytest

from scriptc import ops

MANIFEST = pathlib.Path(__file__).with_name("cupy_names.txt")
CUPY_MODULES = ("", "linalg", "random", "fft", "lib.stride_tricks")

try:
    import cupy
except ImportError:  # the cuda extra is not installed: the manifest stands in for it
    cupy = None


def cupy_namespace(module) -> set[str]:
    """Every public dotted name of cupy's array-module surface: `exp`, `random.default_rng`, ..."""
    names = set()
    for sub in CUPY_MODULES:
        obj = module
        for part in filter(None, sub.split(".")):
            obj = getattr(obj, part)
        prefix = sub + "." if sub else ""
        for name in dir(obj):
            if name.startswith("_"):
                continue
            names.add(prefix + name)
            value = getattr(obj, name)
            if type(value).__name__ == "ufunc":  # xp.add.reduce, xp.add.at, xp.multiply.outer
                names.update(f"{prefix}{name}.{m}" for m in dir(value) if not m.startswith("_"))
    return names


def manifest_names() -> set[str]:
    return {line for line in MANIFEST.read_text().splitlines() if line and not line.startswith("#")}


def known_cupy_names() -> set[str]:
    return cupy_namespace(cupy) if cupy is not None else manifest_names()


def _is_ops_function(obj) -> bool:
    return isinstance(obj, types.FunctionType) and obj.__module__.startswith("scriptc.ops")


class _Reader:
    """The array-module names one function uses, and where it uses numpy directly."""

    def __init__(self, fn, array_params: set[str]):
        self.array_names = set(array_params)
        self.context_names = {"ctx"} & set(fn.__code__.co_varnames[:fn.__code__.co_argcount])
        closure = dict(zip(fn.__code__.co_freevars, [c.cell_contents for c in fn.__closure__ or ()]))
        self.values = {**fn.__globals__, **closure}
        self.local_names = set(fn.__code__.co_varnames)
        self.xp_names: set[str] = set()
        self.numpy_uses: set[str] = set()
        self.optional: set[str] = set()
        self.helpers: list = []

    def _is_array_module(self, node) -> bool:
        if isinstance(node, ast.Name):
            return node.id in self.array_names
        return (isinstance(node, ast.Attribute) and node.attr == "xp" and isinstance(node.value, ast.Name)
                and node.value.id in self.context_names)

    def _is_global_numpy(self, node) -> bool:
        return (isinstance(node, ast.Name) and node.id not in self.local_names and node.id not in self.array_names
                and self.values.get(node.id) is np)

    def read(self, tree) -> None:
        for node in ast.walk(tree):  # aliases first: `np = ctx.xp` makes `np` the array module
            if isinstance(node, ast.Assign) and self._is_array_module(node.value):
                self.array_names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and not isinstance(node.parent, ast.Attribute):
                chain, root = [], node  # the outermost attribute of a chain: `xp.lib.stride_tricks.as_strided`
                while isinstance(root, ast.Attribute) and not self._is_array_module(root):
                    chain.append(root.attr)
                    root = root.value
                name = ".".join(reversed(chain))
                if name and self._is_array_module(root):
                    self.xp_names.add(name)
                elif name and self._is_global_numpy(root):
                    self.numpy_uses.add(name)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                if node.func.id in ("getattr", "hasattr") and node.args and self._is_array_module(node.args[0]):
                    name = node.args[1]
                    name = name.value if isinstance(name, ast.Constant) else self.values[name.id]
                    # What a kernel asks hasattr about, it can do without (xp.errstate: numpy only).
                    (self.xp_names if node.func.id == "getattr" else self.optional).add(name)
                callee = self.values.get(node.func.id)
                if _is_ops_function(callee) and node.func.id not in self.local_names:
                    self.helpers.append(callee)


def _set_parents(tree) -> None:
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            child.parent = node


_trees: dict[str, ast.Module] = {}


def _function_node(fn):
    """The Lambda or FunctionDef node of `fn` in its module's source."""
    path = fn.__code__.co_filename
    if path not in _trees:
        _trees[path] = ast.parse(pathlib.Path(path).read_text())
        _set_parents(_trees[path])
    params = list(fn.__code__.co_varnames[:fn.__code__.co_argcount + fn.__code__.co_kwonlyargcount])
    found = [node for node in ast.walk(_trees[path])
             if isinstance(node, (ast.Lambda, ast.FunctionDef)) and node.lineno == fn.__code__.co_firstlineno
             and [a.arg for a in node.args.args + node.args.kwonlyargs] == params]
    assert found, f"no source found for {fn.__qualname__} at {path}:{fn.__code__.co_firstlineno}"
    return found


def walk(fn, array_params: set[str]):
    """(xp names, direct numpy uses) of `fn` and of the scriptc.ops helpers it calls, transitively."""
    xp_names, numpy_uses, seen = set(), set(), set()
    work = [(fn, array_params)]
    while work:
        f, params = work.pop()
        if f.__code__ in seen:
            continue
        seen.add(f.__code__)
        for node in _function_node(f):
            reader = _Reader(f, params)
            reader.read(node)
            xp_names |= reader.xp_names - reader.optional
            numpy_uses |= {f"{f.__module__}.{f.__qualname__}: np.{u}" for u in reader.numpy_uses}
            for helper in reader.helpers:
                code = helper.__code__
                work.append((helper, {"xp"} & set(code.co_varnames[:code.co_argcount])))
    return xp_names, numpy_uses


def _scalar_type(name: str) -> bool:
    """np.float64, np.integer, np.dtype: names a kernel may take from numpy itself (types, not functions)."""
    value = getattr(np, name, None)
    return value is np.dtype or (isinstance(value, type) and issubclass(value, np.generic))


KERNELS = [op for op in ops.all_ops() if op.inplace_of is None]


def test_every_kernel_takes_the_array_module_first():
    wrong = [op.name for op in KERNELS if inspect.signature(op.kernel).parameters and
             next(iter(inspect.signature(op.kernel).parameters)) != "xp"]
    assert not wrong


@pytest.mark.parametrize("op", KERNELS, ids=lambda op: op.name)
def test_kernel_and_gradient_run_on_a_cupy_array_module(op):
    names, numpy_uses = walk(op.kernel, {"xp"})
    if op.grad is not None:
        grad_names, grad_numpy = walk(op.grad, set())
        names |= grad_names
        numpy_uses |= grad_numpy
    missing_in_numpy = sorted(n for n in names if not _resolves(np, n))
    assert not missing_in_numpy, f"{op.name} uses xp names numpy lacks: {missing_in_numpy}"
    missing = sorted(names - known_cupy_names())
    assert not missing, f"{op.name}'s kernel or gradient uses xp names cupy lacks: {missing}"
    direct = sorted(u for u in numpy_uses if not _scalar_type(u.rpartition("np.")[2].split(".")[0]))
    assert not direct, f"{op.name} calls numpy directly instead of its array module: {direct}"


def _resolves(module, dotted: str) -> bool:
    obj = module
    for part in dotted.split("."):
        if not hasattr(obj, part):
            return False
        obj = getattr(obj, part)
    return True


def test_the_walk_sees_through_aliases_closures_and_helpers():
    def kernel(xp, a, b):
        return helper(xp, a) + getattr(xp, name)(b)
    name = "hypot"
    names, uses = walk(kernel, {"xp"})
    assert names == {"exp", "hypot", "lib.stride_tricks.as_strided"} and uses == {
        "scriptc.ops.test_helper.helper: np.where"}

    def grad(ctx, g):
        alias = ctx.xp
        return alias.sinc(g), ctx.xp.i0(g), np.float32(1)
    names, uses = walk(grad, set())
    assert names == {"sinc", "i0"} and uses == {f"{__name__}.{grad.__qualname__}: np.float32"}
    assert _scalar_type("float32") and _scalar_type("integer") and not _scalar_type("where")

    def guarded(xp, a):
        return xp.errstate() if hasattr(xp, "errstate") else a
    assert walk(guarded, {"xp"})[0] == set()


def helper(xp, a):
    return xp.exp(xp.lib.stride_tricks.as_strided(a)) + np.where(a > 0, a, 0)


helper.__module__ = "scriptc.ops.test_helper"  # the walk follows helpers defined in scriptc.ops


def _used_names() -> set[str]:
    return set().union(*[walk(op.kernel, {"xp"})[0] | (walk(op.grad, set())[0] if op.grad else set())
                         for op in KERNELS])


@pytest.mark.skipif(cupy is None, reason="cupy (the cuda extra) is not installed")
def test_manifest_agrees_with_the_installed_cupy():
    used = _used_names()
    assert used & cupy_namespace(cupy) == used & manifest_names(), \
        "cupy_names.txt disagrees with this cupy: regenerate it (python tests/ops/test_xp_kernels.py)"



class _OtherArray(np.ndarray):
    """An array class that is not numpy's, as cupy.ndarray is not."""


class _OtherModule:
    """numpy with another array class, as cupy is an array module with its own."""
    ndarray = _OtherArray

    def __getattr__(self, name):
        return getattr(np, name)


def test_dispatch_promotes_and_reports_errors_for_another_array_module():
    from scriptc.errors import ShapeError
    from scriptc.ops.execute import run_kernel

    xp = _OtherModule()
    ints = np.arange(3, dtype=np.int64).view(_OtherArray)
    floats = np.ones(3, dtype=np.float32).view(_OtherArray)
    # PyTorch's promotion (int64 + float32 -> float32), not numpy's (-> float64), on any array module.
    assert run_kernel(ops.OPS["add"], xp, [ints, floats, 1]).dtype == np.float32
    assert run_kernel(ops.OPS["div"], xp, [ints, ints, None]).dtype == np.float32
    with pytest.raises(ShapeError, match=r"size of tensor a \(3\) must match the size of tensor b \(2\)"):
        run_kernel(ops.OPS["add"], xp, [floats, np.ones(2, np.float32).view(_OtherArray), 1])


if __name__ == "__main__":
    print(f"# cupy {cupy.__version__}'s names in {', '.join(m or 'cupy' for m in CUPY_MODULES)}; "
          "written by python tests/ops/test_xp_kernels.py")
    print("\n".join(sorted(cupy_namespace(cupy))))
