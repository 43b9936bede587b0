"""torch.nn.modules import paths that published code uses reach the same classes as scriptc.nn's."""

from __future__ import annotations

import importlib

import pytest

import scriptc

torch = pytest.importorskip("torch")

IMPORTS = [("batchnorm", "BatchNorm2d"), ("batchnorm", "_BatchNorm"), ("conv", "_ConvNd"), ("conv", "Conv2d"),
           ("module", "Module"), ("loss", "_Loss"), ("activation", "MultiheadAttention"), ("container", "Sequential"),
           ("utils", "_pair"), ("utils", "_ntuple"), ("instancenorm", "_InstanceNorm"), ("linear", "Identity"),
           ("conv", "LazyConv2d"), ("linear", "LazyLinear")]


@pytest.mark.parametrize("family, name", IMPORTS)
def test_a_name_imported_from_nn_modules_is_scriptc_nns(family, name):
    ours = getattr(importlib.import_module(f"scriptc.nn.modules.{family}"), name)
    assert hasattr(importlib.import_module(f"torch.nn.modules.{family}"), name)
    home = scriptc.nn.common if family == "utils" else importlib.import_module(f"scriptc.nn.{family}")
    assert ours is getattr(scriptc.nn, name, None) or ours is getattr(home, name)


def test_the_package_exports_the_layers_and_the_tuple_helpers():
    assert scriptc.nn.modules.Conv2d is scriptc.nn.Conv2d and scriptc.nn.modules.BatchNorm2d is scriptc.nn.BatchNorm2d
    assert scriptc.nn.modules.utils._pair(3) == torch.nn.modules.utils._pair(3) == (3, 3)
    assert scriptc.nn.modules.utils._triple((1, 2, 3)) == torch.nn.modules.utils._triple((1, 2, 3))
