"""Modules and functions in script: attributes of every kind, ModuleList/ModuleDict, interfaces,
properties, export/ignore/unused, overloads, fork/wait, thread settings, and the jit markers in
eager code. Each module is compared with its eager self and run again from a saved archive."""

from __future__ import annotations

import threading
import time
from typing import Dict, List, Tuple

import numpy as np
import pytest

import scriptc as torch
import scriptc.nn as nn
from scriptc.errors import ArchiveError
from scriptc.runtime import load as runtime_load
from scriptc.runtime import parallel

from ..models import Tally


@torch.jit.interface
class Layer(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pass


class Scale(nn.Module):
    def __init__(self, factor: float):
        super().__init__()
        self.factor = factor

    def forward(self, x):
        return x * self.factor


class Everything(nn.Module):
    """Submodule containers, an interface-typed attribute, list/dict/tuple attributes, an attribute
    written by forward, a property, an exported method and an unused one."""

    last: Layer

    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 4)])
        self.heads = nn.ModuleDict({"mean": nn.Linear(4, 2), "scale": nn.Linear(4, 2)})
        self.last = Scale(0.5)
        self.weights: List[float] = [1.0, 0.5]
        self.names: Dict[str, int] = {"calls": 0}
        self.shape = (2, 2)
        self.steps = 0

    @property
    def depth(self) -> int:
        return len(self.blocks)

    def forward(self, x):
        for i, block in enumerate(self.blocks):
            x = torch.relu(block(x)) * self.weights[i]
        outs: List[torch.Tensor] = []
        for _name, head in self.heads.items():
            outs.append(head(x))
        self.steps += 1
        self.names["calls"] = self.names["calls"] + 1
        y = self.last(self.blocks[-1](x)).view(-1, self.shape[1] * 2)
        return torch.cat(outs, 1), y, self.depth + self.count_rows(x)

    @torch.jit.export
    def count_rows(self, x: torch.Tensor) -> int:
        return x.size(0)

    @torch.jit.unused
    def debugging_aid(self, x):
        return x.numpy()


def test_modules_script_with_every_kind_of_attribute(tmp_path):
    torch.manual_seed(0)
    model = Everything().eval()
    scripted = torch.jit.script(model)
    x = torch.randn(3, 4)
    with torch.no_grad():
        expected = model(x)
        got = scripted(x)
    for e, g in zip(expected, got):
        np.testing.assert_allclose(np.asarray(g.numpy() if hasattr(g, "numpy") else g),
                                   np.asarray(e.numpy() if hasattr(e, "numpy") else e), rtol=1e-6)
    # forward's writes reach the scripted module's state, a copy of the module's (as in torch)
    assert model.steps == 1 and model.names == {"calls": 1}
    assert scripted.steps == 1 and scripted.names == {"calls": 1}
    assert scripted.count_rows(x) == 3 and "debugging_aid" not in scripted.graphs

    path = tmp_path / "everything.sc"
    torch.jit.save(scripted, path)
    loaded = runtime_load(path, prime=False)
    for e, g in zip(expected, loaded(x.numpy())):
        np.testing.assert_allclose(np.asarray(g), np.asarray(e.numpy() if hasattr(e, "numpy") else e), rtol=1e-5)


class Overloaded(nn.Module):
    @torch.jit._overload_method  # noqa: F811
    def pick(self, x: int) -> int:
        ...

    @torch.jit._overload_method  # noqa: F811
    def pick(self, x: str) -> str:  # noqa: F811
        ...

    def pick(self, x):  # noqa: F811
        return x + x

    def forward(self, n: int) -> Tuple[int, str]:
        return self.pick(n), self.pick("ab")


def test_overloaded_methods_and_functions():
    assert torch.jit.script(Overloaded())(4) == (8, "abab")

    @torch.jit._overload
    def twice(x: int) -> int:
        ...

    @torch.jit._overload
    def twice(x: float) -> float:  # noqa: F811
        ...

    def twice(x):  # noqa: F811
        return x * 2

    def use(a: int, b: float) -> Tuple[int, float]:
        return twice(a), twice(b)

    assert torch.jit.script(use)(2, 1.5) == (4, 3.0)


