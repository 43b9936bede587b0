"""symbolic_trace and Tracer: what is recorded, how the code and graph print (against torch 2.13's
text for the same program), and the errors a traced value raises."""

from __future__ import annotations

import math

import numpy as np
import pytest

import scriptc
from scriptc import fx


def scaled(x, factor):
    return x * factor


fx.wrap("scaled")


def make_net(torch):
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, padding=1)
            self.bn = nn.BatchNorm2d(4)

        def forward(self, x):
            return torch.relu(self.bn(self.conv(x))) + torch.ones(1)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()
            self.head = nn.Sequential(nn.Flatten(), nn.Linear(4 * 5 * 5, 6))
            self.scale = nn.Parameter(torch.ones(6))
            self.register_buffer("shift", torch.zeros(6))

        def forward(self, x, *, factor=2.0):
            y = self.block(x)
            a, b = y.chunk(2, dim=1)
            z = torch.cat([b, a], 1)
            out = self.head(z) * factor * self.scale + self.shift
            return out.softmax(-1) / math.sqrt(out.shape[-1]), out[:, 1:]

    return Net


def numpy_of(value):
    return value.detach().numpy() if hasattr(value, "detach") else np.asarray(value)


def test_module_code_graph_and_readable_print_as_torch_prints_them():
    torch = pytest.importorskip("torch")
    ours, theirs = fx.symbolic_trace(make_net(scriptc)()), torch.fx.symbolic_trace(make_net(torch)())
    assert ours.code == theirs.code
    assert str(ours.graph) == str(theirs.graph)
    assert ours.print_readable(print_output=False) == theirs.print_readable(print_output=False)
    assert type(ours).__name__ == "Net"
    assert [name for name, _ in ours.named_modules()] == [name for name, _ in theirs.named_modules()]


def test_traced_module_computes_what_the_module_computes():
    scriptc.manual_seed(0)
    net = make_net(scriptc)().eval()
    traced = fx.symbolic_trace(net)
    x = scriptc.randn(2, 3, 5, 5)
    for got, want in zip(traced(x, factor=3.0), net(x, factor=3.0)):
        np.testing.assert_allclose(numpy_of(got), numpy_of(want), rtol=1e-6, atol=1e-6)
    assert set(traced.state_dict()) == {"scale", "shift", "block.conv.weight", "block.conv.bias",
                                        "block.bn.weight", "block.bn.bias", "block.bn.running_mean",
                                        "block.bn.running_var", "block.bn.num_batches_tracked",
                                        "head.1.weight", "head.1.bias", "_tensor_constant0"}


def test_functions_varargs_and_tensor_constants_on_either_side():
    torch = pytest.importorskip("torch")

    def program(torch):
        def f(x, *rest, **options):
            return (torch.ones(3) + x) * rest[0] - torch.zeros(3)[0] + x[rest[0].argmax()]
        return f
    ours, theirs = fx.symbolic_trace(program(scriptc)), torch.fx.symbolic_trace(program(torch))
    assert ours.code == theirs.code
    x, y = np.arange(3.0, dtype=np.float32), np.array([2.0, 5.0, 1.0], dtype=np.float32)
    np.testing.assert_allclose(ours(scriptc.tensor(x), scriptc.tensor(y)).numpy(),
                               theirs(torch.tensor(x), torch.tensor(y)).numpy())


def test_concrete_args_specialize_and_record_the_assertion():
    torch = pytest.importorskip("torch")

    def program(torch):
        def f(x, flag):
            if flag:
                return x + 1
            return x - 1
        return f
    ours = fx.symbolic_trace(program(scriptc), concrete_args={"flag": True})
    assert ours.code == torch.fx.symbolic_trace(program(torch), concrete_args={"flag": True}).code
    assert ours(scriptc.ones(2), True).tolist() == [2.0, 2.0]
    with pytest.raises(AssertionError, match="flag has been specialized to have value True"):
        ours(scriptc.ones(2), False)


def test_custom_tracer_keeps_a_user_module_as_a_leaf():
    net = make_net(scriptc)()
    block_type = type(net.block)

    class BlockLeaves(fx.Tracer):
        def is_leaf_module(self, m, module_qualified_name):
            return isinstance(m, block_type) or super().is_leaf_module(m, module_qualified_name)
    graph = BlockLeaves().trace(net)
    calls = [n.target for n in graph.nodes if n.op == "call_module"]
    assert calls == ["block", "head.0", "head.1"]
    module = fx.GraphModule(net, graph)
    x = scriptc.randn(1, 3, 5, 5)
    np.testing.assert_allclose(module(x)[0].detach().numpy(), net(x)[0].detach().numpy(), rtol=1e-6)


def test_control_flow_iteration_and_len_on_traced_values_are_refused():
    def branch(x):
        return x if x.sum() > 0 else -x

    def loop(x):
        return [v for v in x]

    def length(x):
        return len(x)
    with pytest.raises(fx.proxy.TraceError, match="cannot be used as inputs to control flow"):
        fx.symbolic_trace(branch)
    with pytest.raises(fx.proxy.TraceError, match="Proxy object cannot be iterated"):
        fx.symbolic_trace(loop)
    with pytest.raises(RuntimeError, match=r"'len' is not supported in symbolic tracing by default.*fx.wrap\('len'\)"):
        fx.symbolic_trace(length)
    assert issubclass(fx.proxy.TraceError, ValueError)


