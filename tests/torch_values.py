"""Comparing scriptc values with torch's: tensors, Size, dtypes, devices and the containers holding them."""

from __future__ import annotations

import numpy as np

import scriptc


def assert_same_values(ours, theirs, torch) -> None:
    """ours (scriptc) holds the same values as theirs (torch), in the same container types."""
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, scriptc.Tensor), type(ours)
        assert isinstance(ours, scriptc.nn.Parameter) == isinstance(theirs, torch.nn.Parameter)
        assert ours.requires_grad == theirs.requires_grad
        assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
        assert tuple(ours.shape) == tuple(theirs.shape)
        np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())
    elif isinstance(theirs, torch.Size):
        assert type(ours) is scriptc.Size and tuple(ours) == tuple(theirs)
    elif isinstance(theirs, torch.dtype):
        assert ours is getattr(scriptc, str(theirs).removeprefix("torch."))
    elif isinstance(theirs, torch.device):
        assert ours == scriptc.device(str(theirs))
    elif isinstance(theirs, dict):
        assert type(ours) is type(theirs) and list(ours) == list(theirs)
        for key in theirs:
            assert_same_values(ours[key], theirs[key], torch)
    elif isinstance(theirs, (list, tuple)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            assert_same_values(a, b, torch)
    else:
        assert type(ours) is type(theirs) and ours == theirs


def as_backend(module, value):
    """numpy arrays as tensors of `module` (torch or scriptc), through lists, tuples and dicts; other
    values as given."""
    if isinstance(value, np.ndarray):
        return module.from_numpy(value.copy())
    if isinstance(value, dict):
        return {k: as_backend(module, v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(as_backend(module, v) for v in value)
    return value
