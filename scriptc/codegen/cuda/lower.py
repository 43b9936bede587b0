"""Lower a KernelSpec (the one the LLVM backend lowers) to CUDA C source.

Same ABI as the CPU kernels: kernel(start, end, ptrs, meta). Pointwise kernels use a grid-stride
loop over elements (flat) or over rows x inner elements with the same strides in `meta`;
last-dim reductions run one block per row with a shared-memory/warp-shuffle tree reduction.
Compiled by NVRTC through cupy.RawModule on a GPU; tests compile every source with
`nvcc -arch=sm_90 -ptx` where no GPU exists.
"""

from __future__ import annotations

import math

from scriptc.ops import expr as E

from scriptc.ops import NORMALIZE, REDUCE

from ..kernel import KernelSpec, Unsupported

CTYPES = {"float32": "float", "float64": "double", "int64": "long long", "int32": "int", "bool": "bool"}
BLOCK = 256


def ctype(dtype: str) -> str:
    try:
        return CTYPES[dtype]
    except KeyError:
        raise Unsupported(f"dtype {dtype} on CUDA") from None


class _Emitter:
    """Expression trees to C statements, one temporary per shared node."""

    def __init__(self, spec: KernelSpec, load):
        self.spec = spec
        self.load = load
        self.lines: list[str] = []
        self.names: dict[int, tuple[str, str]] = {}
        self.counter = 0

    def temp(self, text: str, dtype: str) -> tuple[str, str]:
        self.counter += 1
        name = f"t{self.counter}"
        self.lines.append(f"{ctype(dtype)} {name} = {text};")
        return name, dtype

    def const(self, v, like: str | None) -> tuple[str, str]:
        if isinstance(v, bool):
            return ("true" if v else "false"), "bool"
        dtype = like if like in ("float32", "float64") else ("float64" if isinstance(v, float) else "int64")
        if dtype.startswith("float"):
            if math.isinf(v):
                text = ("-" if v < 0 else "") + ("CUDART_INF_F" if dtype == "float32" else "CUDART_INF")
            elif math.isnan(v):
                text = "CUDART_NAN_F" if dtype == "float32" else "CUDART_NAN"
            else:
                text = repr(float(v)) + ("f" if dtype == "float32" else "")
            return text, dtype
        return f"{int(v)}LL", dtype

    def value(self, e, like: str | None = None) -> tuple[str, str]:
        if not isinstance(e, E.Expr):
            return self.const(e, like)
        if id(e) in self.names:
            return self.names[id(e)]
        result = self._lower(e, like)
        self.names[id(e)] = result
        return result

    def _pair(self, e, like):
        a, c = e.args
        if a.op == "const" and c.op != "const":
            rc = self.value(c, like)
            return self.value(a.value, rc[1]), rc
        ra = self.value(a, like)
        rc = self.value(c.value, ra[1]) if c.op == "const" else self.value(c, like)
        if ra[1] != rc[1]:
            wider = "float64" if "float64" in (ra[1], rc[1]) else ("float32" if "float32" in (ra[1], rc[1]) else ra[1])
            ra, rc = (f"(({ctype(wider)}){ra[0]})", wider), (f"(({ctype(wider)}){rc[0]})", wider)
        return ra, rc

    def _lower(self, e: E.Expr, like):
        op = e.op
        if op == "var":
            return self.load(e.value)
        if op == "const":
            return self.const(e.value, like)
        if op == "cast":
            inner = self.value(e.args[0], None if e.args[0].op == "const" else like)
            return self.temp(f"({ctype(e.value)}){inner[0]}", e.value)
        if op == "select":
            cond = self.value(e.args[0])
            a, c = self._pair(E.Expr("add", (e.args[1], e.args[2])), like)
            return self.temp(f"({cond[0]}) ? {a[0]} : {c[0]}", a[1])
        if op in E.COMPARISONS:
            a, c = self._pair(e, like)
            symbol = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}[op]
            return self.temp(f"{a[0]} {symbol} {c[0]}", "bool")
        if op in ("and", "or"):
            a, c = self.value(e.args[0]), self.value(e.args[1])
            return self.temp(f"(bool){a[0]} {'&&' if op == 'and' else '||'} (bool){c[0]}", "bool")
        if op == "not":
            return self.temp(f"!(bool){self.value(e.args[0])[0]}", "bool")
        if op in E.LIBM_BINARY:
            a, c = self._pair(e, like)
            dtype = a[1] if a[1].startswith("float") else "float64"
            return self.temp(f"{op}{'f' if dtype == 'float32' else ''}(({ctype(dtype)}){a[0]}, ({ctype(dtype)}){c[0]})",
                             dtype)
        if op in E.BINARY:
            a, c = self._pair(e, like)
            dtype = a[1]
            floating = dtype.startswith("float")
            if op in ("max", "min"):
                if floating:  # NaN-propagating, like numpy.maximum
                    cmp = ">" if op == "max" else "<"
                    return self.temp(f"({a[0]} != {a[0]} || {a[0]} {cmp} {c[0]}) ? {a[0]} : {c[0]}", dtype)
                return self.temp(f"{'max' if op == 'max' else 'min'}({a[0]}, {c[0]})", dtype)
            if op == "pow":
                if not floating:
                    raise Unsupported("integer pow")
                return self.temp(f"{'powf' if dtype == 'float32' else 'pow'}({a[0]}, {c[0]})", dtype)
            if op == "div" and not floating:
                raise Unsupported("integer div")
            symbol = {"add": "+", "sub": "-", "mul": "*", "div": "/"}[op]
            return self.temp(f"{a[0]} {symbol} {c[0]}", dtype)
        x = self.value(e.args[0], like)
        dtype = x[1]
        if op == "neg":
            return self.temp(f"-{x[0]}", dtype)
        if op == "abs":
            return self.temp(f"{'fabsf' if dtype == 'float32' else 'fabs' if dtype == 'float64' else 'llabs'}({x[0]})",
                             dtype)
        if not dtype.startswith("float"):
            if op in ("floor", "ceil", "trunc", "rint"):
                return x
            x, dtype = (f"(float){x[0]}", "float32"), "float32"
        name = {"exp": "exp", "log": "log", "sqrt": "sqrt", "tanh": "tanh", "erf": "erf", "floor": "floor",
                "ceil": "ceil", "sin": "sin", "cos": "cos", **{f: f for f in E.LIBM_UNARY}}.get(op)
        if name is None:
            raise Unsupported(f"scalar op {op} on CUDA")
        return self.temp(f"{name}{'f' if dtype == 'float32' else ''}({x[0]})", dtype)


