"""Products of vectors, matrices and tensors: dot, mv, the add*mm family, outer, kron, tensordot, cross,
multi_dot and matrix_power (einsum has its own module)."""

from __future__ import annotations

import warnings

from scriptc.errors import ShapeError

from . import register
from .matrix import c_type_name, conj, mT, out_type, same_dtype, shape_rule, torch_name
from .rules import broadcast_shapes, normalize_dim
from .schema import OPAQUE, PROMOTE, TensorType


def _check_vectors(a, b):
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")
    if a.shape[0] != b.shape[0]:
        raise ShapeError(f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src [{b.shape[0]}] to have "
                         f"the same number of elements, but got {a.shape[0]} and {b.shape[0]} elements respectively")
    same_dtype("dot : expected both vectors to have same dtype, but found {} and {}", a, b)


def _dot_kernel(xp, a, b):
    _check_vectors(a, b)
    return xp.asarray(xp.dot(a, b))


def _vdot_kernel(xp, a, b):
    _check_vectors(a, b)
    return xp.asarray(xp.vdot(a, b))


_scalar_result = shape_rule(lambda a, b: ())
register("dot(self: Tensor, tensor: Tensor) -> Tensor", OPAQUE, _dot_kernel, shape=_scalar_result,
         grad=lambda ctx, g: (g * ctx.tensor, g * ctx.self), save=("self", "tensor"),
         doc="The inner product of two 1-D tensors.")
register("vdot(self: Tensor, other: Tensor) -> Tensor", OPAQUE, _vdot_kernel, shape=_scalar_result,
         grad=lambda ctx, g: (conj(g) * ctx.other, g * ctx.self), save=("self", "other"), complex_aware=True,
         doc="The inner product of two 1-D tensors, conjugating the first.")


def _inner_kernel(xp, a, b):
    if a.ndim == 0 or b.ndim == 0:
        return xp.asarray(a * b)
    if a.shape[-1] != b.shape[-1]:
        raise ShapeError(f"inner() the last dimension must match on both input tensors but got shapes "
                         f"{list(a.shape)} and {list(b.shape)}")
    same_dtype("both inputs should have same dtype", a, b)
    return xp.asarray(xp.inner(a, b))


def _inner_grad(ctx, g):
    xp, a, b = ctx.xp, ctx.self, ctx.other
    if a.ndim == 0 or b.ndim == 0:
        return g * b, g * a
    lead_a, lead_b = a.ndim - 1, b.ndim - 1
    ga = xp.tensordot(g, b, axes=(list(range(lead_a, lead_a + lead_b)), list(range(lead_b))))
    gb = xp.tensordot(g, a, axes=(list(range(lead_a)), list(range(lead_a))))
    return ga, gb


register("inner(self: Tensor, other: Tensor) -> Tensor", OPAQUE, _inner_kernel,
         shape=shape_rule(lambda a, b: a[:-1] + b[:-1] if a and b else broadcast_shapes(a, b)), grad=_inner_grad,
         save=("self", "other"), doc="Sum of products over the last dims of both tensors.")


def _outer_kernel(name):
    def kernel(xp, a, b):
        for arg, x in (("self", a), ("vec2", b)):
            if x.ndim != 1:
                raise RuntimeError(f"{name}: Expected 1-D argument {arg}, but got {x.ndim}-D")
        return xp.multiply.outer(a, b)
    return kernel


for _name in ("outer", "ger"):
    register(f"{_name}(self: Tensor, vec2: Tensor) -> Tensor", OPAQUE, _outer_kernel(_name), dtype_rule=PROMOTE,
             shape=shape_rule(lambda a, b: a + b), grad=lambda ctx, g: (g @ ctx.vec2, mT(g) @ ctx.self),
             save=("self", "vec2"), doc="The outer product of two 1-D tensors (ger is its old name).")