def test_ignored_functions_run_in_python_and_unused_ones_raise():
    seen = []

    @torch.jit.ignore
    def record(x: torch.Tensor) -> int:
        seen.append(x.shape[0])
        return len(seen)

    @torch.jit.unused
    def never(x: torch.Tensor) -> torch.Tensor:
        return x

    def fn(x: torch.Tensor, use_never: bool) -> int:
        if use_never:
            never(x)
        return record(x)

    scripted = torch.jit.script(fn)
    assert scripted(torch.ones(5), False) == 1 and seen == [5]
    with pytest.raises(RuntimeError, match="unused"):
        scripted(torch.ones(5), True)
    with pytest.raises(ArchiveError, match="ignore"):
        torch.jit.save(scripted, "unused.sc")


def test_markers_work_in_eager_code():
    assert torch.jit.is_scripting() is False and torch.jit.is_tracing() is False
    assert torch.jit.annotate(List[int], []) == []
    assert torch.jit.isinstance([1, 2], List[int]) and not torch.jit.isinstance([1, "a"], List[int])
    assert torch.jit.wait(torch.jit.fork(lambda a: a + 1, 1)) == 2

    class Eager(nn.Module):
        @torch.jit.unused
        def forward(self, x):
            return torch.jit.is_scripting()

    assert Eager()(torch.ones(1)) is False

    def in_script() -> bool:
        return torch.jit.is_scripting()

    assert torch.jit.script(in_script)() is True


def _slow_square(x: torch.Tensor) -> torch.Tensor:
    for _ in range(200):
        x = torch.sqrt(x * x + 1.0) - 1.0
    return x * x


def forks(x: torch.Tensor) -> torch.Tensor:
    futures = [torch.jit.fork(_slow_square, x + i) for i in range(4)]
    return torch.stack([torch.jit.wait(f) for f in futures]).sum(0)


def test_forked_calls_run_on_interop_threads_in_scripted_and_loaded_code(tmp_path, monkeypatch):
    threads = set()
    run = parallel.Task.run

    def recording_run(task):
        threads.add(threading.current_thread().name)
        run(task)

    monkeypatch.setattr(parallel.Task, "run", recording_run)
    x = torch.rand(8)
    scripted = torch.jit.script(forks)
    np.testing.assert_allclose(scripted(x).numpy(), forks(x).numpy(), rtol=1e-5)
    assert any(name.startswith("scriptc-interop") for name in threads)
    path = tmp_path / "forks.sc"
    torch.jit.save(scripted, path)
    for jit in (False, True):
        np.testing.assert_allclose(runtime_load(path, jit=jit, prime=False)(x.numpy()), forks(x).numpy(), rtol=1e-5)


def test_nested_forks_finish_with_one_interop_thread():
    def inner(x: torch.Tensor) -> torch.Tensor:
        return x + 1

    def outer(x: torch.Tensor) -> torch.Tensor:
        return torch.jit.wait(torch.jit.fork(inner, x)) * 2

    def top(x: torch.Tensor) -> torch.Tensor:
        futures = [torch.jit.fork(outer, x) for _ in range(3)]
        return torch.jit.wait(futures[0]) + torch.jit.wait(futures[2])

    before = torch.get_num_interop_threads()
    torch.set_num_interop_threads(1)
    try:
        started = time.monotonic()
        assert torch.jit.script(top)(torch.zeros(2)).tolist() == [4.0, 4.0]
        assert time.monotonic() - started < 30
    finally:
        torch.set_num_interop_threads(before)


def test_thread_settings():
    before = (torch.get_num_threads(), torch.get_num_interop_threads())
    try:
        torch.set_num_threads(1)
        torch.set_num_interop_threads(2)
        assert (torch.get_num_threads(), torch.get_num_interop_threads()) == (1, 2)

        def settings() -> Tuple[int, int]:
            torch.set_num_threads(2)
            return torch.get_num_threads(), torch.get_num_interop_threads()

        assert torch.jit.script(settings)() == (2, 2)
        with pytest.raises(RuntimeError, match="positive"):
            torch.set_num_threads(0)
        with pytest.raises(TypeError):
            torch.set_num_interop_threads(1.5)
    finally:
        torch.set_num_threads(before[0])
        torch.set_num_interop_threads(before[1])


