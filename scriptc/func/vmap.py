"""torch.vmap: a function of one sample run over a batch dimension of its inputs.

scriptc runs the function once per sample (on views of the inputs) and stacks the results, so
anything the function does per sample works, at the cost of one Python call per sample.
"""

from __future__ import annotations

import functools

from scriptc.ops.generator import default_generator
from scriptc.tensors import Tensor

_RANDOMNESS = ("error", "different", "same")


def vmap(func, in_dims=0, out_dims=0, randomness: str = "error", *, chunk_size: int | None = None):
    """vmap(func)(*args) = stack([func(*args_i) for each i along in_dims], dim=out_dims).

    in_dims: an int (or None: not mapped) per input, or one for all, nested like the inputs;
    out_dims: the same for the outputs. randomness: "error" refuses random ops in func, "different"
    draws independently per sample, "same" draws the same values for every sample.
    """
    if randomness not in _RANDOMNESS:
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. "
                           f"Got {randomness}")
    if chunk_size is not None and chunk_size < 1:
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")
    name = getattr(func, "__name__", repr(func))

    @functools.wraps(func)
    def batched(*args, **kwargs):
        dims = _broadcast_dims(in_dims, args, name)
        size = _batch_size(args, dims, name)
        if size == 0:
            # func runs once per sample, so with none there is no output to learn the shapes from.
            raise RuntimeError(f"vmap({name}, ...): scriptc cannot map over a dimension of size 0")
        state = default_generator.get_state()
        results = []
        for index in range(size):
            if randomness == "same":
                default_generator.set_state(state)
            before = default_generator.get_state() if randomness == "error" else None
            results.append(func(*_select(args, dims, index), **kwargs))
            if before is not None and not _same_state(before, default_generator.get_state()):
                raise RuntimeError("vmap: called random operation while in randomness error mode. Please either "
                                   "use the 'same' or 'different' randomness flags on vmap or perform the "
                                   "randomness operation out of vmap")
        return _stack(results, out_dims, name)
    return batched


def _broadcast_dims(in_dims, args, name: str):
    """in_dims as a tree matching args (an int or None applies to a whole subtree)."""
    if isinstance(in_dims, int) or in_dims is None:
        if in_dims is None:
            raise ValueError(f"vmap({name}, in_dims=None, ...)(<inputs>): expected `in_dims` to be int or a "
                             f"(potentially nested) tuple matching the structure of inputs, got: "
                             f"{type(in_dims)}.")
        return tuple(in_dims for _ in args)
    if not isinstance(in_dims, (tuple, list)) or len(in_dims) != len(args):
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the "
                         f"structure of `inputs`. in_dims has structure {in_dims} but inputs has "
                         f"{len(args)} elements.")
    return tuple(in_dims)


def _leaves(value, dim):
    """(tensor, dim) for every mapped tensor in value, with dim spread over containers."""
    if isinstance(value, Tensor):
        if dim is not None:
            yield value, dim
    elif isinstance(value, (tuple, list)):
        dims = dim if isinstance(dim, (tuple, list)) else [dim] * len(value)
        for v, d in zip(value, dims):
            yield from _leaves(v, d)
    elif isinstance(value, dict):
        for key, v in value.items():
            yield from _leaves(v, dim[key] if isinstance(dim, dict) else dim)


def _batch_size(args, dims, name: str) -> int:
    sizes = []
    for tensor, dim in (leaf for arg, d in zip(args, dims) for leaf in _leaves(arg, d)):
        rank = tensor.dim()
        if not -rank <= dim < rank:
            raise ValueError(f"vmap({name}, in_dims={dim}, ...)(<inputs>): Got in_dim={dim} for some input, but "
                             f"that input is a Tensor of dimensionality {rank} so expected in_dim to satisfy "
                             f"-{rank} <= in_dim < {rank}.")
        sizes.append(tensor.size(dim))
    if not sizes:
        raise ValueError(f"vmap({name}, in_dims=..., ...)(<inputs>): at least one input must be a Tensor mapped "
                         f"over a dimension (in_dims not None)")
    if len(set(sizes)) > 1:
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{sizes} for the mapped dimension")
    return sizes[0]


def _select(value, dim, index: int):
    if isinstance(value, Tensor):
        return value if dim is None else value.select(dim, index)
    if isinstance(value, (tuple, list)):
        dims = dim if isinstance(dim, (tuple, list)) else [dim] * len(value)
        return type(value)(_select(v, d, index) for v, d in zip(value, dims))
    if isinstance(value, dict):
        return {k: _select(v, dim[k] if isinstance(dim, dict) else dim, index) for k, v in value.items()}
    return value


def _stack(results: list, out_dims, name: str):
    import scriptc

    first = results[0]
    if isinstance(first, (tuple, list)):
        dims = out_dims if isinstance(out_dims, (tuple, list)) else [out_dims] * len(first)
        return type(first)(_stack([r[i] for r in results], dims[i], name) for i in range(len(first)))
    if isinstance(first, dict):
        return {k: _stack([r[k] for r in results], out_dims[k] if isinstance(out_dims, dict) else out_dims, name)
                for k in first}
    if out_dims is None:
        return first
    if not isinstance(first, Tensor):
        raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(first)}. Did you "
                         f"mean to set out_dims= to None for output?")
    return scriptc.stack(results, out_dims)


def _same_state(a, b) -> bool:
    return bool((a == b).all()) if isinstance(a, Tensor) else a == b
