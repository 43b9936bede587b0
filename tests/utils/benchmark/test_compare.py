"""Compare's tables against torch.utils.benchmark's, from the same measurements: labels, sub-labels,
descriptions, thread groups, environments, trimmed figures, colors and variance warnings."""

from __future__ import annotations

import pytest

import scriptc.utils.benchmark as ours

torch = pytest.importorskip("torch")
theirs = pytest.importorskip("torch.utils.benchmark")

# (raw times, label, sub_label, description, num_threads, env)
SPECS = [
    ([1.2e-5, 1.3e-5, 1.25e-5, 1.21e-5], "add", "64", "eager", 1, None),
    ([2.4e-5, 2.5e-5, 2.45e-5, 2.41e-5], "add", "64", "scripted", 1, None),
    ([3.0e-4, 3.1e-4, 2.9e-4, 4.5e-4], "add", "1024", "eager", 1, None),
    ([1.0e-4, 1.1e-4, 1.0e-4, 1.02e-4], "add", "1024", "scripted", 2, None),
    ([5.5e-3, 5.6e-3, 5.4e-3, 5.5e-3], "mm", "square", "eager", 1, "base"),
    ([7.5e-2, 9.6e-2, 6.4e-2, 7.5e-2], "mm", "wide", "eager", 1, "other"),
]


def _measurements(lib):
    out = []
    for raw, label, sub_label, description, threads, env in SPECS:
        spec = lib.TaskSpec if lib is ours else theirs.utils.common.TaskSpec
        task = spec(stmt="x + x", setup="pass", label=label, sub_label=sub_label, description=description,
                    num_threads=threads, env=env)
        out.append(lib.Measurement(1, raw, task))
    return out


@pytest.mark.parametrize("configure", [
    lambda c: None,
    lambda c: c.trim_significant_figures(),
    lambda c: c.colorize(),
    lambda c: (c.colorize(rowwise=True), c.trim_significant_figures()),
    lambda c: c.highlight_warnings(),
])
def test_tables_match_torch(configure):
    mine, reference = ours.Compare(_measurements(ours)), theirs.Compare(_measurements(theirs))
    configure(mine)
    configure(reference)
    assert str(mine) == str(reference)


def test_extend_results_takes_only_measurements():
    compare = ours.Compare(_measurements(ours)[:1])
    compare.extend_results(_measurements(ours)[1:2])
    assert "scripted" in str(compare)
    with pytest.raises(ValueError, match="Expected an instance of `Measurement`"):
        compare.extend_results([1.0])
