"""torch.quasirandom.SobolEngine against torch 2.13: direction numbers, draws, fast_forward, reset,
draw_base2, scrambling (given torch's random bits) and errors."""

import numpy as np
import pytest

import scriptc
from scriptc.quasirandom import SobolEngine, _direction_numbers, _scrambled

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("dimension", [1, 2, 7, 40, 1000])
def test_direction_numbers_match_torch(dimension):
    assert np.array_equal(SobolEngine(dimension).sobolstate.numpy(),
                          torch.quasirandom.SobolEngine(dimension).sobolstate.numpy())


def _drive(engine, lib):
    draws = [engine.draw(), engine.draw(5), engine.draw(3, dtype=lib.float64)]
    engine.fast_forward(7)
    draws.append(engine.draw_base2(4))
    engine.reset()
    engine.fast_forward(1)
    draws.append(engine.draw(2))
    return draws, engine.num_generated, engine.quasi.tolist()


@pytest.mark.parametrize("dimension", [1, 3, 25])
def test_draws_match_torch(dimension):
    ours, theirs = _drive(SobolEngine(dimension), scriptc), _drive(torch.quasirandom.SobolEngine(dimension), torch)
    assert ours[1:] == theirs[1:]
    for a, b in zip(ours[0], theirs[0]):
        assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
        assert np.array_equal(a.numpy(), b.numpy())


def test_scrambling_matches_torch_for_the_same_random_bits():
    generator = torch.Generator()
    generator.manual_seed(7)
    shift_bits = torch.randint(2, (6, 30), generator=generator)
    ltm = torch.randint(2, (6, 30, 30), generator=generator).tril()
    shift, state = _scrambled(_direction_numbers(6), shift_bits.numpy(), ltm.numpy())
    reference = torch.quasirandom.SobolEngine(6, scramble=True, seed=7)
    assert np.array_equal(shift, reference.shift.numpy()) and np.array_equal(state, reference.sobolstate.numpy())


def test_scrambled_points_are_seeded_and_balanced():
    points = SobolEngine(4, scramble=True, seed=3).draw_base2(6).numpy()
    assert np.array_equal(points, SobolEngine(4, scramble=True, seed=3).draw_base2(6).numpy())
    assert not np.array_equal(points, SobolEngine(4, scramble=True, seed=4).draw_base2(6).numpy())
    for column in points.T:  # one point in each of the 64 equal intervals of every coordinate
        assert sorted(np.floor(column * 64).astype(int).tolist()) == list(range(64))


def test_out_argument_and_repr():
    out = scriptc.empty(0)
    result = SobolEngine(2).draw(4, out=out)
    assert result is out and out.shape == (4, 2)
    for lib in (scriptc, torch):
        assert repr(lib.quasirandom.SobolEngine(3, scramble=True, seed=1)) == "SobolEngine(dimension=3, scramble=True, " \
                                                                              "seed=1)"


def test_errors():
    with pytest.raises(ValueError, match=r"Supported range of dimensionality for SobolEngine is \[1, "):
        SobolEngine(0)
    engine, reference = SobolEngine(2), torch.quasirandom.SobolEngine(2)
    engine.draw(3)
    reference.draw(3)
    with pytest.raises(ValueError) as ours:
        engine.draw_base2(2)
    with pytest.raises(ValueError) as theirs:
        reference.draw_base2(2)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("already_drawn", [0, 2])
@pytest.mark.parametrize("n, dtype_name", [(0, "float32"), (-1, "float32"), (2, "float16"), (2, "bfloat16"),
                                           (2, "int64"), (-1, "float16"), (2, "float64")])
def test_draw_refuses_what_torch_refuses(already_drawn, n, dtype_name):
    """torch's draw kernel refuses a negative count (a fresh engine asks it for n - 1 points after the
    first one, so draw(0) fails there but not later) and every dtype but float32/float64."""
    outcomes = []
    for lib in (scriptc, torch):
        engine = lib.quasirandom.SobolEngine(2)
        if already_drawn:
            engine.draw(already_drawn)
        try:
            points = engine.draw(n, dtype=getattr(lib, dtype_name))
        except (RuntimeError, NotImplementedError) as error:
            outcomes.append((type(error), str(error), engine.num_generated))
        else:
            outcomes.append((points.numpy().tolist(), engine.num_generated))
    assert outcomes[0] == outcomes[1]


def test_first_point_alone_takes_any_dtype():
    for lib in (scriptc, torch):
        assert str(lib.quasirandom.SobolEngine(2).draw(1, dtype=lib.float16).dtype).endswith("float16")
