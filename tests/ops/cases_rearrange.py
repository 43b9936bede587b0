"""Cases for ops that move or mask elements by position (rearrange.py)."""

from __future__ import annotations

import numpy as np

from .cases import Case, Int, noncontig, rand, rng


def _l(*arrays):
    return list(arrays)


def _varargs(name):
    """How torch spells a call that takes the tensors as separate arguments."""
    return lambda torch, ts, **kwargs: getattr(torch, name)(*ts, **kwargs)


def _block_diag_ref(ts):
    blocks = [t.reshape((1, 1) if t.ndim == 0 else (1, -1) if t.ndim == 1 else t.shape) for t in ts]
    out = np.zeros((sum(b.shape[0] for b in blocks), sum(b.shape[1] for b in blocks)))
    r = c = 0
    for b in blocks:
        out[r:r + b.shape[0], c:c + b.shape[1]] = b
        r, c = r + b.shape[0], c + b.shape[1]
    return out


def _cartesian_ref(ts):
    return np.stack([g.reshape(-1) for g in np.meshgrid(*ts, indexing="ij")], axis=1)


def _tensor_split_ref(x, sections, dim=0):
    return tuple(np.array_split(x, sections, axis=dim))


def _triangle(lower):
    def ref(row, col, offset=0):
        return np.stack((np.tril_indices if lower else np.triu_indices)(row, offset, col))
    return ref