def _check_mv(xp, bias, mat, vec):
    if mat.ndim != 2 or vec.ndim != 1 or (bias is not None and bias.ndim > 1):
        raise RuntimeError(f"vector + matrix @ vector expected, got {1 if bias is None else bias.ndim}, "
                           f"{mat.ndim}, {vec.ndim}")
    if mat.shape[1] != vec.shape[0] or (bias is not None and bias.ndim == 1 and bias.shape[0] not in (1, mat.shape[0])):
        size = mat.shape[0] if bias is None or bias.ndim == 0 else bias.shape[0]
        raise ShapeError(f"size mismatch, got input ({size}), mat ({mat.shape[0]}x{mat.shape[1]}), "
                         f"vec ({vec.shape[0]})")
    arrays = (mat, vec) if bias is None else (bias, mat, vec)
    if any(a.dtype != mat.dtype for a in arrays):
        names = [torch_name(a.dtype) for a in (bias if bias is not None else vec, mat, vec)]
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {names[0]}, {names[1]}, and "
                           f"{names[2]}")


def _mv_kernel(xp, mat, vec):
    _check_mv(xp, None, mat, vec)
    return xp.asarray(mat @ vec)


register("mv(self: Tensor, vec: Tensor) -> Tensor", OPAQUE, _mv_kernel, shape=shape_rule(lambda m, v: m[:1]),
         grad=lambda ctx, g: (ctx.xp.multiply.outer(g, ctx.vec), mT(ctx.self) @ g), save=("self", "vec"),
         doc="Matrix-vector product.")


def _scaled_sum(xp, bias, product, beta, alpha):
    """beta * bias + alpha * product, where beta == 0 ignores bias (its NaNs too) as PyTorch does."""
    if alpha != 1:
        product = product * alpha
    if beta == 0:
        return xp.asarray(xp.broadcast_to(product, xp.broadcast_shapes(bias.shape, product.shape)).copy())
    return xp.asarray(product + (bias if beta == 1 else bias * beta))


def _expand_bias(bias, shape):
    """PyTorch's expand of the added tensor to the product's shape, with its message."""
    try:
        broadcast = broadcast_shapes(bias.shape, shape)
    except ShapeError:
        broadcast = None
    if broadcast != tuple(shape):
        lead = len(shape) - bias.ndim
        # PyTorch's expand names the last dim that does not fit.
        bad = next((i for i in reversed(range(len(shape))) if i >= lead and bias.shape[i - lead] not in (1, shape[i])),
                   0)
        raise ShapeError(f"The expanded size of the tensor ({shape[bad]}) must match the existing size "
                         f"({bias.shape[bad - lead]}) at non-singleton dimension {bad}.  Target sizes: "
                         f"{list(shape)}.  Tensor sizes: {list(bias.shape)}")


def _addmv_kernel(xp, bias, mat, vec, beta=1, alpha=1):
    _check_mv(xp, bias, mat, vec)
    return _scaled_sum(xp, bias, mat @ vec, beta, alpha)


def _scale(g, factor):
    return g if factor == 1 else g * factor


register("addmv(self: Tensor, mat: Tensor, vec: Tensor, *, beta: Scalar = 1, alpha: Scalar = 1) -> Tensor", OPAQUE,
         _addmv_kernel, shape=shape_rule(lambda b, m, v, *rest: m[:1]), inplace=True,
         grad=lambda ctx, g: (_scale(g, ctx.beta), _scale(ctx.xp.multiply.outer(g, ctx.vec), ctx.alpha),
                              _scale(mT(ctx.mat) @ g, ctx.alpha), None, None),
         save=("mat", "vec"), doc="beta * self + alpha * (mat @ vec).")


def _check_matrices(mat1, mat2, names=("mat1", "mat2")):
    for name, m in zip(names, (mat1, mat2)):
        if m.ndim != 2:
            raise RuntimeError(f"{name} must be a matrix, got {m.ndim}-D tensor")
    if mat1.shape[1] != mat2.shape[0]:
        raise ShapeError(f"mat1 and mat2 shapes cannot be multiplied ({mat1.shape[0]}x{mat1.shape[1]} and "
                         f"{mat2.shape[0]}x{mat2.shape[1]})")


def _addmm_kernel(xp, bias, mat1, mat2, beta=1, alpha=1):
    _check_matrices(mat1, mat2)
    same_dtype("self and mat2 must have the same dtype, but got {} and {}", bias, mat2)
    same_dtype("mat1 and mat2 must have the same dtype, but got {} and {}", mat1, mat2)
    _expand_bias(bias, (mat1.shape[0], mat2.shape[1]))
    return _scaled_sum(xp, bias, mat1 @ mat2, beta, alpha)


