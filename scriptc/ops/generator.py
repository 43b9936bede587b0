"""torch.Generator: a seeded source of random numbers, and the default one every random op draws from.

A Generator wraps numpy's PCG64 bit generator. Random ops take `generator=`
(a Generator or None for `default_generator`). In a graph a generator is not
a value: tracing a call that passes one records `None` there and warns (the
traced graph draws from the default generator on every call), and archives
never hold generator state.
"""

from __future__ import annotations

import os

import numpy as np

# What torch seeds a new Generator with (its default_rng_seed_val).
DEFAULT_SEED = 67280421310721
_U64 = 1 << 64
_MAGIC = b"SCRNG1"
# magic, seed, PCG64 state and increment (128 bits each), has_uint32 flag, the buffered uint32
_STATE_BYTES = len(_MAGIC) + 8 + 16 + 16 + 1 + 4


def _check_seed(seed) -> int:
    """torch's seed rules: an int in [-2**63, 2**64); negative seeds wrap to 2**64 + seed."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        try:
            seed = int(seed)
        except (TypeError, ValueError):
            raise TypeError(f"manual_seed expected a long, but got {type(seed).__name__}") from None
    seed = int(seed)
    if not -(1 << 63) <= seed < _U64:
        raise ValueError("Overflow when unpacking long long")
    return seed % _U64


class Generator:
    """torch.Generator(device='cpu'): pass as `generator=` to any random op for a reproducible stream.

    manual_seed(seed) returns the generator; get_state()/set_state() save and restore it as a
    uint8 tensor (scriptc's own layout, not interchangeable with torch's).
    """

    def __init__(self, device="cpu"):
        from scriptc.types import device as make_device

        self._device = make_device(device)
        if self._device.type == "cuda":
            from scriptc import cuda
            cuda.require()
        self.manual_seed(DEFAULT_SEED)

    @property
    def device(self):
        return self._device

    def manual_seed(self, seed) -> "Generator":
        """Reseed: the stream restarts from `seed`. Returns self."""
        self._seed = _check_seed(seed)
        self.rng = np.random.Generator(np.random.PCG64(self._seed))
        return self

    def seed(self) -> int:
        """Reseed from the operating system's entropy and return the new seed."""
        new_seed = int.from_bytes(os.urandom(8), "little")
        self.manual_seed(new_seed)
        return new_seed

    def initial_seed(self) -> int:
        """The seed the stream started from."""
        return self._seed

    def get_state(self):
        """The generator's state as a uint8 tensor (restore it with set_state)."""
        from scriptc.tensors import wrap

        state = self.rng.bit_generator.state
        raw = (_MAGIC + self._seed.to_bytes(8, "little")
               + state["state"]["state"].to_bytes(16, "little") + state["state"]["inc"].to_bytes(16, "little")
               + bytes([state["has_uint32"]]) + int(state["uinteger"]).to_bytes(4, "little"))
        return wrap(np.frombuffer(raw, dtype=np.uint8).copy())

    def set_state(self, new_state) -> "Generator":
        """Restore a state returned by get_state(). Returns self."""
        from scriptc.tensors import Tensor

        if not isinstance(new_state, Tensor) or new_state._data.dtype != np.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        raw = new_state._data.tobytes()
        if len(raw) != _STATE_BYTES or not raw.startswith(_MAGIC):
            raise RuntimeError(f"Expected a scriptc generator state of size {_STATE_BYTES} but found the input "
                               f"RNG state size to be {len(raw)}")
        at = len(_MAGIC)
        seed = int.from_bytes(raw[at:at + 8], "little")
        value = int.from_bytes(raw[at + 8:at + 24], "little")
        inc = int.from_bytes(raw[at + 24:at + 40], "little")
        bits = np.random.PCG64()
        bits.state = {"bit_generator": "PCG64", "state": {"state": value, "inc": inc},
                      "has_uint32": raw[at + 40], "uinteger": int.from_bytes(raw[at + 41:at + 45], "little")}
        self._seed = seed
        self.rng = np.random.Generator(bits)
        return self

    def __reduce__(self):
        return (_restore, (str(self._device), self.get_state()._data.tobytes()))

    def __repr__(self) -> str:
        return f"<torch._C.Generator object at {id(self):#x}>"


def _restore(device, raw: bytes) -> Generator:
    from scriptc.tensors import wrap

    return Generator(device).set_state(wrap(np.frombuffer(raw, dtype=np.uint8).copy()))


default_generator = Generator()
default_generator.seed()  # like torch, a process starts from a nondeterministic seed


def manual_seed(seed) -> Generator:
    """Seed the default generator (behind rand, randn, dropout, init, ...); returns it."""
    return default_generator.manual_seed(seed)


def generator(xp=np, gen: Generator | None = None):
    """The random source for array module `xp`: numpy's Generator behind `gen` (default_generator when
    None), or for another array module (cupy) its own generator seeded from that stream."""
    if gen is not None and not isinstance(gen, Generator):
        raise TypeError(f"expected a torch.Generator for 'generator', but got {type(gen).__name__}")
    rng = (gen or default_generator).rng
    if xp is np:
        return rng
    return xp.random.default_rng(int(rng.integers(1 << 63)))