def test_scripted_modules_train():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    scripted = torch.jit.script(model)
    x = torch.randn(5, 3)
    scripted(x).sum().backward()
    grads = [p.grad.numpy().copy() for p in model.parameters()]
    model.zero_grad()
    model(x).sum().backward()
    for g, p in zip(grads, model.parameters()):
        np.testing.assert_allclose(g, p.grad.numpy(), rtol=1e-5)


def test_autograd_in_scripted_code():
    def grads(x: torch.Tensor, y: torch.Tensor) -> List[torch.Tensor]:
        z = (x * y + x).sum()
        return [g for g in torch.autograd.grad([z], [x, y]) if g is not None]

    x, y = torch.rand(3, requires_grad=True), torch.rand(3, requires_grad=True)
    gx, gy = torch.jit.script(grads)(x, y)
    np.testing.assert_allclose(gx.numpy(), y.detach().numpy() + 1, rtol=1e-6)
    np.testing.assert_allclose(gy.numpy(), x.detach().numpy(), rtol=1e-6)


class Shift(nn.Module):
    def __init__(self, by: float):
        super().__init__()
        self.by = by

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x + y + self.by


class Hooked(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Shift(1.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x, x * 2)


def _double_second(module, inputs: Tuple[torch.Tensor, torch.Tensor]) -> Tuple[torch.Tensor, torch.Tensor]:
    if bool(inputs[0].sum() > 0):
        return inputs[0], inputs[1] * 2
    return inputs


def _add_by(module, inputs: Tuple[torch.Tensor, torch.Tensor], output: torch.Tensor) -> torch.Tensor:
    return output + module.by


def _negate_input(module, inputs: Tuple[torch.Tensor]) -> torch.Tensor:
    return -inputs[0]


def _observe(module, inputs: Tuple[torch.Tensor], output: torch.Tensor) -> None:
    return None


def test_forward_hooks_run_in_script_and_from_archives(tmp_path):
    model = Hooked()
    model.inner.register_forward_pre_hook(_double_second)
    model.inner.register_forward_hook(_add_by)
    model.register_forward_pre_hook(_negate_input)  # a single value stands for the one input
    model.register_forward_hook(_observe)
    scripted = torch.jit.script(model)
    torch.jit.save(scripted, tmp_path / "hooked.sc")
    loaded = runtime_load(tmp_path / "hooked.sc", prime=False)
    for x in (torch.full((3,), -1.0), torch.full((3,), 2.0)):
        expected = model(x).numpy()
        np.testing.assert_allclose(scripted(x).numpy(), expected)
        np.testing.assert_allclose(np.asarray(loaded(x.numpy())), expected)


def test_forward_called_as_a_method_runs_without_the_modules_own_hooks():
    """As torch's: scripted(x) runs the top module's hooks around forward, scripted.forward(x) runs
    forward alone (a submodule's hooks run either way: forward calls the submodule)."""
    model = Hooked()
    model.inner.register_forward_hook(_add_by)
    model.register_forward_pre_hook(_negate_input)
    scripted = torch.jit.script(model)
    x = torch.full((3,), 2.0)
    np.testing.assert_allclose(scripted(x).numpy(), model(x).numpy())
    np.testing.assert_allclose(scripted.forward(x).numpy(), model.forward(x).numpy())
    assert not np.allclose(scripted(x).numpy(), scripted.forward(x).numpy())


def test_out_arguments_resize_their_tensor_as_torch_does(tmp_path):
    def add_into(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
        return torch.add(a, b, out=out)

    scripted = torch.jit.script(add_into)
    a, b = torch.ones(2, 3), torch.full((2, 3), 2.0)
    out = torch.zeros(6)
    result = scripted(a, b, out)
    assert out.shape == (2, 3) and np.array_equal(out.numpy(), np.full((2, 3), 3.0, np.float32))
    assert result.shape == (2, 3)
    torch.jit.save(scripted, tmp_path / "out.sc")
    into = np.zeros(0, np.float32)
    runtime_load(tmp_path / "out.sc", prime=False)(a.numpy(), b.numpy(), into)
    assert np.array_equal(into, np.full((2, 3), 3.0, np.float32))


class Holder(nn.Module):
    """Tensors as plain attributes (alone and in lists and dicts), torch.jit.Attribute, and parameter
    containers."""

    def __init__(self):
        super().__init__()
        self.offset = torch.full((3,), 0.5)
        self.extras = [torch.ones(3), torch.arange(3.0)]
        self.named = {"scale": torch.full((3,), 2.0)}
        self.seen = torch.jit.Attribute([], List[str])
        self.weights = nn.ParameterList([nn.Parameter(torch.ones(3)), nn.Parameter(torch.full((3,), 3.0))])
        self.by_name = nn.ParameterDict({"bias": nn.Parameter(torch.zeros(3))})

    def forward(self, x: torch.Tensor, tag: str) -> Tuple[torch.Tensor, int]:
        self.seen.append(tag)
        y = (x + self.offset) * self.named["scale"]
        for extra in self.extras:
            y = y + extra
        for w in self.weights:
            y = y * w
        y = y + self.weights[0] + self.by_name["bias"] + len(self.weights)
        for _key, p in self.by_name.items():
            y = y - p
        return y, len(self.seen)


def test_tensor_attributes_and_parameter_containers_in_script_and_archives(tmp_path):
    scripted = torch.jit.script(Holder())
    x = torch.arange(3.0)
    with torch.no_grad():
        y, count = scripted(x, "a")
    expected = ((np.arange(3.0) + 0.5) * 2 + 1 + np.arange(3.0)) * 3 + 1 + 2
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-6)
    assert count == 1 and scripted(x, "b")[1] == 2
    torch.jit.save(scripted, tmp_path / "holder.sc")
    loaded = runtime_load(tmp_path / "holder.sc", prime=False)
    y2, count2 = loaded(x.numpy(), "c")
    np.testing.assert_allclose(np.asarray(y2), expected, rtol=1e-6)
    assert count2 == 3  # the two calls before saving are in the saved attribute


class FlatWeights(nn.Module):
    """A plain list attribute holding the module's parameters (as nn.RNN's _flat_weights does)."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.full((3,), 2.0))
        self.flat = [self.weight]
        self.named = {"w": self.weight}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.flat[0] + self.named["w"]


def test_scripted_calls_keep_the_parameters_in_list_and_dict_attributes():
    module = FlatWeights()
    with torch.no_grad():
        torch.jit.script(module)(torch.ones(3))
    assert module.flat[0] is module.weight and module.named["w"] is module.weight
    module(torch.ones(3)).sum().backward()
    np.testing.assert_allclose(module.weight.grad.numpy(), np.full(3, 2.0))


@torch.jit.script
def _twice(x: torch.Tensor) -> torch.Tensor:
    return x + x


class Calls(nn.Module):
    """A function held as an attribute (scripted, an op, a plain function), a child already
    scripted, a torch.jit.Final constant, and a child that asks to be replaced when scripted."""

    limit: torch.jit.Final[int]

    def __init__(self, fn):
        super().__init__()
        self.fn = fn
        self.limit = 2
        self.scripted_child = torch.jit.script(Scale(3.0))
        self.swapped = nn.Sequential(SwappedWhenScripted())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.swapped(self.scripted_child(self.fn(x))) + self.limit


class SwappedWhenScripted(nn.Module):
    def forward(self, x):
        return x * 100

    def __prepare_scriptable__(self):
        return nn.Identity()


def _scale_free(x: torch.Tensor) -> torch.Tensor:
    return x * 0.5 - 1


@pytest.mark.parametrize("fn", [_twice, torch.sigmoid, _scale_free])
def test_function_attributes_scripted_children_and_prepare_scriptable(fn, tmp_path):
    model = Calls(fn)
    scripted = torch.jit.script(model)
    x = torch.arange(3.0)
    expected = fn(x).numpy() * 3.0 + 2  # the swapped child is the identity once scripted
    np.testing.assert_allclose(scripted(x).numpy(), expected, rtol=1e-6)
    assert isinstance(scripted, nn.Module) and isinstance(model.scripted_child, nn.Module)
    torch.jit.save(scripted, tmp_path / "calls.sc")
    np.testing.assert_allclose(np.asarray(runtime_load(tmp_path / "calls.sc", prime=False)(x.numpy())), expected,
                               rtol=1e-6)


class CountsCalls(nn.Module):
    def __init__(self):
        super().__init__()
        self.counter = Tally(10)

    def forward(self, x: torch.Tensor) -> Tuple[torch.Tensor, List[int]]:
        return x * self.counter.step(), self.counter.history


def _read_count(c: Tally, x: torch.Tensor) -> torch.Tensor:
    return x + c.count


def _new_counter(start: int) -> Tally:
    return Tally(start)


def test_class_instances_as_attributes_arguments_results_and_in_archives(tmp_path):
    scripted = torch.jit.script(CountsCalls())
    x = torch.ones(2)
    assert scripted(x)[1] == [11] and scripted(x)[1] == [11, 12]  # the object's state lives on in the module
    torch.jit.save(scripted, tmp_path / "counts.sc")
    y, history = runtime_load(tmp_path / "counts.sc", prime=False)(x.numpy())
    assert history == [11, 12, 13] and np.asarray(y).tolist() == [13.0, 13.0]
    assert torch.jit.script(_read_count)(Tally(4), x).tolist() == [5.0, 5.0]
    made = torch.jit.script(_new_counter)(3)
    assert made.count == 3 and made.history == []


def test_one_object_carries_the_state_through_autograd_and_plain_calls_into_the_archive(tmp_path):
    model = CountsCalls()
    model.scale = nn.Linear(2, 2)  # a parameter wanting grad: a call outside no_grad runs with autograd
    scripted = torch.jit.script(model)
    x = torch.ones(2)
    assert scripted(x)[1] == [11]
    with torch.no_grad():
        assert scripted(x)[1] == [11, 12]
    assert scripted(x)[1] == [11, 12, 13]
    torch.jit.save(scripted, tmp_path / "counts.sc")
    assert runtime_load(tmp_path / "counts.sc", prime=False)(x.numpy())[1] == [11, 12, 13, 14]


class Plus(nn.Module):
    def forward(self, x):
        return x + 10


class CustomDict(nn.ModuleDict):
    """A ModuleDict subclass whose forward iterates itself."""

    def __init__(self):
        super().__init__({"one": Plus(), "two": nn.ReLU()})

    def forward(self, x):
        names: List[str] = []
        for name, module in self.items():
            x = module(x)
            names.append(name)
        return names, x


class CountedList(nn.ModuleList):
    def __len__(self):
        return 7


class Containers(nn.Module):
    def __init__(self):
        super().__init__()
        self.relu = nn.ReLU()
        self.listed = CountedList([nn.ReLU()])
        self.sequence = nn.Sequential(self.relu)
        self.by_name = CustomDict()

    def forward(self, x):
        assert self.relu is self.relu and self.by_name["two"] is not self.relu
        assert "one" in self.by_name and "three" not in self.by_name
        names, y = self.by_name(x)
        return names, y, len(self.listed)


def test_container_subclasses_identity_membership_and_their_own_len(tmp_path):
    module = Containers()
    x = torch.tensor([-20.0, 1.0])
    expected = module(x)
    scripted = torch.jit.script(module)
    got = scripted(x)
    assert got[0] == expected[0] == ["one", "two"] and got[2] == expected[2] == 7
    np.testing.assert_allclose(got[1].numpy(), expected[1].numpy())
    torch.jit.save(scripted, tmp_path / "containers.sc")
    loaded = runtime_load(tmp_path / "containers.sc", prime=False)
    np.testing.assert_allclose(np.asarray(loaded(x.numpy())[1]), expected[1].numpy())


class _TakesOneOrMany(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)

    @torch.jit._overload_method  # noqa: F811
    def forward(self, input: List[torch.Tensor]) -> torch.Tensor:  # noqa: F811
        pass

    @torch.jit._overload_method  # noqa: F811
    def forward(self, input: torch.Tensor) -> torch.Tensor:  # noqa: F811
        pass

    def forward(self, input: torch.Tensor) -> torch.Tensor:  # noqa: F811
        if isinstance(input, torch.Tensor):
            features = [input]
        else:
            features = input
        return self.lin(torch.cat(features, 0))


class _CallsBothForms(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = _TakesOneOrMany()

    def forward(self, x):
        y = self.layer([x, x])
        return self.layer(y) + y.sum()


def test_calling_a_submodule_picks_the_forward_overload_its_arguments_fit():
    model = _CallsBothForms()
    x = torch.randn(1, 2)
    np.testing.assert_allclose(torch.jit.script(model)(x).detach().numpy(), model(x).detach().numpy(), rtol=1e-6)
