"""torch.Generator in scripted code: making one, seeding it, and torch.manual_seed (random ops take
a generator through their `generator=` argument)."""

from __future__ import annotations

from scriptc.types import GeneratorT, Int, NoneType

from .generator import Generator, manual_seed
from .pyvalues import fixed, python_op

# Each makes or reseeds a stream: effects, so no pass merges or drops one.
python_op("Generator(device: Device? = None) -> Generator",
          lambda device=None: Generator("cpu" if device is None else device), fixed(GeneratorT),
          "torch.Generator(device) in scripted code: a new generator, seeded as torch seeds one.", effects=True)
python_op("manual_seed.generator(self: Generator, seed: int) -> Generator", lambda g, seed: g.manual_seed(seed),
          fixed(GeneratorT), "Generator.manual_seed(seed): restart its stream from `seed`; returns it.",
          mutates=("self",), effects=True)
python_op("seed.generator(self: Generator) -> int", lambda g: g.seed(), fixed(Int),
          "Generator.seed(): reseed from the operating system's entropy; returns the seed.", mutates=("self",),
          effects=True)
python_op("initial_seed.generator(self: Generator) -> int", lambda g: g.initial_seed(), fixed(Int),
          "Generator.initial_seed(): the seed its stream started from.")
python_op("manual_seed(seed: int) -> None", lambda seed: manual_seed(seed) and None, fixed(NoneType),
          "torch.manual_seed(seed) in scripted code: reseed the default generator.", effects=True)