def _offsets(spec: KernelSpec, row: str, skip: int | None = None) -> list[str]:
    """C statements computing each tensor input's element offset for `row` (from meta's strides).
    Rows number the outer dims, all but the last and but `skip` (the dim a column reduction spans)."""
    rank = spec.rank
    outer = [d for d in range(rank - 1) if d != skip]
    lines = [f"long long rem = {row};"]
    for d in reversed(outer):
        lines.append(f"long long i{d} = rem % meta[{d}]; rem /= meta[{d}];")
    for k, slot in _stride_slots(spec).items():
        terms = [f"i{d} * meta[{slot + d}]" for d in outer] or ["0"]
        lines.append(f"long long off{k} = {' + '.join(terms)};")
    return lines


def _stride_slots(spec: KernelSpec) -> dict[int, int]:
    """Per tensor input: where its strides start in meta (after the iteration shape)."""
    slots, slot = {}, spec.rank
    for k, inp in enumerate(spec.inputs):
        if inp.kind == "tensor":
            slots[k] = slot
            slot += spec.rank
    return slots


def _inner_stride(spec: KernelSpec, k: int) -> int:
    inp = spec.inputs[k]
    return 0 if inp.rank == 0 or (inp.rank - 1) in inp.broadcast else 1


def _loader(spec: KernelSpec, index: str, flat: bool, offset: str = "off"):
    def load(k):
        inp = spec.inputs[k]
        t = ctype(inp.dtype)
        if inp.kind == "scalar":
            return f"(*({t}*)ptrs[{k}])", inp.dtype
        if flat:
            return f"(({t}*)ptrs[{k}])[{index}]", inp.dtype
        at = f"{offset}{k}" if _inner_stride(spec, k) == 0 else f"{offset}{k} + j"
        return f"(({t}*)ptrs[{k}])[{at}]", inp.dtype
    return load