register("addmm(self: Tensor, mat1: Tensor, mat2: Tensor, *, beta: Scalar = 1, alpha: Scalar = 1) -> Tensor",
         OPAQUE, _addmm_kernel, shape=shape_rule(lambda b, m1, m2, *rest: (m1[0], m2[1])), inplace=True,
         grad=lambda ctx, g: (_scale(g, ctx.beta), _scale(g @ mT(ctx.mat2), ctx.alpha),
                              _scale(mT(ctx.mat1) @ g, ctx.alpha), None, None),
         save=("mat1", "mat2"), doc="beta * self + alpha * (mat1 @ mat2).")


def _check_batches(batch1, batch2, bias):
    for name, b in (("batch1", batch1), ("batch2", batch2)):
        if b.ndim != 3:
            raise RuntimeError(f"{name} must be a 3D tensor")
    if batch2.shape[:2] != (batch1.shape[0], batch1.shape[2]):
        raise ShapeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                         f"[{batch1.shape[0]}, {batch1.shape[2]}] but got: [{batch2.shape[0]}, {batch2.shape[1]}].")
    if bias.dtype != batch1.dtype or batch2.dtype != batch1.dtype:
        raise RuntimeError(f"Input dtypes must be the same, got: input {c_type_name(bias.dtype)}, batch1: "
                           f"{c_type_name(batch1.dtype)}, batch2: {c_type_name(batch2.dtype)}")


def _baddbmm_kernel(xp, bias, batch1, batch2, beta=1, alpha=1):
    _check_batches(batch1, batch2, bias)
    _expand_bias(bias, (batch1.shape[0], batch1.shape[1], batch2.shape[2]))
    return _scaled_sum(xp, bias, batch1 @ batch2, beta, alpha)


def _addbmm_kernel(xp, bias, batch1, batch2, beta=1, alpha=1):
    if batch1.ndim > 1 and batch2.ndim > 2:
        _expand_bias(bias, (batch1.shape[1], batch2.shape[2]))  # PyTorch expands self before checking ranks
    _check_batches(batch1, batch2, bias)
    return _scaled_sum(xp, bias, (batch1 @ batch2).sum(axis=0), beta, alpha)


_ADD_BATCHED = "(self: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Scalar = 1, alpha: Scalar = 1) -> Tensor"
register("baddbmm" + _ADD_BATCHED, OPAQUE, _baddbmm_kernel,
         shape=shape_rule(lambda b, b1, b2, *rest: (b1[0], b1[1], b2[2])), inplace=True,
         grad=lambda ctx, g: (_scale(g, ctx.beta), _scale(g @ mT(ctx.batch2), ctx.alpha),
                              _scale(mT(ctx.batch1) @ g, ctx.alpha), None, None),
         save=("batch1", "batch2"), doc="beta * self + alpha * (batch1 @ batch2), batch by batch.")
register("addbmm" + _ADD_BATCHED, OPAQUE, _addbmm_kernel,
         shape=shape_rule(lambda b, b1, b2, *rest: (b1[1], b2[2])), inplace=True,
         grad=lambda ctx, g: (_scale(g, ctx.beta), _scale(g @ mT(ctx.batch2), ctx.alpha),
                              _scale(mT(ctx.batch1) @ g, ctx.alpha), None, None),
         save=("batch1", "batch2"), doc="beta * self + alpha * the sum over the batch of batch1 @ batch2.")


def _addr_kernel(xp, bias, vec1, vec2, beta=1, alpha=1):
    for name, v in (("vec1", vec1), ("vec2", vec2)):
        if v.ndim != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {v.ndim}-D")
    _expand_bias(bias, (vec1.shape[0], vec2.shape[0]))
    return _scaled_sum(xp, bias, xp.multiply.outer(vec1, vec2), beta, alpha)


register("addr(self: Tensor, vec1: Tensor, vec2: Tensor, *, beta: Scalar = 1, alpha: Scalar = 1) -> Tensor", OPAQUE,
         _addr_kernel, dtype_rule=PROMOTE, shape=shape_rule(lambda b, v1, v2, *rest: v1 + v2), inplace=True,
         grad=lambda ctx, g: (_scale(g, ctx.beta), _scale(g @ ctx.vec2, ctx.alpha),
                              _scale(mT(g) @ ctx.vec1, ctx.alpha), None, None),
         save=("vec1", "vec2"), doc="beta * self + alpha * outer(vec1, vec2).")


