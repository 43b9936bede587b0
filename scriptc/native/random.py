"""Random fills for the executor's segment programs: numpy's own samplers, called from native code.

Eager random ops draw from numpy's Generator (ops/generator.py): `standard_normal(shape)` and
`random(shape)` in float64, cast to the op's dtype. numpy's generator module exports the C functions
those methods run - `random_standard_normal_fill(bitgen_t *, count, double *out)` and
`random_standard_uniform_fill` (documented in numpy's random C API) - so a program that calls them
with the bit generator of the Generator eager code would use draws the very same stream: same seed,
same numbers, in the same order, whichever of the two ran a call.

`scriptc_random_fill_f32` / `_f64` have the kernel signature (start, end, ptrs, meta): elements
[start, end) of the output; ptrs = [the sampler's fill function, the bitgen_t, the output]; meta =
[]. float32 fills 256 doubles at a time on the stack and rounds them as numpy's astype does (a fill
is one draw per element in order, so filling in pieces draws what one fill would). Never split
across workers: the stream is sequential.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import os

import numpy as np
from llvmlite import ir

from scriptc.codegen.llvm.loop import loop

from .loops import loop_module

I64 = ir.IntType(64)
DOUBLE = ir.DoubleType()
FUNCTIONS = {"float32": ("scriptc_random_fill_f32", ir.FloatType()),
             "float64": ("scriptc_random_fill_f64", DOUBLE)}
SAMPLERS = {"normal": "random_standard_normal_fill", "uniform": "random_standard_uniform_fill"}
_CHUNK = 256
_FILL = ir.FunctionType(ir.VoidType(), [ir.IntType(8).as_pointer(), I64, DOUBLE.as_pointer()])


@functools.cache
def sampler_addresses() -> dict[str, int] | None:
    """{'normal': address, 'uniform': address} of numpy's fill functions, or None where this numpy's
    generator module does not export them (random ops then run as the plan's steps)."""
    folder = os.path.dirname(np.random.__file__)
    for path in sorted(glob.glob(os.path.join(folder, "_generator*"))):
        try:
            library = ctypes.CDLL(path)
        except OSError:
            continue
        if all(hasattr(library, symbol) for symbol in SAMPLERS.values()):
            return {kind: ctypes.cast(getattr(library, symbol), ctypes.c_void_p).value
                    for kind, symbol in SAMPLERS.items()}
    return None


def bit_generator_address(bits: np.random.BitGenerator) -> int:
    """The address of a numpy bit generator's bitgen_t, which the fill functions take."""
    return bits.ctypes.bit_generator.value


def module(triple: str, dtype: str) -> ir.Module:
    """The module of one dtype's loop (built on a cache miss only)."""
    return loop_module(triple, *FUNCTIONS[dtype], _build)


def _build(b: ir.IRBuilder, args, element) -> None:
    start, end, ptrs, _ = args

    def pointer(index: int):
        return b.load(b.gep(ptrs, [ir.Constant(I64, index)]))
    fill = b.bitcast(pointer(0), _FILL.as_pointer())
    state = pointer(1)
    out = b.gep(b.bitcast(pointer(2), element.as_pointer()), [start])
    count = b.sub(end, start)
    if element == DOUBLE:
        b.call(fill, [state, count, out])
        b.ret_void()
        return
    chunk = ir.Constant(I64, _CHUNK)
    drawn = b.alloca(ir.ArrayType(DOUBLE, _CHUNK))
    first = b.gep(drawn, [ir.Constant(I64, 0), ir.Constant(I64, 0)])
    chunks = b.sdiv(b.add(count, ir.Constant(I64, _CHUNK - 1)), chunk)

    def piece(c):
        at = b.mul(c, chunk)
        left = b.sub(count, at)
        size = b.select(b.icmp_signed("<", left, chunk), left, chunk)
        b.call(fill, [state, size, first])
        target = b.gep(out, [at])
        loop(b, ir.Constant(I64, 0), size,
             lambda j: b.store(b.fptrunc(b.load(b.gep(first, [j])), element), b.gep(target, [j])), "element")
    loop(b, ir.Constant(I64, 0), chunks, piece, "chunk")
    b.ret_void()
