"""Lower a KernelSpec to one LLVM function with llvmlite.ir.

ABI: void kernel(i64 start, i64 end, i8** ptrs, i64* meta). ptrs holds the data pointers of the
inputs (scalars: a pointer to one value; null for an input only a BLAS head reads), then of the
outputs. A flat kernel loops i over [start, end) elements. Otherwise the iteration space is
rows x inner (inner = last dim): the kernel loops rows [start, end), meta = [shape..., then per
tensor input its strides in elements], and the inner loop reads each input at stride 0 (broadcast
last dim) or 1, so LLVM vectorizes it. A reduction over another dim numbers its rows without that
dim and steps along it with the strides in meta. Every tensor input is C-contiguous in its own
(broadcast) shape; the executor guarantees it.
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir

from scriptc.ops import LAYER_NORM, NORMALIZE, REDUCE
from scriptc.ops import expr as E

from ..kernel import KernelSpec, Unsupported
from . import mathlib
from .loop import loop

I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
F16, F32, F64 = ir.HalfType(), ir.FloatType(), ir.DoubleType()
TYPES = {"float32": F32, "float64": F64, "int64": I64, "int32": I32, "bool": I1}
STORAGE = {"bool": I8}
# Elementwise float arithmetic may fuse a*b+c into one FMA (rounded once where numpy rounds twice);
# nothing else is relaxed, so inf/nan/-0.0 behave as in numpy.
CONTRACT = mathlib.CONTRACT


def llvm_type(dtype: str):
    try:
        return TYPES[dtype]
    except KeyError:
        raise Unsupported(f"dtype {dtype}") from None


def binary_intrinsic(b: ir.IRBuilder, name: str, a, c, fastmath=()):
    fn = b.module.declare_intrinsic(name, [a.type], ir.FunctionType(a.type, [a.type, a.type]))
    return b.call(fn, [a, c], fastmath=fastmath)


def _is_float(t) -> bool:
    return isinstance(t, (ir.FloatType, ir.DoubleType))


class _ExprLowering:
    """Lowers expression trees for one element; shared subtrees are computed once."""

    def __init__(self, b: ir.IRBuilder, load_input):
        self.b = b
        self.load_input = load_input
        self.memo: dict[int, ir.Value] = {}

    def value(self, e, like=None):
        if not isinstance(e, E.Expr):
            return self.constant(e, like)
        key = id(e)
        if key not in self.memo:
            self.memo[key] = self._lower(e, like)
        return self.memo[key]

    def constant(self, v, like):
        t = like if like is not None else (I1 if isinstance(v, bool) else (I64 if isinstance(v, int) else F64))
        if t == I1:
            return ir.Constant(I1, int(bool(v)))
        if _is_float(t):
            return ir.Constant(t, float(v))
        return ir.Constant(t, int(v))

    def convert(self, v, t):
        b = self.b
        if v.type == t:
            return v
        src_float, dst_float = _is_float(v.type), _is_float(t)
        if src_float and dst_float:
            return b.fpext(v, t) if t == F64 else b.fptrunc(v, t)
        if src_float:
            return b.fcmp_unordered("une", v, ir.Constant(v.type, 0.0)) if t == I1 else b.fptosi(v, t)
        if dst_float:
            return b.uitofp(v, t) if v.type == I1 else b.sitofp(v, t)
        if t == I1:
            return b.icmp_signed("!=", v, ir.Constant(v.type, 0))
        if v.type == I1:
            return b.zext(v, t)
        return b.sext(v, t) if t.width > v.type.width else b.trunc(v, t)

    def _operands(self, e, like):
        a, c = e.args
        if a.op == "const" and c.op != "const":
            rc = self.value(c, like)
            return self.value(a.value, rc.type), rc
        ra = self.value(a, like)
        rc = self.value(c.value, ra.type) if c.op == "const" else self.value(c, like)
        if ra.type != rc.type:
            wider = F64 if F64 in (ra.type, rc.type) else (F32 if F32 in (ra.type, rc.type) else ra.type)
            ra, rc = self.convert(ra, wider), self.convert(rc, wider)
        return ra, rc

    def _lower(self, e: E.Expr, like):
        b = self.b
        op = e.op
        if op == "var":
            return self.load_input(e.value)
        if op == "const":
            return self.constant(e.value, like)
        if op == "cast":
            return self.convert(self.value(e.args[0], None if e.args[0].op == "const" else like),
                                llvm_type(e.value))
        if op == "select":
            cond = self.convert(self.value(e.args[0]), I1)
            a, c = self._operands(E.Expr("add", (e.args[1], e.args[2])), like)
            return b.select(cond, a, c)
        if op in E.COMPARISONS:
            a, c = self._operands(e, like)
            symbol = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}[op]
            if _is_float(a.type):
                return b.fcmp_unordered(symbol, a, c) if op == "ne" else b.fcmp_ordered(symbol, a, c)
            return b.icmp_signed(symbol, a, c)
        if op in ("and", "or"):
            a, c = self.convert(self.value(e.args[0]), I1), self.convert(self.value(e.args[1]), I1)
            return b.and_(a, c) if op == "and" else b.or_(a, c)
        if op == "not":
            return b.not_(self.convert(self.value(e.args[0]), I1))
        if op in E.LIBM_BINARY:
            a, c = (v if _is_float(v.type) else self.convert(v, F64) for v in self._operands(e, like))
            return mathlib.libm_call(b, op, (a, c))
        if op in E.BINARY:
            a, c = self._operands(e, like)
            if _is_float(a.type):
                if op in ("max", "min"):
                    # NaN-propagating like numpy.maximum/minimum.
                    return binary_intrinsic(b, "llvm.maximum" if op == "max" else "llvm.minimum", a, c)
                if op == "pow":
                    return binary_intrinsic(b, "llvm.pow", a, c)
                return {"add": b.fadd, "sub": b.fsub, "mul": b.fmul, "div": b.fdiv}[op](a, c, flags=CONTRACT)
            if op in ("div", "pow"):
                raise Unsupported(f"integer {op}")
            if op in ("max", "min"):
                cmp = b.icmp_signed(">" if op == "max" else "<", a, c)
                return b.select(cmp, a, c)
            return {"add": b.add, "sub": b.sub, "mul": b.mul}[op](a, c)
        x = self.value(e.args[0], like)
        if op == "neg":
            return b.fsub(ir.Constant(x.type, -0.0), x) if _is_float(x.type) else b.neg(x)
        if op == "abs":
            if _is_float(x.type):
                return b.call(b.module.declare_intrinsic("llvm.fabs", [x.type]), [x])
            return b.select(b.icmp_signed("<", x, ir.Constant(x.type, 0)), b.neg(x), x)
        if not _is_float(x.type):
            if op in ("floor", "ceil", "trunc", "rint"):
                return x
            x = self.convert(x, F32)
        if op in ("exp", "log", "tanh", "erf"):
            return getattr(mathlib, op)(b, x)
        if op in E.LIBM_UNARY:
            return mathlib.libm_call(b, op, (x,))
        intrinsic = {"sqrt": "llvm.sqrt", "floor": "llvm.floor", "ceil": "llvm.ceil", "sin": "llvm.sin",
                     "cos": "llvm.cos"}.get(op)
        if intrinsic is None:
            raise Unsupported(f"scalar op {op}")
        return b.call(b.module.declare_intrinsic(intrinsic, [x.type]), [x])


# Elementwise loops are compute-bound chains of dependent FMAs (tanh's polynomials, say): one vector
# per iteration leaves the core waiting on their latency. Four independent vectors per iteration
# filled it: the GELU chain at one thread 4.9 -> 4.0 ms (LLVM chose 1 on its own).
ELEMENTWISE_INTERLEAVE = 4


def lower(spec: KernelSpec) -> ir.Module:
    module = ir.Module(name=spec.name)
    fnty = ir.FunctionType(ir.VoidType(), [I64, I64, I8.as_pointer().as_pointer(), I64.as_pointer()])
    fn = ir.Function(module, fnty, name=spec.name)
    start, end, ptrs, meta = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    n_in = len(spec.inputs)

    def data_ptr(index, dtype):
        raw = b.load(b.gep(ptrs, [ir.Constant(I64, index)]))
        return b.bitcast(raw, STORAGE.get(dtype, llvm_type(dtype)).as_pointer())

    in_ptrs = [data_ptr(i, inp.dtype) for i, inp in enumerate(spec.inputs)]
    scalars = {i: _load(b, in_ptrs[i], spec.inputs[i].dtype) for i in spec.used_inputs if spec.inputs[i].kind == "scalar"}

    if spec.tail is None:
        out_specs = [(spec.exprs[k][1], k) for k in spec.outputs]
        out_ptrs = [data_ptr(n_in + j, dtype) for j, (dtype, _) in enumerate(out_specs)]
        if spec.flat or spec.rank == 0:  # (a 0-d iteration is one element: a strided view of it reads in place)
            def element(i):
                lowering = _ExprLowering(b, lambda k: scalars[k] if k in scalars else _load(
                    b, b.gep(in_ptrs[k], [i]), spec.inputs[k].dtype))
                for ptr, (dtype, k) in zip(out_ptrs, out_specs):
                    _store(b, lowering.value(spec.exprs[k][0]), b.gep(ptr, [i]), dtype)
            loop(b, start, end, element, "i", interleave=ELEMENTWISE_INTERLEAVE)
        else:
            _rows(b, spec, meta, start, end, in_ptrs, scalars, out_ptrs, out_specs)
    else:
        _reduction(b, spec, meta, start, end, in_ptrs, scalars, data_ptr)
    b.ret_void()
    return module


def _load(b, ptr, dtype):
    v = b.load(ptr)
    return b.trunc(v, I1) if dtype == "bool" else v


def _store(b, value, ptr, dtype):
    target = llvm_type(dtype)
    if value.type != target:
        value = _ExprLowering(b, None).convert(value, target)
    if dtype == "bool":
        value = b.zext(value, I8)
    b.store(value, ptr)


def _row_offsets(b, spec: KernelSpec, meta, row, rank, skip: int | None = None):
    """Per tensor input: the element offset of this row (from the outer strides in meta). Rows
    number the outer dims, all but the last and but `skip` (the dim a column reduction spans)."""
    dims = [b.load(b.gep(meta, [ir.Constant(I64, d)])) for d in range(rank)]
    offsets = {}
    index = row
    outer_index = []
    for d in reversed(range(rank - 1)):
        if d == skip:
            continue
        outer_index.append((d, b.srem(index, dims[d])))
        index = b.sdiv(index, dims[d])
    for k, strides in _strides(b, spec, meta, rank).items():
        offset = ir.Constant(I64, 0)
        for d, idx in outer_index:
            offset = b.add(offset, b.mul(idx, strides[d]))
        offsets[k] = offset
    return dims, offsets


def _strides(b, spec: KernelSpec, meta, rank) -> dict:
    """Per tensor input: its strides (in elements) over the iteration dims, from meta."""
    strides, slot = {}, rank
    for k, inp in enumerate(spec.inputs):
        if inp.kind == "tensor":
            strides[k] = [b.load(b.gep(meta, [ir.Constant(I64, slot + d)])) for d in range(rank)]
            slot += rank
    return strides


def _inner_stride(spec: KernelSpec, k: int) -> int:
    inp = spec.inputs[k]
    # An input of lower rank is right-aligned: its last dim is the iteration's last dim.
    return 0 if inp.rank == 0 or (inp.rank - 1) in inp.broadcast else 1


def _row_loader(b, spec: KernelSpec, scalars, offsets, in_ptrs, j):
    """load_input(k) for element j of a row: scalars as they are, tensors at stride 0 or 1."""
    def load_input(k):
        if k in scalars:
            return scalars[k]
        idx = offsets[k] if _inner_stride(spec, k) == 0 else b.add(offsets[k], j)
        return _load(b, b.gep(in_ptrs[k], [idx]), spec.inputs[k].dtype)
    return load_input


def _rows(b, spec, meta, start, end, in_ptrs, scalars, out_ptrs, out_specs):
    rank = spec.rank

    def row_body(row):
        dims, offsets = _row_offsets(b, spec, meta, row, rank)
        inner = dims[rank - 1]
        row_start = b.mul(row, inner)

        def element(j):
            lowering = _ExprLowering(b, _row_loader(b, spec, scalars, offsets, in_ptrs, j))
            out_index = b.add(row_start, j)
            for ptr, (dtype, k) in zip(out_ptrs, out_specs):
                _store(b, lowering.value(spec.exprs[k][0]), b.gep(ptr, [out_index]), dtype)
        loop(b, ir.Constant(I64, 0), inner, element, "j", interleave=ELEMENTWISE_INTERLEAVE)
    loop(b, start, end, row_body, "row")


def _prefetch_next_row(b, spec: KernelSpec, meta, row, rank, in_ptrs, inner):
    """Asks for the next row's input cache lines now, so that they arrive while this row's
    compute-bound passes run from L1 (a row-at-a-time kernel otherwise stalls on memory at the
    start of every row: the hardware prefetcher stops at the end of the row it was streaming)."""
    if not spec.rank:
        return
    _, offsets = _row_offsets(b, spec, meta, b.add(row, ir.Constant(I64, 1)), rank)
    address_type = ir.PointerType(I8)
    prefetch = b.module.declare_intrinsic("llvm.prefetch", [address_type],
                                          ir.FunctionType(ir.VoidType(), [address_type, I32, I32, I32]))
    for k in spec.used_inputs:
        inp = spec.inputs[k]
        if inp.kind != "tensor" or _inner_stride(spec, k) == 0:
            continue
        per_line = 64 // np.dtype(inp.dtype).itemsize
        base = b.gep(in_ptrs[k], [offsets[k]])

        def touch(j, base=base):
            address = b.bitcast(b.gep(base, [j]), address_type)
            b.call(prefetch, [address, ir.Constant(I32, 0), ir.Constant(I32, 3),
                              ir.Constant(I32, 1)])
        loop(b, ir.Constant(I64, 0), inner, touch, "p", step=per_line)


def _combine(b, combine: str, t):
    """(identity, combine(acc, v)) of a dim reduction by the scalar op `combine`. Sums may reassociate
    (so that LLVM vectorizes them); products do not: numpy multiplies in order, and a reordered
    product can overflow to inf in one lane and underflow to 0 in another where the ordered one does
    neither."""
    if combine == "add":
        return 0.0, lambda acc, v: b.fadd(acc, v, flags=("reassoc", "nsz"))
    if combine == "mul":
        return 1.0, lambda acc, v: b.fmul(acc, v)
    name = "llvm.maximum" if combine == "max" else "llvm.minimum"  # NaN-propagating, as numpy
    return (-float("inf") if combine == "max" else float("inf")), lambda acc, v: binary_intrinsic(b, name, acc, v)


def _extreme_of_row(b, combine: str, t, inner, element_value):
    """amax/amin of a row, NaN if the row has one (as numpy). A NaN-propagating maximum chain does
    not vectorize; a maximum that may assume no NaNs does, so NaNs are tracked on the side, in an
    or-reduction that vectorizes too, and decide the result at the end."""
    best, seen_nan = b.alloca(t), b.alloca(I32)
    b.store(ir.Constant(t, -math.inf if combine == "max" else math.inf), best)
    b.store(ir.Constant(I32, 0), seen_nan)
    name = "llvm.maxnum" if combine == "max" else "llvm.minnum"

    def body(j):
        v = element_value(j)
        b.store(binary_intrinsic(b, name, b.load(best), v, fastmath=("nnan", "nsz")), best)
        b.store(b.or_(b.load(seen_nan), b.zext(b.fcmp_unordered("uno", v, v), I32)), seen_nan)
    loop(b, ir.Constant(I64, 0), inner, body, "r")
    return b.select(b.icmp_unsigned("!=", b.load(seen_nan), ir.Constant(I32, 0)), ir.Constant(t, math.nan), b.load(best))


def _column_reduction(b, spec, meta, start, end, in_ptrs, scalars, out, t):
    """A reduction over a dim d other than the last: each row (an index over the dims but d and the
    last) accumulates, for r along d, a whole last-dim run into its output row, which stays in L1;
    the inner loop is elementwise over contiguous memory, so it vectorizes without reassociating."""
    tail = spec.tail
    value_index, dim = tail.value, tail.dim
    rank = spec.rank
    identity, combine = _combine(b, tail.role.combine, t)
    strides = _strides(b, spec, meta, rank)

    def row_body(row):
        dims, offsets = _row_offsets(b, spec, meta, row, rank, skip=dim)
        inner = dims[rank - 1]
        row_out = b.gep(out, [b.mul(row, inner)])
        loop(b, ir.Constant(I64, 0), inner, lambda j: b.store(ir.Constant(t, identity), b.gep(row_out, [j])), "z")

        def step(r):
            shifted = {k: b.add(offset, b.mul(r, strides[k][dim])) for k, offset in offsets.items()}

            def element(j):
                v = _ExprLowering(b, _row_loader(b, spec, scalars, shifted, in_ptrs, j)).value(spec.exprs[value_index][0])
                slot = b.gep(row_out, [j])
                b.store(combine(b.load(slot), _ExprLowering(b, None).convert(v, t)), slot)
            loop(b, ir.Constant(I64, 0), inner, element, "j")
        loop(b, ir.Constant(I64, 0), dims[dim], step, "r")
        if tail.role.mean:
            count = b.sitofp(dims[dim], t)
            loop(b, ir.Constant(I64, 0), inner, lambda j: b.store(
                b.fdiv(b.load(b.gep(row_out, [j])), count), b.gep(row_out, [j])), "m")
    loop(b, start, end, row_body, "row")


COLUMN_CHUNK = 256  # columns a column softmax normalizes at a time: its peaks and totals stay in L1


def _column_softmax(b, spec, meta, start, end, in_ptrs, scalars, out, t):
    """softmax / log_softmax along a dim d other than the last: each row (an index over the dims but d
    and the last) takes its columns COLUMN_CHUNK at a time through the three passes of the last-dim
    form - peaks, totals of exp(x - peak), the normalized values - each pass walking d with an inner
    loop over contiguous last-dim runs (vectorized), the chunk's peaks and totals in stack arrays."""
    log, value_index, dim = spec.tail.role.log, spec.tail.value, spec.tail.dim
    rank = spec.rank
    strides = _strides(b, spec, meta, rank)
    with b.goto_block(b.function.entry_basic_block):  # (an alloca in a loop would grow the stack per pass)
        peaks = b.alloca(t, size=ir.Constant(I64, COLUMN_CHUNK))
        totals = b.alloca(t, size=ir.Constant(I64, COLUMN_CHUNK))
    zero = ir.Constant(I64, 0)

    def row_body(row):
        dims, offsets = _row_offsets(b, spec, meta, row, rank, skip=dim)
        inner = dims[rank - 1]
        # The output is contiguous over the iteration dims: this row's base and the step along d.
        step, out_strides = ir.Constant(I64, 1), [None] * rank
        for d in reversed(range(rank)):
            out_strides[d] = step
            step = b.mul(step, dims[d])
        base, index = zero, row
        for d in reversed(range(rank - 1)):
            if d == dim:
                continue
            base = b.add(base, b.mul(b.srem(index, dims[d]), out_strides[d]))
            index = b.sdiv(index, dims[d])

        def chunk(first):
            width = b.sub(inner, first)
            width = b.select(b.icmp_signed("<", width, ir.Constant(I64, COLUMN_CHUNK)), width,
                             ir.Constant(I64, COLUMN_CHUNK))

            def along(body):
                """body(r, j, value_at, out_slot) for each r along d and j of the chunk."""
                def at(r):
                    shifted = {k: b.add(offset, b.mul(r, strides[k][dim])) for k, offset in offsets.items()}
                    line = b.add(base, b.add(b.mul(r, out_strides[dim]), first))

                    def element(j):
                        v = _ExprLowering(b, _row_loader(b, spec, scalars, shifted, in_ptrs, b.add(first, j))).value(
                            spec.exprs[value_index][0])
                        body(j, _ExprLowering(b, None).convert(v, t), b.gep(out, [b.add(line, j)]))
                    loop(b, zero, width, element, "j")
                loop(b, zero, dims[dim], at, "r")

            def each(body, name):
                loop(b, zero, width, lambda j: body(j, b.gep(peaks, [j]), b.gep(totals, [j])), name)

            each(lambda j, p, s: (b.store(ir.Constant(t, -math.inf), p), b.store(ir.Constant(t, 0.0), s)), "init")
            # As the last-dim form: a NaN makes its column NaN through the totals, whatever the peak.
            along(lambda j, v, _: b.store(binary_intrinsic(b, "llvm.maxnum", b.load(b.gep(peaks, [j])), v,
                                                           fastmath=("nnan", "nsz")), b.gep(peaks, [j])))
            each(lambda j, p, s: b.store(b.select(b.fcmp_ordered("==", b.load(p), ir.Constant(t, -math.inf)),
                                                  ir.Constant(t, 0.0), b.load(p)), p), "peak")

            def exps(j, v, slot):
                e = mathlib.exp(b, b.fsub(v, b.load(b.gep(peaks, [j]))), nonpositive=True)
                if not log:
                    b.store(e, slot)
                total = b.gep(totals, [j])
                b.store(b.fadd(b.load(total), e), total)
            along(exps)
            if not log:
                each(lambda j, p, s: b.store(b.fdiv(ir.Constant(t, 1.0), b.load(s)), s), "scale")
                along(lambda j, v, slot: b.store(b.fmul(b.load(slot), b.load(b.gep(totals, [j]))), slot))
            else:
                each(lambda j, p, s: b.store(b.fadd(b.load(p), mathlib.log(b, b.load(s))), s), "shift")
                along(lambda j, v, slot: b.store(b.fsub(v, b.load(b.gep(totals, [j]))), slot))
        loop(b, zero, inner, chunk, "chunk", step=COLUMN_CHUNK)
    loop(b, start, end, row_body, "row")