def test_wrap_records_one_call_and_refuses_misuse():
    traced = fx.symbolic_trace(lambda x: scaled(x, 3))
    node = next(n for n in traced.graph.nodes if n.op == "call_function")
    assert node.target is scaled and node.meta["is_wrapped"]
    assert 'torch.fx._symbolic_trace.wrap("' in traced.code
    assert traced(scriptc.ones(2)).tolist() == [3.0, 3.0]
    with pytest.raises(RuntimeError, match="Must be either a callable or string name"):
        fx.wrap(3)
    with pytest.raises(NotImplementedError, match="wrap must be called at the top level of a module"):
        fx.wrap("len")


def test_patched_namespaces_are_restored_after_a_trace():
    relu, add = scriptc.relu, scriptc.Tensor.__add__
    with pytest.raises(fx.proxy.TraceError):
        fx.symbolic_trace(lambda x: scriptc.relu(x) if x else x)
    assert scriptc.relu is relu and scriptc.Tensor.__add__ is add
    assert scriptc.nn.Module.__call__ is not None and not fx._symbolic_trace.is_fx_tracing()


def test_param_shapes_constant_reads_the_parameter_shape():
    class Model(scriptc.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = scriptc.nn.Parameter(scriptc.ones(4, 3))

        def forward(self, x):
            if self.weight.shape[0] == 4:
                return x @ self.weight.t()
            return x
    traced = fx.GraphModule(Model(), fx.Tracer(param_shapes_constant=True).trace(Model()))
    assert traced(scriptc.ones(2, 3)).shape == (2, 4)
    with pytest.raises(fx.proxy.TraceError):
        fx.symbolic_trace(Model())


def test_graph_module_scripts_traces_and_optimizes_like_the_module():
    def f(x, y):
        return scriptc.relu(x) @ y.t() + x.sum()
    traced = fx.symbolic_trace(f)
    x, y = scriptc.randn(3, 4), scriptc.randn(5, 4)
    want = f(x, y).numpy()
    np.testing.assert_allclose(scriptc.jit.script(traced)(x, y).numpy(), want, rtol=1e-5)
    np.testing.assert_allclose(scriptc.jit.trace(traced, (x, y))(x, y).numpy(), want, rtol=1e-5)
    net = make_net(scriptc)().eval()
    module = fx.symbolic_trace(net)
    image = scriptc.randn(2, 3, 5, 5)
    frozen = scriptc.jit.optimize_for_inference(scriptc.jit.trace(module, (image,)).eval())
    np.testing.assert_allclose(frozen(image)[0].numpy(), net(image)[0].detach().numpy(), rtol=1e-5, atol=1e-6)


def test_custom_create_proxy_and_call_module_see_every_operation():
    class ModulePathTracer(fx.Tracer):
        current = ""

        def __init__(self):
            super().__init__()
            self.origin = {}

        def call_module(self, m, forward, args, kwargs):
            saved, self.current = self.current, self.path_of_module(m)
            try:
                return super().call_module(m, forward, args, kwargs)
            finally:
                self.current = saved

        def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None):
            proxy = super().create_proxy(kind, target, args, kwargs, name, type_expr)
            self.origin[proxy.node.name] = self.current
            return proxy
    tracer = ModulePathTracer()
    tracer.trace(make_net(scriptc)())
    assert tracer.origin["block_conv"] == "block.conv" and tracer.origin["add"] == "block"
    assert tracer.origin["scale"] == "" and tracer.origin["head_1"] == "head.1"


def test_is_tensor_answers_for_a_proxy_instead_of_recording():
    def f(x):
        return x * 2 if scriptc.is_tensor(x) else x + 1
    assert "add = x + 1" in fx.symbolic_trace(f).code


def test_typing_annotations_print_as_torch_prints_them():
    torch = pytest.importorskip("torch")
    from typing import List, Optional, Tuple

    def program(torch):
        class Annotated(torch.nn.Module):
            def forward(self, x, y=None, sizes=None):
                return x, x + x
        # This file's annotations are strings (postponed evaluation): give forward real ones.
        Annotated.forward.__annotations__ = {"x": torch.Tensor, "y": Optional[torch.Tensor], "sizes": Optional[List[int]],
                                             "return": Tuple[torch.Tensor, torch.Tensor]}
        return Annotated()
    ours, theirs = fx.symbolic_trace(program(scriptc)), torch.fx.symbolic_trace(program(torch))
    assert ours.code == theirs.code and str(ours.graph) == str(theirs.graph)
    assert "-> typing_Tuple[torch.Tensor,torch.Tensor]:" in ours.code
    assert scriptc.jit.script(ours)(scriptc.ones(1))[1].tolist() == [2.0]


def test_buffers_read_as_tensors_and_become_get_attr_where_they_meet_a_proxy():
    class Model(scriptc.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("scale", scriptc.full((3,), 2.0))

        def forward(self, x):
            if self.scale.shape[0] == 3:
                return x * self.scale
            return x
    traced = fx.symbolic_trace(Model())
    assert [(n.op, n.target) for n in traced.graph.nodes][1] == ("get_attr", "scale")
    assert traced(scriptc.ones(3)).tolist() == [2.0, 2.0, 2.0]