def _kron_shapes(a, b):
    rank = max(len(a), len(b))
    a = (1,) * (rank - len(a)) + tuple(a)
    b = (1,) * (rank - len(b)) + tuple(b)
    return a, b


def _kron_grad(ctx, g):
    xp, a, b = ctx.xp, ctx.self, ctx.other
    sa, sb = _kron_shapes(a.shape, b.shape)
    rank = len(sa)
    interleaved = g.reshape([s for pair in zip(sa, sb) for s in pair])
    a_axes = tuple(range(0, 2 * rank, 2))
    b_axes = tuple(range(1, 2 * rank, 2))
    a_wide = xp.expand_dims(a.reshape(sa), b_axes)
    b_wide = xp.expand_dims(b.reshape(sb), a_axes)
    ga = (interleaved * b_wide).sum(axis=b_axes).reshape(a.shape)
    gb = (interleaved * a_wide).sum(axis=a_axes).reshape(b.shape)
    return ga, gb


register("kron(self: Tensor, other: Tensor) -> Tensor", OPAQUE, lambda xp, a, b: xp.asarray(xp.kron(a, b)),
         dtype_rule=PROMOTE, shape=shape_rule(lambda a, b: tuple(x * y for x, y in zip(*_kron_shapes(a, b)))),
         grad=_kron_grad, save=("self", "other"), doc="The Kronecker product.")


def _tensordot_axes(a_rank, b_rank, dims):
    if hasattr(dims, "ndim"):  # a tensor of dims, read as torch.functional.tensordot reads it
        dims = dims.item() if dims.size == 1 else dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(a_rank, b_rank):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        return list(range(a_rank - dims, a_rank)), list(range(dims))
    dims_a, dims_b = ([dims[0]] if isinstance(dims[0], int) else list(dims[0]),
                      [dims[1]] if isinstance(dims[1], int) else list(dims[1]))
    if len(dims_a) != len(dims_b):
        raise RuntimeError("both dimension lists should have same length")
    return ([normalize_dim(d, a_rank, "tensordot") for d in dims_a],
            [normalize_dim(d, b_rank, "tensordot") for d in dims_b])


def _tensordot_kernel(xp, a, b, dims=2):
    dims_a, dims_b = _tensordot_axes(a.ndim, b.ndim, dims)
    for da, db in zip(dims_a, dims_b):
        if a.shape[da] != b.shape[db]:
            raise ShapeError(f"contracted dimensions need to match, but first has size {a.shape[da]} in dim "
                             f"{da - a.ndim if isinstance(dims, int) else da} and second has size {b.shape[db]} "
                             f"in dim {db}")
    same_dtype("both inputs should have same dtype", a, b)
    return xp.asarray(xp.tensordot(a, b, axes=(dims_a, dims_b)))


def _tensordot_grad(ctx, g):
    xp, a, b = ctx.xp, ctx.a, ctx.b
    dims_a, dims_b = _tensordot_axes(a.ndim, b.ndim, ctx.dims)
    free_a = [i for i in range(a.ndim) if i not in dims_a]
    free_b = [i for i in range(b.ndim) if i not in dims_b]
    n_free_a = len(free_a)
    # g's dims are free_a + free_b; contracting g with the other operand over its free dims leaves
    # this operand's free dims followed by the other's contracted dims (in the other's axis order).
    ga = xp.tensordot(g, b, axes=(list(range(n_free_a, g.ndim)), free_b))
    partner_a = [dims_a[dims_b.index(j)] for j in sorted(dims_b)]
    ga = xp.transpose(ga, _inverse_permutation(free_a + partner_a))
    gb = xp.tensordot(g, a, axes=(list(range(n_free_a)), free_a))
    partner_b = [dims_b[dims_a.index(i)] for i in sorted(dims_a)]
    gb = xp.transpose(gb, _inverse_permutation(free_b + partner_b))
    return ga, gb, None


def _inverse_permutation(order):
    inverse = [0] * len(order)
    for position, axis in enumerate(order):
        inverse[axis] = position
    return inverse


def _tensordot_shape(a, b, dims=2):
    dims_a, dims_b = _tensordot_axes(len(a), len(b), dims)
    return tuple(d for i, d in enumerate(a) if i not in dims_a) + tuple(d for i, d in enumerate(b) if i not in dims_b)