def cuda_source(spec: KernelSpec) -> str:
    """The CUDA C translation unit of one kernel (extern "C", named spec.name)."""
    header = ["#include <math_constants.h>", f'extern "C" __global__ void {spec.name}(long long start, long long end, '
              "void** ptrs, const long long* meta) {"]
    n_in = len(spec.inputs)
    if spec.tail is not None:
        return "\n".join(header + _reduction(spec, n_in) + ["}"]) + "\n"
    body: list[str] = []
    step = "(long long)blockDim.x * gridDim.x"
    if spec.flat:
        body.append(f"for (long long i = start + (long long)blockIdx.x * blockDim.x + threadIdx.x; i < end; i += {step}) {{")
        emitter = _Emitter(spec, _loader(spec, "i", True))
        index = "i"
    else:
        inner = f"meta[{spec.rank - 1}]"
        body.append(f"long long inner = {inner};")
        body.append(f"for (long long e = start * inner + (long long)blockIdx.x * blockDim.x + threadIdx.x; "
                    f"e < end * inner; e += {step}) {{")
        body.append("long long row = e / inner, j = e % inner;")
        body.extend(_offsets(spec, "row"))
        emitter = _Emitter(spec, _loader(spec, "e", False))
        index = "e"
    stores = []
    for out_index, k in enumerate(spec.outputs):
        value, vtype = emitter.value(spec.exprs[k][0])
        dtype = spec.exprs[k][1]
        stores.append(f"(({ctype(dtype)}*)ptrs[{n_in + out_index}])[{index}] = ({ctype(dtype)}){value};")
    body.extend(emitter.lines + stores + ["}"])
    return "\n".join(header + body + ["}"]) + "\n"


def _column_reduction(spec: KernelSpec, n_in: int, t: str, combine: str, identity: str) -> list[str]:
    """A reduction over a dim d other than the last: one thread per output element, looping along d
    (neighbouring threads read neighbouring elements, so the loads coalesce)."""
    value_index, dim = spec.tail.value, spec.tail.dim
    rank = spec.rank
    slots = _stride_slots(spec)
    step = "(long long)blockDim.x * gridDim.x"
    lines = [f"long long inner = meta[{rank - 1}];",
             f"for (long long e = start * inner + (long long)blockIdx.x * blockDim.x + threadIdx.x; "
             f"e < end * inner; e += {step}) {{",
             "long long row = e / inner, j = e % inner;"]
    lines += _offsets(spec, "row", skip=dim)
    lines += [f"{t} acc = {identity};", f"for (long long r = 0; r < meta[{dim}]; ++r) {{"]
    lines += [f"long long at{k} = off{k} + r * meta[{slot + dim}];" for k, slot in slots.items()]
    emitter = _Emitter(spec, _loader(spec, "j", False, offset="at"))
    value, _ = emitter.value(spec.exprs[value_index][0])
    lines += emitter.lines + [f"{t} v = ({t}){value};", f"acc = {combine.format(a='acc', b='v')};", "}"]
    result = f"acc / ({t})meta[{dim}]" if spec.tail.role.mean else "acc"
    lines += [f"(({t}*)ptrs[{n_in}])[e] = {result};", "}"]
    return lines


