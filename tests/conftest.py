"""Suite-wide property: every graph a test builds verifies and round-trips through its text form."""

from __future__ import annotations

import pytest

from scriptc.ir import graph as graph_module


def pytest_configure(config):
    config.addinivalue_line("markers", "invalid_graphs: the test builds graphs that are meant to fail verify")
    config.addinivalue_line("markers", "large_graphs: the test's graphs are too large to round-trip here (as "
                                       "long again as the test); the test loads them, which parses and verifies")


@pytest.fixture(autouse=True)
def every_graph_verifies_and_round_trips(request, monkeypatch):
    built: list = []
    original_init = graph_module.Graph.__init__

    def recording_init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        built.append(self)

    monkeypatch.setattr(graph_module.Graph, "__init__", recording_init)
    yield
    monkeypatch.setattr(graph_module.Graph, "__init__", original_init)
    if request.node.get_closest_marker("invalid_graphs") or request.node.get_closest_marker("large_graphs"):
        return
    from scriptc.ir import parse, print_graph, verify

    for g in built:
        if not g.outputs and not len(g.block):
            continue
        verify(g)
        text = print_graph(g)  # every constant's values: str(g) shortens large ones
        assert print_graph(parse(text)) == text, "print -> parse -> print changed the graph text"


@pytest.fixture
def torch_validation_kept():
    """torch.compile's first use imports torch._dynamo, which turns off torch.distributions' argument
    validation for the whole process; other tests compare against that validation, so a test that
    reaches torch._dynamo puts it back."""
    torch = pytest.importorskip("torch")
    validating = torch.distributions.Distribution._validate_args
    yield
    torch.distributions.Distribution.set_default_validate_args(validating)