def _tensordot_rule(a, b, dims=2):
    if isinstance(dims, TensorType):  # the contracted dims are values known only at run time
        return out_type(a, None)
    return shape_rule(_tensordot_shape)(a, b, dims)


register("tensordot(a: Tensor, b: Tensor, dims: int|int[][]|Tensor = 2) -> Tensor", OPAQUE, _tensordot_kernel,
         shape=_tensordot_rule, grad=_tensordot_grad, method=False, save=("a", "b"),
         doc="Sums products over the last `dims` dims of a and the first of b (or the listed dim pairs).")


def _cross_dim(shape, dim, name):
    if dim is None:
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the dim "
                      "explicitly or simply use torch.linalg.cross.\nThe default value of dim will change to agree "
                      "with that of linalg.cross in a future release.", UserWarning, stacklevel=2)
        for i, size in enumerate(shape):
            if size == 3:
                return i
        raise RuntimeError("no dimension of size 3 in input")
    return normalize_dim(dim, len(shape), name)


def _cross_kernel(name):
    def kernel(xp, a, b, dim=None):
        if a.ndim != b.ndim:
            raise RuntimeError(f"{name}: inputs must have the same number of dimensions.")
        shape = broadcast_shapes(a.shape, b.shape)
        axis = _cross_dim(shape, dim, name)
        if a.shape[axis] != 3 or b.shape[axis] != 3:
            raise RuntimeError(f"linalg.cross: inputs dimension {dim if dim is not None else axis} must have "
                               f"length 3. Got {a.shape[axis]} and {b.shape[axis]}")
        return xp.asarray(xp.cross(a, b, axis=axis))
    return kernel


def _cross_grad(ctx, g):
    xp, a, b = ctx.xp, ctx.self, ctx.other
    axis = _cross_dim(broadcast_shapes(a.shape, b.shape), ctx.dim, "cross") if ctx.dim is not None else \
        next(i for i, s in enumerate(broadcast_shapes(a.shape, b.shape)) if s == 3)
    return xp.cross(b, g, axis=axis), xp.cross(g, a, axis=axis), None


_cross_rule = shape_rule(lambda a, b, dim=None: broadcast_shapes(a, b))
def _same_dtypes(arrays) -> None:
    # torch's cross kernels do not promote (both operands are tensors: the schema is checked first)
    same_dtype("expected scalar type {} but found {}", arrays[0], arrays[1])


register("cross(self: Tensor, other: Tensor, dim: int? = None) -> Tensor", OPAQUE, _cross_kernel("cross"),
         dtype_rule=PROMOTE, shape=_cross_rule, grad=_cross_grad, save=("self", "other"),
         argument_check=_same_dtypes,
         doc="The 3-D cross product along dim (the first dim of size 3 when not given).")
register("linalg_cross(self: Tensor, other: Tensor, *, dim: int = -1) -> Tensor", OPAQUE,
         _cross_kernel("linalg.cross"), dtype_rule=PROMOTE, shape=_cross_rule, grad=_cross_grad,
         argument_check=_same_dtypes, save=("self", "other"), method=False, function=False,
         doc="The 3-D cross product along dim.")


def _vecdot_kernel(xp, x, y, dim=-1):
    same_dtype("linalg.vecdot: Expected x and y to have the same dtype, but found x of type {} and y of type {} "
               "instead", x, y)
    shape = broadcast_shapes(x.shape, y.shape)
    axis = normalize_dim(dim, len(shape), "linalg.vecdot")
    return xp.asarray((conj(x) * y).sum(axis=axis - len(shape)))


def _vecdot_grad(ctx, g):
    xp, x, y = ctx.xp, ctx.x, ctx.y
    shape = broadcast_shapes(x.shape, y.shape)
    g = xp.expand_dims(g, normalize_dim(ctx.dim, len(shape)))
    return conj(g) * y, g * x, None


register("linalg_vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor", OPAQUE, _vecdot_kernel,
         shape=shape_rule(lambda x, y, dim=-1: tuple(d for i, d in enumerate(broadcast_shapes(x, y))
                                                     if i != normalize_dim(dim, len(broadcast_shapes(x, y))))),
         grad=_vecdot_grad, save=("x", "y"), complex_aware=True, method=False, function=False,
         doc="sum(conj(x) * y) over dim, broadcasting.")


# --- chains of products ----------------------------------------------------------------

