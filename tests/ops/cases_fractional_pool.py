"""Cases for fractional max pooling (fractional_pool.py): a direct loop over windows as the reference."""

from __future__ import annotations

import itertools

import numpy as np

from .cases import Case, rand, rng


def _starts(sample, size, out, pool):
    alpha = (size - pool) / (out - 1) if out > 1 else 0.0
    return [int((i + sample) * alpha) - int(sample * alpha) for i in range(out - 1)] + [size - pool]


def _fractional_ref(x, kernel_size, output_size, samples):
    spatial = len(kernel_size)
    batched = x if x.ndim == spatial + 2 else x[None]
    n, c, *sizes = batched.shape
    values = np.zeros((n, c) + tuple(output_size))
    indices = np.zeros((n, c) + tuple(output_size), dtype=np.int64)
    order = (1, 0) if spatial == 2 else (0, 1, 2)  # which sample drives each spatial dim
    for b, ch in itertools.product(range(n), range(c)):
        starts = [_starts(samples[b, ch, s], size, o, k) for s, size, o, k in
                  zip(order, sizes, output_size, kernel_size)]
        for position in itertools.product(*(range(o) for o in output_size)):
            corner = [starts[d][p] for d, p in enumerate(position)]
            window = batched[(b, ch) + tuple(slice(s, s + k) for s, k in zip(corner, kernel_size))]
            local = np.unravel_index(np.argmax(window), window.shape)
            values[(b, ch) + position] = window[local]
            indices[(b, ch) + position] = np.ravel_multi_index(tuple(s + i for s, i in zip(corner, local)), sizes)
    if batched is not x:
        return values[0], indices[0]
    return values, indices


CASES = {
    "fractional_max_pool2d": [
        Case((rand(2, 3, 10, 9), [3, 3], [8, 7], rng.uniform(0.05, 0.95, (2, 3, 2))), _fractional_ref, nograd=(3,),
             torch=lambda torch, x, k, o, s: torch.nn.functional.fractional_max_pool2d(
                 x, k, output_size=o, return_indices=True, _random_samples=s)),
        Case((rand(3, 11, 12), [2, 3], [5, 4], rng.uniform(0.05, 0.95, (1, 3, 2))), _fractional_ref, nograd=(3,),
             label="unbatched", torch=lambda torch, x, k, o, s: torch.nn.functional.fractional_max_pool2d(
                 x, k, output_size=o, return_indices=True, _random_samples=s))],
    "fractional_max_pool3d": [
        Case((rand(2, 2, 7, 6, 8), [2, 2, 3], [4, 3, 5], rng.uniform(0.05, 0.95, (2, 2, 3))), _fractional_ref,
             nograd=(3,), torch=lambda torch, x, k, o, s: torch.nn.functional.fractional_max_pool3d(
                 x, k, output_size=o, return_indices=True, _random_samples=s))],
}
