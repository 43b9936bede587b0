"""warnings.warn in scripted code, as TorchScript gives it: attributed to the scripted source line, and
once per call site per call of the scripted function, however often a loop reaches it."""
import warnings

import scriptc as torch


def _warns_in_a_loop(n: int):
    for _ in range(n):
        warnings.warn("inside the loop", stacklevel=2)


def _first():
    warnings.warn("same text", stacklevel=2)


def _second():
    warnings.warn("same text", stacklevel=2)


def _calls_both():
    for _ in range(3):
        _first()
        _second()


def _caught(fn, *args, calls: int = 1):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        for _ in range(calls):
            fn(*args)
    return [(w.category, str(w.message), w.filename, w.lineno) for w in caught]


def test_a_warning_in_a_loop_is_given_once_per_call_at_its_source_line():
    scripted = torch.jit.script(_warns_in_a_loop)
    line = _warns_in_a_loop.__code__.co_firstlineno + 2
    assert _caught(scripted, 5) == [(UserWarning, "inside the loop", __file__, line)]
    assert len(_caught(scripted, 5, calls=3)) == 3


def test_each_call_site_warns_once():
    caught = _caught(torch.jit.script(_calls_both))
    assert [(message, line) for _, message, _, line in caught] == [
        ("same text", _first.__code__.co_firstlineno + 1), ("same text", _second.__code__.co_firstlineno + 1)]


class _WarnsInForward(torch.nn.Module):
    def forward(self, x):
        for _ in range(2):
            warnings.warn("module warning", stacklevel=2)
        return x


def test_a_module_warns_once_per_call():
    scripted = torch.jit.script(_WarnsInForward())
    assert len(_caught(scripted, torch.ones(1), calls=2)) == 2


def test_loaded_and_optimized_modules_warn_once_per_call(tmp_path):
    scripted = torch.jit.script(_WarnsInForward())
    torch.jit.save(scripted, tmp_path / "warns.sc")
    for compiled in (torch.jit.load(tmp_path / "warns.sc"), torch.jit.optimize_for_inference(scripted)):
        assert len(_caught(compiled, torch.ones(1), calls=2)) == 2