def _reduction(spec: KernelSpec, n_in: int) -> list[str]:
    tail = spec.tail
    value_index = tail.value
    dtype = spec.exprs[value_index][1]
    if not dtype.startswith("float"):
        raise Unsupported("integer reductions on CUDA")
    t = ctype(dtype)
    suffix = "f" if dtype == "float32" else ""
    add = "{a} + {b}"
    fmax = f"fmax{suffix}({{a}}, {{b}})"
    # amax/amin propagate NaN, as numpy and PyTorch do (fmax/fmin return the other operand).
    nan_max = "(({a}) != ({a}) || ({a}) > ({b})) ? ({a}) : ({b})"
    nan_min = "(({a}) != ({a}) || ({a}) < ({b})) ? ({a}) : ({b})"
    combines = {"add": (add, "0"), "mul": ("{a} * {b}", "1"),
                "max": (nan_max, "-CUDART_INF" + ("_F" if suffix else "")),
                "min": (nan_min, "CUDART_INF" + ("_F" if suffix else ""))}
    if tail.form == REDUCE and tail.dim != spec.rank - 1:
        return _column_reduction(spec, n_in, t, *combines[tail.role.combine])
    if tail.form == NORMALIZE and tail.dim != spec.rank - 1:
        raise Unsupported("softmax over a dim other than the last (this backend)")
    rank = max(spec.rank, 1)
    lines = [f"__shared__ {t} partial[{BLOCK // 32}];",
             "for (long long row = start + blockIdx.x; row < end; row += gridDim.x) {",
             f"long long inner = meta[{rank - 1}];"]
    lines += _offsets(spec, "row") if spec.rank else []

    def element() -> list[str]:
        emitter = _Emitter(spec, _loader(spec, "j", False))
        value, _ = emitter.value(spec.exprs[value_index][0])
        return emitter.lines + [f"{t} v = ({t}){value};"]

    def block_reduce(acc: str, combine: str) -> list[str]:
        # warp shuffle tree, then one value per warp through shared memory
        out = [f"for (int s = 16; s > 0; s >>= 1) {{ {t} o = __shfl_down_sync(0xffffffff, {acc}, s); "
               f"{acc} = {combine.format(a=acc, b='o')}; }}",
               f"if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = {acc};", "__syncthreads();",
               f"if (threadIdx.x < 32) {{ {acc} = threadIdx.x < (blockDim.x >> 5) ? partial[threadIdx.x] : "
               f"{acc}_identity;",
               f"for (int s = 16; s > 0; s >>= 1) {{ {t} o = __shfl_down_sync(0xffffffff, {acc}, s); "
               f"{acc} = {combine.format(a=acc, b='o')}; }}",
               f"if (threadIdx.x == 0) partial[0] = {acc}; }}", "__syncthreads();",
               f"{acc} = partial[0];", "__syncthreads();"]
        return out

    out_ptr = f"(({t}*)ptrs[{n_in}])"
    row_loop = "for (long long j = threadIdx.x; j < inner; j += blockDim.x) {"
    if tail.form == REDUCE:
        combine, identity = combines[tail.role.combine]
        lines += [f"const {t} acc_identity = {identity};", f"{t} acc = acc_identity;", row_loop] + element() + [
            f"acc = {combine.format(a='acc', b='v')};", "}"] + block_reduce("acc", combine)
        result = "acc / inner" if tail.role.mean else "acc"
        lines += [f"if (threadIdx.x == 0) {out_ptr}[row] = {result};", "}"]
        return lines
    lines += [row_loop] + element() + [f"{out_ptr}[row * inner + j] = v;", "}", "__syncthreads();"]
    stored = f"{out_ptr}[row * inner + j]"
    if tail.form == NORMALIZE:
        lines += [f"const {t} peak_identity = -CUDART_INF{'_F' if suffix else ''};", f"{t} peak = peak_identity;",
                  row_loop, f"peak = fmax{suffix}(peak, {stored});", "}"] + block_reduce("peak", fmax)
        lines += [f"const {t} total_identity = 0;", f"{t} total = 0;", row_loop,
                  f"{t} ex = exp{suffix}({stored} - peak);"]
        lines += ([f"{stored} = ex;"] if not tail.role.log else []) + ["total += ex;", "}"] + block_reduce("total", add)
        if not tail.role.log:
            lines += [row_loop, f"{stored} = {stored} / total;", "}"]
        else:
            lines += [row_loop, f"{stored} = {stored} - peak - log{suffix}(total);", "}"]
    else:  # layer_norm over the last dim
        eps, w_index, b_index = tail.eps, tail.weight, tail.bias
        lines += [f"const {t} total_identity = 0;", f"{t} total = 0;", row_loop, f"total += {stored};", "}"]
        lines += block_reduce("total", add) + [f"{t} mean = total / inner;"]
        lines += [f"const {t} sq_identity = 0;", f"{t} sq = 0;", row_loop, f"{t} d = {stored} - mean; sq += d * d;",
                  "}"] + block_reduce("sq", add)
        lines += [f"{t} rstd = rsqrt{suffix}(sq / inner + ({t}){eps!r});", row_loop,
                  f"{t} y = ({stored} - mean) * rstd;"]
        if w_index is not None:
            lines.append(f"y = y * (({t}*)ptrs[{w_index}])[j];")
        if b_index is not None:
            lines.append(f"y = y + (({t}*)ptrs[{b_index}])[j];")
        lines += [f"{stored} = y;", "}"]
    lines += ["__syncthreads();", "}"]
    return lines
