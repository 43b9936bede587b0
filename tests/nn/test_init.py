"""nn.init.dirac_ and sparse_ against torch 2.13: values (dirac_), structure and statistics (sparse_), errors."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc

from .differential import same_error

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("shape, groups", [((4, 2, 3), 2), ((6, 3, 3, 3), 1), ((2, 4, 1, 3, 3), 2), ((3, 5, 3), 1)])
def test_dirac_matches_torch(shape, groups):
    np.testing.assert_array_equal(scriptc.nn.init.dirac_(scriptc.empty(*shape), groups=groups).numpy(),
                                  torch.nn.init.dirac_(torch.empty(*shape), groups=groups).numpy())


def test_dirac_weight_passes_channels_through():
    conv = scriptc.nn.Conv2d(3, 3, 3, padding=1, bias=False)
    scriptc.nn.init.dirac_(conv.weight)
    x = scriptc.randn(1, 3, 5, 5)
    np.testing.assert_allclose(conv(x).detach().numpy(), x.numpy(), rtol=1e-6)


def test_sparse_zeros_a_fraction_of_each_column():
    w = scriptc.nn.init.sparse_(scriptc.empty(20, 6), 0.25, std=0.5, generator=scriptc.Generator().manual_seed(0))
    values = w.numpy()
    assert ((values == 0).sum(0) == 5).all()
    assert 0.2 < values[values != 0].std() < 1.0


@pytest.mark.parametrize("fn", [lambda T: T.nn.init.dirac_(T.empty(2, 2)),
                                lambda T: T.nn.init.dirac_(T.empty(3, 2, 3), groups=2),
                                lambda T: T.nn.init.sparse_(T.empty(2, 2, 2), 0.5)])
def test_bad_input_raises_torch_error(fn):
    same_error(torch, fn)


@pytest.mark.parametrize("name, args", [("uniform", (-1.0, 1.0)), ("normal", ()), ("constant", (0.5,)),
                                        ("xavier_uniform", ()), ("xavier_normal", ()), ("kaiming_uniform", ()),
                                        ("kaiming_normal", ()), ("orthogonal", ()), ("sparse", (0.5,)),
                                        ("eye", ())])
def test_deprecated_spellings_warn_and_initialise(name, args):
    scriptc.manual_seed(0)
    with pytest.warns(FutureWarning, match=f"`nn.init.{name}` is now deprecated in favor of `nn.init.{name}_`"):
        old = getattr(scriptc.nn.init, name)(scriptc.zeros(4, 6), *args)
    scriptc.manual_seed(0)
    new = getattr(scriptc.nn.init, name + "_")(scriptc.zeros(4, 6), *args)
    np.testing.assert_array_equal(old.numpy(), new.numpy())


@pytest.mark.parametrize("initializer", [
    lambda init, t: init.uniform_(t), lambda init, t: init.normal_(t), lambda init, t: init.trunc_normal_(t),
    lambda init, t: init.constant_(t, 0.5), lambda init, t: init.ones_(t), lambda init, t: init.zeros_(t),
    lambda init, t: init.eye_(t), lambda init, t: init.xavier_uniform_(t), lambda init, t: init.kaiming_normal_(t),
    lambda init, t: init.orthogonal_(t), lambda init, t: init.sparse_(t, 0.5),
], ids=["uniform", "normal", "trunc_normal", "constant", "ones", "zeros", "eye", "xavier_uniform", "kaiming_normal",
        "orthogonal", "sparse"])
def test_initializers_leave_a_meta_tensor_meta(initializer):
    for lib in (scriptc, torch):
        t = lib.empty(1 << 16, 1 << 16, device="meta")  # (drawing its values would take 16 GiB)
        assert initializer(lib.nn.init, t) is t and t.is_meta
