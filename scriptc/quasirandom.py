"""torch.quasirandom.SobolEngine: Sobol low-discrepancy sequences, in gray-code order with torch's
direction numbers (Joe and Kuo), optionally scrambled (random linear matrix scrambling plus a random
digital shift), drawn in the default float dtype."""

from __future__ import annotations

import numpy as np

MAXBIT = 30
MAXDIM = 1000  # the dimensions scriptc carries direction numbers for (torch carries 21201)


def _direction_numbers(dimension: int) -> np.ndarray:
    """(dimension, MAXBIT) int64: v[d, i] = m_i * 2^(MAXBIT - 1 - i), the recurrence of each dimension's
    primitive polynomial extending its initial m values."""
    from scriptc.sobol_directions import TABLE

    state = np.zeros((dimension, MAXBIT), dtype=np.int64)
    state[0, :] = 1
    entries = TABLE.replace("\n", " ").split(",")
    for d in range(1, dimension):
        poly, *initial = (int(v) for v in entries[d - 1].split())
        degree = len(initial)
        m = state[d]
        m[:degree] = initial
        for j in range(degree, MAXBIT):
            value = int(m[j - degree])
            for k in range(degree):
                if (poly >> (degree - 1 - k)) & 1:
                    value ^= (2 << k) * int(m[j - k - 1])
            m[j] = value
    return state << (MAXBIT - 1 - np.arange(MAXBIT, dtype=np.int64))


def _rightmost_zero(n: int) -> int:
    """The index of the lowest zero bit of n (which direction number the gray code flips next)."""
    return ((~n) & (n + 1)).bit_length() - 1


def _scrambled(state: np.ndarray, shift_bits: np.ndarray, ltm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(digital shift, scrambled direction numbers): shift_bits (dim, MAXBIT) as integers (bit i worth 2^i),
    and each direction number's bits (most significant first) multiplied over GF(2) by the lower-triangular
    binary matrix ltm[d] with its diagonal set to one."""
    shift = shift_bits.astype(np.int64) @ (np.int64(1) << np.arange(MAXBIT, dtype=np.int64))
    ltm = ltm.astype(np.int64)
    ltm[:, np.arange(MAXBIT), np.arange(MAXBIT)] = 1
    from_top = MAXBIT - 1 - np.arange(MAXBIT, dtype=np.int64)
    bits = (state[:, :, None] >> from_top) & 1  # (dim, j, bit counted from the top)
    scrambled = np.einsum("dpk,djk->djp", ltm, bits) & 1
    return shift, scrambled @ (np.int64(1) << from_top)


def _check_draw_kernel(n: int, dimension: int, dtype) -> None:
    """torch's errors from its draw kernel, which every draw but a fresh engine's first point goes through."""
    import scriptc
    from scriptc.ops.rules import scalar_type_name

    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}, {dimension}]")
    if dtype not in (scriptc.float32, scriptc.float64):
        raise NotImplementedError(f'"_sobol_engine_draw" not implemented for \'{scalar_type_name(dtype)}\'')


class SobolEngine:
    """Draws points of a `dimension`-dimensional Sobol sequence in [0, 1). With scramble=True the sequence
    is randomised (reproducibly with `seed`); draw_base2(m) keeps the balance properties of 2^m points."""

    MAXBIT = MAXBIT
    MAXDIM = MAXDIM

    def __init__(self, dimension: int, scramble: bool = False, seed: int | None = None):
        if dimension > MAXDIM or dimension < 1:
            raise ValueError(f"Supported range of dimensionality for SobolEngine is [1, {MAXDIM}]")
        self.seed = seed
        self.scramble = scramble
        self.dimension = dimension
        self._state = _direction_numbers(dimension)
        self._shift = np.zeros(dimension, dtype=np.int64)
        if scramble:
            self._scramble()
        self._quasi = self._shift.copy()
        self.num_generated = 0

    @property
    def sobolstate(self):
        """The (dimension, MAXBIT) direction numbers as an int64 tensor."""
        import scriptc

        return scriptc.from_numpy(self._state.copy())

    @property
    def quasi(self):
        """The last point drawn, as integers (an int64 tensor of `dimension` values)."""
        import scriptc

        return scriptc.from_numpy(self._quasi.copy())

    def _scramble(self) -> None:
        import scriptc

        generator = scriptc.Generator()
        if self.seed is not None:
            generator.manual_seed(self.seed)
        else:
            generator.seed()
        shift_bits = scriptc.randint(2, (self.dimension, MAXBIT), generator=generator).numpy()
        ltm = np.tril(scriptc.randint(2, (self.dimension, MAXBIT, MAXBIT), generator=generator).numpy())
        self._shift, self._state = _scrambled(self._state, shift_bits, ltm)

    def _advance(self, n: int, keep: bool) -> list:
        points = []
        for _ in range(n):
            self._quasi = self._quasi ^ self._state[:, _rightmost_zero(self.num_generated - 1)]
            self.num_generated += 1
            if keep:
                points.append(self._quasi)
        return points

    def draw(self, n: int = 1, out=None, dtype=None):
        """The next n points, an (n, dimension) tensor of `dtype` (the default float dtype unless given)."""
        import scriptc

        dtype = scriptc.get_default_dtype() if dtype is None else dtype
        first = self.num_generated == 0
        if not (first and n == 1):
            _check_draw_kernel(n - 1 if first else n, self.dimension, dtype)
        points = []
        if first:
            points.append(self._quasi.copy())
            self.num_generated = 1
            n -= 1
        points += self._advance(n, keep=True)
        values = (np.stack(points) if points else np.zeros((0, self.dimension), dtype=np.int64)) / 2.0 ** MAXBIT
        result = scriptc.from_numpy(values).to(dtype)
        if out is not None:
            if tuple(out.shape) != tuple(result.shape):
                # torch resizes `out` to the draw (out.resize_as_); a fresh buffer of out's dtype does that here
                out._data = np.empty(tuple(result.shape), dtype=out._data.dtype)
            return out.copy_(result)
        return result

    def draw_base2(self, m: int, out=None, dtype=None):
        """The next 2^m points; the total drawn must stay a power of two (the sequence's balance)."""
        n = 2 ** m
        total = self.num_generated + n
        if total & (total - 1) != 0:
            raise ValueError("The balance properties of Sobol' points require n to be a power of 2. "
                             f"{self.num_generated} points have been previously generated, then: "
                             f"n={self.num_generated}+2**{m}={total}. If you still want to do this, please use "
                             "'SobolEngine.draw()' instead.")
        return self.draw(n=n, out=out, dtype=dtype)

    def reset(self) -> "SobolEngine":
        """Back to the first point."""
        self._quasi = self._shift.copy()
        self.num_generated = 0
        return self

    def fast_forward(self, n: int) -> "SobolEngine":
        """Skip the next n points."""
        if self.num_generated == 0 and n > 0:
            self.num_generated = 1
            n -= 1
        self._advance(n, keep=False)
        return self

    def __repr__(self) -> str:
        fields = [f"dimension={self.dimension}"]
        if self.scramble:
            fields.append("scramble=True")
        if self.seed is not None:
            fields.append(f"seed={self.seed}")
        return f"SobolEngine({', '.join(fields)})"
