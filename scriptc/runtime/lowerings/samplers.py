"""Random ops in a segment program: randn/rand and their _like forms fill their output natively from
the default generator's stream, numpy's samplers called as eager code calls them (native/random.py),
so a program draws what the plan's steps would have drawn, and a random op no longer splits a
segment into two programs with a Python step between them."""

from __future__ import annotations

from scriptc.native import program as native
from scriptc.native import random as sampling
from scriptc.native.loops import loop_function
from scriptc.ops.factory import CONTIGUOUS_FORMAT, PRESERVE_FORMAT

from ..program_values import Builder, NotNative, int_register, tensor_of


def _sampler(kind: str, like: bool):
    """The lowering of a fill from sampler `kind` (native/random.SAMPLERS): shaped like its tensor
    argument (`like`) or by its size list."""
    def lower(builder: Builder, node, args, recorded):
        samplers = sampling.sampler_addresses()
        dtype = recorded[node.outputs[0]].dtype
        if samplers is None or dtype.name not in sampling.FUNCTIONS:
            raise NotNative("a random fill numpy's samplers cannot make natively")
        if args[1] is not None:
            raise NotNative("a random op given its own generator")
        if like:
            x = tensor_of(args[0])
            memory_format = args[4]
            if memory_format not in (None, CONTIGUOUS_FORMAT, PRESERVE_FORMAT) or \
                    x.strides is not None and memory_format != CONTIGUOUS_FORMAT:
                raise NotNative("a random fill laid out like a strided tensor")
            dims = list(x.dims)
        else:
            if not isinstance(args[0], list):
                raise NotNative("sizes that are not a list")
            dims = [int_register(builder, s) for s in args[0]]
        out = builder.alloc(dtype, dims)
        ptrs = builder.block(3)
        builder.copy_into(ptrs, [builder.const(samplers[kind]), native.GENERATOR, out.pointer], builder.compute)
        builder.compute.append(("KERNEL", builder.const(loop_function("random", dtype.name)), out.buffer.count, ptrs,
                                builder.block(1)))
        builder.draws = True
        return [out]
    return lower


SAMPLER_LOWERINGS = {"randn": _sampler("normal", False), "rand": _sampler("uniform", False),
                     "randn_like": _sampler("normal", True), "rand_like": _sampler("uniform", True)}