def _chain_operands(tensors, name):
    if len(tensors) < 2 and name == "multi_dot":
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    if not tensors:
        raise RuntimeError(f"{name}(): Expected one or more matrices")
    for i, t in enumerate(tensors):
        allowed = (1, 2) if name == "multi_dot" and i in (0, len(tensors) - 1) else (2,)
        if t.ndim not in allowed:
            if name == "multi_dot":
                where = "first" if i == 0 else "last" if i == len(tensors) - 1 else "tensor"
                raise RuntimeError(f"multi_dot(): the {where} tensor must be 1D or 2D but got {t.ndim}D"
                                   if where != "tensor" else f"multi_dot(): tensor {i} must be 2D but got {t.ndim}D")
            raise RuntimeError(f"chain_matmul(): Expected 2D tensors, but got {t.ndim}D tensor at position {i}")
    mats = [t[None, :] if i == 0 and t.ndim == 1 else t[:, None] if t.ndim == 1 else t for i, t in enumerate(tensors)]
    for i in range(len(mats) - 1):
        if mats[i].shape[1] != mats[i + 1].shape[0]:
            raise ShapeError(f"{name}(): tensors {i} and {i + 1} with shapes {list(tensors[i].shape)} and "
                             f"{list(tensors[i + 1].shape)} cannot be multiplied")
        same_dtype(f"{name}(): all tensors must have be the same dtype but tensor 0 is {{}} and tensor {i + 1} "
                   "{}", mats[0], mats[i + 1])
    return mats


def _chain_product(mats):
    """The product of the matrices in the order with the fewest multiplications (the textbook dynamic program)."""
    n = len(mats)
    dims = [m.shape[0] for m in mats] + [mats[-1].shape[1]]
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j], split[i][j] = min((cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1], k)
                                          for k in range(i, j))

    def product(i, j):
        return mats[i] if i == j else product(i, split[i][j]) @ product(split[i][j] + 1, j)
    return product(0, n - 1)


def _chain_kernel(name):
    def kernel(xp, tensors):
        mats = _chain_operands(tensors, name)
        out = mats[0].copy() if len(mats) == 1 else _chain_product(mats)
        return xp.asarray(out.reshape(_chain_shape([t.shape for t in tensors])))
    return kernel


def _chain_shape(shapes):
    rows = () if len(shapes[0]) == 1 else shapes[0][:1]
    cols = () if len(shapes) > 1 and len(shapes[-1]) == 1 else shapes[-1][-1:]
    return tuple(rows) + tuple(cols)


def _chain_grad(name):
    def grad(ctx, g):
        xp, tensors = ctx.xp, ctx.args[0]
        mats = _chain_operands(tensors, name)
        g = g.reshape(mats[0].shape[0], mats[-1].shape[1])
        # prefix[i] = mats[0] @ ... @ mats[i-1], suffix[i] = mats[i+1] @ ... @ mats[-1]
        prefix = [xp.eye(mats[0].shape[0], dtype=g.dtype)]
        for m in mats[:-1]:
            prefix.append(prefix[-1] @ m)
        suffix = [xp.eye(mats[-1].shape[1], dtype=g.dtype)]
        for m in reversed(mats[1:]):
            suffix.append(m @ suffix[-1])
        suffix.reverse()
        grads = [(mT(prefix[i]) @ g @ mT(suffix[i])).reshape(t.shape) for i, t in enumerate(tensors)]
        return (grads,)
    return grad


def _chain_type(tensors):
    known_shapes = all(t.shape is not None and all(isinstance(d, int) for d in t.shape) for t in tensors)
    return out_type(tensors[0], _chain_shape([tuple(t.shape) for t in tensors]) if known_shapes else None)


register("linalg_multi_dot(tensors: Tensor[]) -> Tensor", OPAQUE, _chain_kernel("multi_dot"), shape=_chain_type,
         grad=_chain_grad("multi_dot"), method=False, function=False,
         doc="The product of a chain of matrices, in the cheapest order (first and last may be vectors).")
register("chain_matmul(matrices: Tensor[]) -> Tensor", OPAQUE, _chain_kernel("chain_matmul"), shape=_chain_type,
         grad=_chain_grad("chain_matmul"), method=False,
         doc="The product of the matrices (deprecated in PyTorch for linalg.multi_dot).")
