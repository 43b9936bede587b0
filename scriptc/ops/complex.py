"""Complex numbers: building them (complex, polar), taking them apart (real, imag, view_as_real,
view_as_complex, angle) and conj/sgn, with gradients in PyTorch's conjugate Wirtinger convention.

The other ops (add, mul, exp, matmul, sum, ...) take complex tensors as they are: numpy computes them
and autograd conjugates their holomorphic formulas (scriptc.autograd._gradient).
"""

from __future__ import annotations

from scriptc.types import FLOAT, TensorType, default_float

from . import register
from .bfloat16 import as_default_float, default_float_compute
from .matrix import conj, out_type, real_type, torch_name
from .rules import broadcast_shapes
from .schema import OPAQUE, SHAPE


def _complex_dtype(t: TensorType):
    return t.dtype.to_complex() if t.dtype is not None else None


def _same_shape_real(x):
    return out_type(x, x.shape, real_type(x))


def _real_kernel(xp, x):
    return x.real


def _imag_kernel(xp, x):
    if x.dtype.kind != "c":
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return x.imag


register("real(self: Tensor) -> Tensor", SHAPE, _real_kernel, shape=_same_shape_real,
         grad=lambda ctx, g: (g.astype(ctx.self.dtype),), save=("self",), view=True, complex_aware=True,
         doc="The real part (a view; a real tensor is its own real part).")
register("imag(self: Tensor) -> Tensor", SHAPE, _imag_kernel, shape=_same_shape_real,
         grad=lambda ctx, g: (1j * g,), view=True, complex_aware=True, doc="The imaginary part of a complex tensor (a view).")


def _view_as_real_kernel(xp, x):
    if x.dtype.kind != "c":
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return x[..., None].view(x.real.dtype)


def _view_as_complex_kernel(xp, x):
    if x.dtype.kind != "f" or x.dtype.itemsize < 4:
        raise RuntimeError(f"view_as_complex is only supported for half, float and double tensors, but got a tensor "
                           f"of scalar type: {torch_name(x.dtype)}")
    if x.ndim == 0 or x.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if x.strides[-1] != x.itemsize:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    return x.view(xp.complex64 if x.dtype.itemsize == 4 else xp.complex128)[..., 0]


register("view_as_real(self: Tensor) -> Tensor", SHAPE, _view_as_real_kernel,
         shape=lambda x: out_type(x, None if x.shape is None else tuple(x.shape) + (2,), real_type(x)),
         grad=lambda ctx, g: (g[..., 0] + 1j * g[..., 1],), view=True, complex_aware=True,
         doc="A complex tensor seen as real pairs: a view with a last dim of 2.")
register("view_as_complex(self: Tensor) -> Tensor", SHAPE, _view_as_complex_kernel,
         shape=lambda x: out_type(x, None if x.shape is None else tuple(x.shape[:-1]), _complex_dtype(x)),
         grad=lambda ctx, g: (ctx.xp.stack([g.real, g.imag], axis=-1),), view=True, complex_aware=True,
         doc="A real tensor with a last dim of 2 seen as complex numbers (a view).")


def _check_parts(a, b):
    if a.dtype.kind != "f" or b.dtype.kind != "f":
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got {torch_name(a.dtype)} "
                           f"and {torch_name(b.dtype)}")
    if a.dtype != b.dtype:
        raise RuntimeError(f"Expected object of scalar type {torch_name(a.dtype)} but got scalar type "
                           f"{torch_name(b.dtype)} for second argument")


def _complex_kernel(xp, real, imag):
    _check_parts(real, imag)
    out = xp.empty(xp.broadcast_shapes(real.shape, imag.shape), xp.complex128 if real.itemsize == 8 else xp.complex64)
    out.real, out.imag = real, imag
    return out


def _parts_rule(a, b):
    shape = broadcast_shapes(a.shape, b.shape)
    return out_type(a, shape, _complex_dtype(a))


register("complex(real: Tensor, imag: Tensor) -> Tensor", OPAQUE, _complex_kernel, shape=_parts_rule,
         grad=lambda ctx, g: (g.real, g.imag), complex_aware=True, method=False,
         doc="real + i * imag, broadcasting (float inputs of one dtype).")


def _polar_kernel(xp, magnitude, angle):
    _check_parts(magnitude, angle)
    return _complex_kernel(xp, magnitude * xp.cos(angle), magnitude * xp.sin(angle))


def _polar_grad(ctx, g):
    result = ctx.out
    return (conj(g) * _sgn(ctx.xp, result)).real, (conj(g) * result * 1j).real


register("polar(abs: Tensor, angle: Tensor) -> Tensor", OPAQUE, _polar_kernel, shape=_parts_rule, grad=_polar_grad,
         save=("out",), complex_aware=True, method=False, doc="abs * (cos(angle) + i sin(angle)).")


def _angle_kernel(xp, x):
    if x.dtype.kind == "c":
        return xp.angle(x)
    if x.dtype.kind != "f":  # integers give the default float dtype
        return as_default_float(xp, _angle_kernel(xp, x.astype(default_float_compute(xp))))
    # pi for negative numbers, 0 otherwise, NaN kept (PyTorch's angle of a real tensor).
    return xp.where(x < 0, xp.pi, xp.where(x != x, x, 0)).astype(x.dtype)


def _angle_grad(ctx, g):
    xp, x = ctx.xp, ctx.self
    if x.dtype.kind != "c":
        return (xp.zeros(x.shape, g.dtype),)
    squared = (x * conj(x)).real
    return (xp.where(squared == 0, 0, g * x / xp.where(squared == 0, 1, squared) * 1j),)


def _angle_rule(x):
    d = x.dtype
    if d is not None and d.category < FLOAT:
        d = default_float()
    return out_type(x, x.shape, None if d is None else d.to_real())


register("angle(self: Tensor) -> Tensor", OPAQUE, _angle_kernel, shape=_angle_rule, grad=_angle_grad,
         save=("self",), complex_aware=True, doc="The argument of each element (0 or pi for real tensors).")


def _sgn(xp, x):
    if x.dtype.kind != "c":
        return xp.sign(x) if x.dtype != bool else x.copy()
    magnitude = xp.abs(x)
    return xp.where(magnitude == 0, 0, x / xp.where(magnitude == 0, 1, magnitude))


def _sgn_grad(ctx, g):
    xp, x = ctx.xp, ctx.self
    if x.dtype.kind != "c":
        return (xp.zeros(x.shape, g.dtype),)
    magnitude = xp.abs(x)
    unit = ctx.out
    return (xp.where(magnitude == 0, 0, (g - unit * (conj(unit) * g).real) / xp.where(magnitude == 0, 1, magnitude)),)


register("sgn(self: Tensor) -> Tensor", OPAQUE, _sgn, shape=lambda x: x, grad=_sgn_grad, save=("self", "out"),
         complex_aware=True, doc="x / |x| (0 at 0): sign for real tensors, the unit phase for complex ones.")

for _name in ("conj", "conj_physical"):
    register(f"{_name}(self: Tensor) -> Tensor", OPAQUE, lambda xp, x: x.conj() if x.dtype.kind == "c" else x.copy(),
             shape=lambda x: x, grad=lambda ctx, g: (conj(g),), complex_aware=True,
             doc="The complex conjugate (a real tensor is returned as it is).")