def _reduction(b, spec, meta, start, end, in_ptrs, scalars, data_ptr):
    """softmax / log_softmax / layer_norm (same-shape output) or sum / mean / amax / amin / prod (over
    the last dim: one value per row; over another dim: see _column_reduction)."""
    tail = spec.tail
    form, value_index = tail.form, tail.value
    dtype = spec.exprs[value_index][1]
    t = llvm_type(dtype)
    if not _is_float(t):
        raise Unsupported("integer reductions")
    out = data_ptr(len(spec.inputs), dtype)
    if form == REDUCE and tail.dim != spec.rank - 1:
        _column_reduction(b, spec, meta, start, end, in_ptrs, scalars, out, t)
        return
    if form == NORMALIZE and tail.dim != spec.rank - 1:
        _column_softmax(b, spec, meta, start, end, in_ptrs, scalars, out, t)
        return
    rank = max(spec.rank, 1)
    fast = ("reassoc", "nsz")  # lets LLVM vectorize the accumulation

    def row_body(row):
        if spec.rank:
            dims, offsets = _row_offsets(b, spec, meta, row, rank)
            inner = dims[rank - 1]
        else:
            inner, offsets = ir.Constant(I64, 1), {k: ir.Constant(I64, 0) for k in range(len(spec.inputs))}
        row_start = b.mul(row, inner)
        if form != REDUCE:
            _prefetch_next_row(b, spec, meta, row, rank, in_ptrs, inner)

        def element_value(j):
            v = _ExprLowering(b, _row_loader(b, spec, scalars, offsets, in_ptrs, j)).value(spec.exprs[value_index][0])
            return _ExprLowering(b, None).convert(v, t)

        def accumulate(initial, step):
            acc = b.alloca(t)
            b.store(ir.Constant(t, initial), acc)

            def body(j):
                b.store(step(b.load(acc), j), acc)
            loop(b, ir.Constant(I64, 0), inner, body, "r")
            return b.load(acc)

        if form == REDUCE and tail.role.combine in ("max", "min"):
            b.store(_extreme_of_row(b, tail.role.combine, t, inner, element_value), b.gep(out, [row]))
            return
        if form == REDUCE:
            identity, combine = _combine(b, tail.role.combine, t)
            total = accumulate(identity, lambda acc, j: combine(acc, element_value(j)))
            if tail.role.mean:
                total = b.fdiv(total, b.sitofp(inner, t))
            b.store(total, b.gep(out, [row]))
            return
        row_out = b.gep(out, [row_start])

        def written(j):
            return b.load(b.gep(row_out, [j]))

        # The passes after the first re-read the row's values from L1: from the input itself when the
        # values are an input's row as it is (softmax(x)), else from the output, where the first pass
        # writes them.
        value_expr = spec.exprs[value_index][0]
        direct = value_expr.op == "var" and spec.inputs[value_expr.value].kind == "tensor" and \
            _inner_stride(spec, value_expr.value) == 1
        if direct:
            row_in = b.gep(in_ptrs[value_expr.value], [offsets[value_expr.value]])

            def values(j):
                return _ExprLowering(b, None).convert(_load(b, b.gep(row_in, [j]), dtype), t)
        else:
            values = written

        def first_pass(initial, combine):
            """The first statistic of the row, writing its values to the output on the way unless
            they are read from the input."""
            def step(acc, j):
                v = element_value(j)
                if not direct:
                    b.store(v, b.gep(row_out, [j]))
                return combine(acc, v)
            return accumulate(initial, step)

        if form == NORMALIZE:
            # How the peak treats a NaN does not matter: a NaN in the row makes every exp(x - peak), the
            # total and so the whole row NaN anyway. Promising no NaNs lets LLVM vectorize the max (a
            # scalar maxnum chain was most of the kernel's time).
            peak = first_pass(-float("inf"), lambda acc, v: binary_intrinsic(b, "llvm.maxnum", acc, v,
                                                                            fastmath=("nnan", "nsz")))
            peak = b.select(b.fcmp_ordered("==", peak, ir.Constant(t, -float("inf"))), ir.Constant(t, 0.0), peak)
            if not tail.role.log:
                def exp_store(acc, j):
                    e = mathlib.exp(b, b.fsub(values(j), peak), nonpositive=True)
                    b.store(e, b.gep(row_out, [j]))
                    return b.fadd(acc, e, flags=fast)
                total = accumulate(0.0, exp_store)
                scale = b.fdiv(ir.Constant(t, 1.0), total)

                def normalize(j):
                    b.store(b.fmul(written(j), scale), b.gep(row_out, [j]))
            else:
                total = accumulate(0.0, lambda acc, j: b.fadd(acc, mathlib.exp(b, b.fsub(values(j), peak),
                                                                              nonpositive=True), flags=fast))
                shift = b.fadd(peak, mathlib.log(b, total))

                def normalize(j):
                    b.store(b.fsub(values(j), shift), b.gep(row_out, [j]))
            loop(b, ir.Constant(I64, 0), inner, normalize, "n")
            return
        # layer_norm over the last dim
        assert form == LAYER_NORM
        eps, w_index, b_index = tail.eps, tail.weight, tail.bias
        count = b.sitofp(inner, t)
        mean = b.fdiv(first_pass(0.0, lambda acc, v: b.fadd(acc, v, flags=fast)), count)

        def square(acc, j):
            d = b.fsub(values(j), mean)
            return b.fadd(acc, b.fmul(d, d), flags=fast)
        var = b.fdiv(accumulate(0.0, square), count)
        rstd = b.fdiv(ir.Constant(t, 1.0), b.call(b.module.declare_intrinsic("llvm.sqrt", [t]),
                                                  [b.fadd(var, ir.Constant(t, eps))]))

        def normalize(j):
            v = b.fmul(b.fsub(values(j), mean), rstd, flags=CONTRACT)
            if w_index is not None:
                v = b.fmul(v, _load(b, b.gep(in_ptrs[w_index], [j]), dtype), flags=CONTRACT)
            if b_index is not None:
                v = b.fadd(v, _load(b, b.gep(in_ptrs[b_index], [j]), dtype), flags=CONTRACT)
            b.store(v, b.gep(row_out, [j]))
        loop(b, ir.Constant(I64, 0), inner, normalize, "n")

    loop(b, start, end, row_body, "row")