CASES = {
    "tril": [Case((rand(4, 5),), np.tril),
             Case((rand(2, 3, 4), -1), lambda x, d: np.tril(x, d), label="batched, below"),
             Case((noncontig(5, 3), 2), lambda x, d: np.tril(x, d), label="transposed, above"),
             Case((Int(rng.integers(0, 9, (3, 3))),), np.tril, grad=False, label="int"),
             Case((rand(0, 3),), np.tril, label="empty")],
    "triu": [Case((rand(4, 5),), np.triu),
             Case((rand(2, 3, 4), 1), lambda x, d: np.triu(x, d), label="batched, above"),
             Case((noncontig(5, 3), -2), lambda x, d: np.triu(x, d), label="transposed, below")],
    "fliplr": [Case((rand(3, 4),), np.fliplr), Case((noncontig(2, 3, 4),), np.fliplr, label="3-d transposed")],
    "flipud": [Case((rand(3, 4),), np.flipud), Case((rand(5),), np.flipud, label="1-d")],
    "roll": [Case((rand(3, 4), 2), lambda x, s: np.roll(x, s), label="flat"),
             Case((rand(3, 4), [1, -1], [0, 1]), lambda x, s, d: np.roll(x, s, d), label="dims"),
             Case((rand(3, 4), -5, 1), lambda x, s, d: np.roll(x, s, d), label="one dim")],
    "rot90": [Case((rand(3, 4),), np.rot90), Case((rand(2, 3, 4), 3, [2, 0]), lambda x, k, d: np.rot90(x, k, d),
                                                  label="k=3 dims"),
              Case((rand(3, 4), -2), lambda x, k: np.rot90(x, k), label="k=-2")],
    "repeat_interleave": [Case((rand(3, 2), 2), lambda x, r: np.repeat(x.reshape(-1), r), label="flat"),
                          Case((rand(3, 2), Int(np.array([1, 0, 2])), 0), lambda x, r, d: np.repeat(x, r, d),
                               label="tensor repeats"),
                          Case((rand(3, 2), 3, 1), lambda x, r, d: np.repeat(x, r, d), label="dim 1")],
    "repeat_interleave.repeats": [Case((Int(np.array([2, 0, 3])),), lambda r: np.repeat(np.arange(3), r), grad=False,
                                       torch=lambda torch, r: torch.repeat_interleave(r))],
    "tile": [Case((rand(2, 3), [2, 1, 2]), lambda x, d: np.tile(x, d)),
             Case((rand(2, 3), [2]), lambda x, d: np.tile(x, (1, 2)), label="fewer dims")],
    "narrow_copy": [Case((rand(4, 5), 1, 1, 3), lambda x, d, s, n: x[:, 1:4]),
                    Case((rand(4, 5), 0, -2, 2), lambda x, d, s, n: x[2:], grad=False,
                         label="negative start (torch's backward fails on it)")],
    "hstack": [Case((_l(rand(2, 3), rand(2, 1)),), lambda ts: np.hstack(ts)),
               Case((_l(rand(3), rand(2)),), lambda ts: np.hstack(ts), label="1-d")],
    "vstack": [Case((_l(rand(2, 3), rand(3)),), lambda ts: np.vstack(ts))],
    "dstack": [Case((_l(rand(2, 3), rand(2, 3, 2)),), lambda ts: np.dstack(ts))],
    "column_stack": [Case((_l(rand(3), rand(3, 2)),), lambda ts: np.column_stack(ts))],
    "block_diag": [Case((_l(rand(2, 3), rand(1, 1), rand(2)),), _block_diag_ref, torch=_varargs("block_diag"))],
    "cartesian_prod": [Case((_l(rand(2), rand(3)),), _cartesian_ref, torch=_varargs("cartesian_prod"))],
    "tril_indices": [Case((3, 4), _triangle(True), grad=False), Case((4, 3, -1), _triangle(True), grad=False,
                                                                     label="offset")],
    "triu_indices": [Case((3, 4), _triangle(False), grad=False), Case((4, 3, 1), _triangle(False), grad=False,
                                                                      label="offset")],
    "movedim": [Case((rand(2, 3, 4), 0, 2), lambda x, s, d: np.moveaxis(x, s, d)),
                Case((rand(2, 3, 4), [0, 1], [2, 0]), lambda x, s, d: np.moveaxis(x, s, d), label="lists")],
    "swapaxes": [Case((rand(2, 3, 4), 0, -1), lambda x, a, b: np.swapaxes(x, a, b))],
    "unflatten": [Case((rand(2, 12), 1, [3, -1]), lambda x, d, s: x.reshape(2, 3, 4))],
    "ravel": [Case((noncontig(3, 4),), lambda x: x.reshape(-1))],
    "broadcast_to": [Case((rand(3, 1), [2, 3, 4]), lambda x, s: np.broadcast_to(x, s))],
    "atleast_1d": [Case((rand(),), np.atleast_1d), Case((rand(2, 3),), np.atleast_1d, label="2-d")],
    "atleast_2d": [Case((rand(3),), np.atleast_2d)],
    "atleast_3d": [Case((rand(3),), np.atleast_3d), Case((rand(2, 3),), np.atleast_3d, label="2-d")],
    "unbind": [Case((rand(3, 4),), lambda x: tuple(x)), Case((rand(3, 4), 1), lambda x, d: tuple(x.T), label="dim 1")],
    "tensor_split": [Case((rand(7, 2), 3), _tensor_split_ref),
                     Case((rand(2, 7), [1, 5], 1), lambda x, i, d: tuple(np.split(x, i, axis=d)), label="indices")],
    "hsplit": [Case((rand(2, 6), 3), lambda x, s: tuple(np.hsplit(x, s)))],
    "vsplit": [Case((rand(4, 3), [1, 3]), lambda x, s: tuple(np.vsplit(x, s)))],
    "dsplit": [Case((rand(2, 2, 4), 2), lambda x, s: tuple(np.dsplit(x, s)))],
    "broadcast_tensors": [Case((_l(rand(3, 1), rand(4)),), lambda ts: tuple(np.broadcast_arrays(*ts)),
                               torch=_varargs("broadcast_tensors"))],
    "meshgrid": [Case((_l(rand(2), rand(3)),), lambda ts, indexing: tuple(np.meshgrid(*ts, indexing="ij")),
                      kwargs={"indexing": "ij"}),
                 Case((_l(rand(2), rand(3), rand(4)),), lambda ts, indexing: tuple(np.meshgrid(*ts, indexing="xy")),
                      kwargs={"indexing": "xy"}, label="xy")],
}
