"""Optimized graphs equal unoptimized ones: the test models, and 200+ random programs (hypothesis),
run by the reference interpreter on fresh inputs. Also: inferred shapes equal observed shapes,
and the fusion counts the design promises."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import scriptc as torch
from scriptc import ir
from scriptc.passes import PassContext, optimize
from scriptc.runtime import Interpreter

from ..models import ALL, make_inputs
from ..source_util import define

UNARY = ["torch.tanh({a})", "torch.sigmoid({a})", "torch.relu({a})", "-{a}", "{a}.abs()", "torch.sin({a})",
         "({a} * 0.5 + 1.0)", "torch.clamp({a}, -1.0, 1.0)", "torch.nn.functional.gelu({a})"]
BINARY = ["{a} + {b}", "{a} * {b}", "{a} - {b}", "torch.maximum({a}, {b})", "torch.where({a} > {b}, {a}, {b})"]
FULL_SHAPED = ["x", "y"]


@st.composite
def programs(draw):
    """Source of a random function of x: [B, 4], w: [4], m: [4, 4], mixing every kind of op."""
    lines = ["def generated(x, w, m):", "    y = x * w"]
    values = ["x", "y"]
    n = draw(st.integers(2, 9))
    for i in range(n):
        kind = draw(st.sampled_from(["unary", "binary", "broadcast", "reduce", "reshape", "matmul", "if", "loop",
                                     "softmax", "layout"]))
        a = draw(st.sampled_from(values))
        target = f"v{i}"
        if kind == "unary":
            expr = draw(st.sampled_from(UNARY)).format(a=a)
        elif kind == "binary":
            expr = draw(st.sampled_from(BINARY)).format(a=a, b=draw(st.sampled_from(values)))
        elif kind == "broadcast":
            expr = f"{a} * w + {draw(st.floats(-2, 2, allow_nan=False)):.3f}"
        elif kind == "reduce":
            expr = f"{a} - {a}.{draw(st.sampled_from(['sum', 'mean', 'amax']))}(dim=-1, keepdim=True)"
        elif kind == "softmax":
            expr = f"torch.softmax({a}, -1) + torch.log_softmax({a}, dim=1)"
        elif kind == "reshape":
            expr = f"{a}.reshape(-1, 2).reshape(x.size(0), 4)"
        elif kind == "layout":
            # Views of non-contiguous values: a channel shuffle, a transposed result viewed after
            # contiguous(), and a transposed value reshaped then viewed (passes must keep the copies).
            expr = draw(st.sampled_from([
                f"{a}.view(x.size(0), 2, 2).transpose(1, 2).contiguous().view(x.size(0), 4)",
                f"({a}.t() * 2.0).contiguous().view(-1).view(4, x.size(0)).t()",
                f"{a}.t().reshape(-1).view(4, x.size(0)).t().contiguous()",
            ]))
        elif kind == "matmul":
            expr = f"torch.tanh({a} @ m)"
        elif kind == "if":
            lines += [f"    if float({a}.sum()) > 0.0:", f"        {target} = {a} * 2.0", "    else:",
                      f"        {target} = {a} - 1.0"]
            values.append(target)
            continue
        else:
            lines += [f"    {target} = {a}", f"    for i in range({draw(st.integers(0, 3))}):",
                      f"        {target} = {target} * 0.5 + i"]
            values.append(target)
            continue
        lines.append(f"    {target} = {expr}")
        values.append(target)
    outputs = draw(st.lists(st.sampled_from(values), min_size=1, max_size=2, unique=True))
    lines.append(f"    return {', '.join(outputs)}" + ("," if len(outputs) == 1 else ""))
    return "\n".join(lines) + "\n"


def _inputs(rng, batch):
    return [rng.standard_normal((batch, 4)).astype(np.float32), rng.standard_normal(4).astype(np.float32),
            rng.standard_normal((4, 4)).astype(np.float32) * 0.5]


def _assert_same(a, b):
    if isinstance(b, (tuple, list)):
        for x, y in zip(a, b):
            _assert_same(x, y)
        return
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-5, atol=2e-5)


@settings(max_examples=220, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.integers(0, 2 ** 31 - 1))
def test_random_programs_optimize_to_the_same_results(source, seed):
    fn = define(source)
    scripted = torch.jit.script(fn)
    rng = np.random.default_rng(seed)
    # Tracing fixes dtypes and shapes, so fusion fires; the scripted graph keeps control flow.
    traced = torch.jit.trace(fn, tuple(torch.tensor(a) for a in _inputs(rng, 3)), check_trace=False)
    for graph in (scripted.graph, traced.graph):
        optimized = optimize(graph, 2, PassContext(functions=scripted.functions))
        ir.verify(optimized)
        again = optimize(optimized, 2, PassContext(functions=scripted.functions))  # as a saved plan loads
        ir.verify(again)
        for batch in (3, 5):
            args = _inputs(rng, batch)
            if graph is traced.graph and "if float" in source:
                continue  # tracing baked the branch taken at batch 3
            expected = Interpreter(graph).run(args)
            _assert_same(Interpreter(optimized).run(args), expected)
            _assert_same(Interpreter(again).run(args), expected)


def _model_graphs(name):
    torch.manual_seed(0)
    model = ALL[name]().eval()
    x = make_inputs(name, 3)
    return model, [torch.jit.trace(model, x), torch.jit.script(model)]


@pytest.mark.parametrize("name", sorted(ALL))
def test_test_models_optimize_to_the_same_results(name):
    model, compiled = _model_graphs(name)
    for c in compiled:
        optimized = torch.jit.optimize_for_inference(c)
        for batch in (2, 6):
            x = make_inputs(name, batch)
            with torch.no_grad():
                expected = model(x)
            got = optimized(x)
            _assert_same([t.numpy() for t in (got if isinstance(got, tuple) else (got,))],
                         [t.numpy() for t in (expected if isinstance(expected, tuple) else (expected,))])


@pytest.mark.parametrize("name", sorted(ALL))
def test_inferred_shapes_equal_observed_shapes(name):
    _, (traced, _) = _model_graphs(name)
    graph = optimize(traced.graph, 1, PassContext(module_value=traced._module_value()))
    batch = 4
    observed = {}

    class Recording(Interpreter):
        def run_block(self, block, env):
            out = super().run_block(block, env)
            for node in block:
                for o in node.outputs:
                    if id(o) in env and isinstance(env[id(o)], np.ndarray):
                        observed[id(o)] = (o, env[id(o)].shape)
            return out

    Recording(graph).run([a._data for a in (make_inputs(name, batch),)])
    checked = 0
    for value, shape in observed.values():
        t = value.type
        if getattr(t, "shape", None) is None:
            continue
        assert len(t.shape) == len(shape), (value, shape)
        for dim, actual in zip(t.shape, shape):
            if isinstance(dim, int):
                assert dim == actual, (str(t), shape)
            elif dim == "B":
                assert actual == batch
        checked += 1
    assert checked > 3


def _count(graph, op):
    return sum(1 for n in graph.nodes() if n.op == op)


def test_gelu_chain_is_one_fusion_group():
    def gelu_chain(x, w, b):
        y = x * w + b
        return 0.5 * y * (1 + torch.tanh(0.79788456 * (y + 0.044715 * y * y * y)))
    traced = torch.jit.trace(gelu_chain, (torch.randn(4, 8), torch.randn(8), torch.randn(8)))
    g = torch.jit.optimize_for_inference(traced).graph
    top = list(g)
    assert [n.op for n in top] == ["prim::FusionGroup"]
    assert len(top[0].blocks[0]) - _count_constants(top[0].blocks[0]) == 11  # x*w+b and the 9 GELU ops


def _count_constants(block):
    return sum(1 for n in block if n.op == "prim::Constant")


def test_linear_relu_epilogue_is_one_group():
    lin = torch.nn.Linear(8, 4).eval()

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lin

        def forward(self, x):
            return torch.relu(self.lin(x)) * 2 + 1
    g = torch.jit.optimize_for_inference(torch.jit.trace(M(), torch.randn(3, 8))).graph
    groups = [n for n in g if n.op == "prim::FusionGroup"]
    assert len(groups) == 1 and groups[0].attrs["kind"] == "epilogue"
    inner = [n.op for n in groups[0].blocks[0] if n.op != "prim::Constant"]
    # transpose_frozen_linear made the frozen linear a matmul by the stored transpose; its bias add fuses.
    assert inner == ["matmul", "add", "relu", "mul", "add"]


def test_frozen_conv_bn_is_one_conv():
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4)).eval()
    with torch.no_grad():
        model[1].running_mean.copy_(torch.randn(4))
        model[1].running_var.copy_(torch.rand(4) + 0.5)
    x = torch.randn(2, 3, 6, 6)
    frozen = torch.jit.freeze(torch.jit.script(model))
    assert _count(frozen.graph, "conv2d") == 1 and _count(frozen.graph, "batch_norm") == 0
    np.testing.assert_allclose(frozen(x).numpy(), model(x).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_a_frozen_batch_norm_after_no_conv_is_an_affine_map_that_fuses():
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.ReLU()).eval()
    with torch.no_grad():
        model[1].running_mean.copy_(torch.randn(4))
        model[1].running_var.copy_(torch.rand(4) + 0.5)
    x = torch.randn(5, 3)
    fast = torch.jit.optimize_for_inference(torch.jit.trace(model, x))
    assert _count(fast.graph, "batch_norm") == 0 and [n.op for n in fast.graph.block if n.op != "prim::Constant"] == [
        "prim::FusionGroup"]  # the product, then x * scale + shift and the ReLU, in one group
    np.testing.assert_allclose(fast(x).numpy(), model(x).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_guard_mismatch_still_gives_the_right_answer():
    def f(x, w):
        return torch.tanh(x * w) + 1
    traced = torch.jit.trace(f, (torch.randn(3, 4), torch.randn(4)))
    optimized = torch.jit.optimize_for_inference(traced)
    for x, w in [(torch.randn(3, 4).double(), torch.randn(4).double()), (torch.randn(3, 4), torch.randn(1)),
                 (torch.randn(2, 3, 4), torch.randn(4))]:
        np.testing.assert_allclose(optimized(x, w).numpy(), f(x, w).numpy(), rtol=1e-6)


def test_optimize_records_time_and_node_counts():
    traced = torch.jit.trace(ALL["MLP"]().eval(), make_inputs("MLP", 2))
    optimized = torch.jit.optimize_for_inference(traced)
    names = [r.name for r in optimized.pass_records]
    assert names[0] == "inline" and "fuse" in names and all(r.seconds >= 0 for r in optimized.pass_records)
    assert optimized.pass_records[-1].nodes_after == len(optimized.graph)


def test_dump_prints_the_graph_after_a_pass(monkeypatch, capsys):
    monkeypatch.setenv("SCRIPTC_DUMP", "fuse")
    torch.jit.optimize_for_inference(torch.jit.trace(lambda x: torch.relu(x) * 2, torch.randn(2)))
    err = capsys.readouterr().err
    assert "# --- after fuse ---" in err and "prim::FusionGroup" in err


class ChannelShuffle(torch.nn.Module):
    """ShuffleNet's channel shuffle: transpose, contiguous, view."""

    def forward(self, x):
        b, c, h, w = x.size()
        x = x.view(b, 2, c // 2, h, w)
        x = torch.transpose(x, 1, 2).contiguous()
        return torch.relu(x.view(b, -1, h, w)) * 2.0


def test_a_view_of_a_transposed_value_keeps_its_contiguous(tmp_path):
    model = ChannelShuffle().eval()
    x = torch.randn(2, 4, 3, 3)
    expected = model(x).numpy()
    for compiled in (torch.jit.trace(model, x), torch.jit.script(model)):
        np.testing.assert_array_equal(torch.jit.optimize_for_inference(compiled)(x).numpy(), expected)
        compiled.save(tmp_path / "shuffle.sc")
        np.testing.assert_array_equal(torch.jit.load(tmp_path / "shuffle.sc")(x).numpy(), expected)


class ConvInplaceReLU(torch.nn.Module):
    """A conv and an in-place ReLU, as torchvision writes them."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.relu = torch.nn.ReLU(inplace=True)

    def forward(self, x):
        return self.relu(self.conv(x))


def test_a_scripted_conv_and_inplace_relu_fuse_and_equal_eager():
    """The conv's result comes out of an If on padding_mode until folding takes the branch: the
    in-place ReLU on it is made functional after that, and fuses as the conv's epilogue."""
    torch.manual_seed(3)
    model = ConvInplaceReLU().eval()
    optimized = torch.jit.optimize_for_inference(torch.jit.script(model))
    text = str(optimized.graph)
    assert "relu_" not in text and 'prim::FusionGroup[kind="epilogue"]' in text
    for batch in (2, 1, 5):
        x = torch.randn(batch, 3, 6, 7)
        with torch.no_grad():
            np.testing.assert_allclose(optimized(x).numpy(), model(x).numpy(), rtol=1e-5, atol=1e-5)


class _GlobalPoolHead(torch.nn.Module):
    """A CNN's usual end: conv -> ReLU or ReLU6 (then a residual block, as a ResNet's) -> global
    average pool -> Linear."""

    def __init__(self, activation, residual: bool):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.activation = activation
        self.residual = residual
        self.block = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.pool = torch.nn.AdaptiveAvgPool2d(1)
        self.fc = torch.nn.Linear(8, 5)

    def forward(self, x):
        h = self.activation(self.conv(x))
        if self.residual:
            h = torch.relu(self.block(h) + h)
        return self.fc(torch.flatten(self.pool(h), 1))


def _groups(graph) -> list[list[str]]:
    return [[m.op for m in n.blocks[0] if m.op != "prim::Constant"] for n in graph.nodes()
            if n.op == "prim::FusionGroup"]


@pytest.mark.parametrize("activation, residual", [(torch.nn.ReLU(), False), (torch.nn.ReLU6(), False),
                                                 (torch.nn.ReLU(), True)], ids=["relu", "relu6", "residual"])
def test_a_scripted_global_average_pool_fuses_into_the_conv_as_the_traced_one_and_equals_eager(activation, residual):
    """Scripted without example inputs, the pool's input has no known rank; it is still a conv2d's
    result, so the pool becomes the mean that reduces the conv's epilogue as it stores (the traced
    graph's group), instead of a pool kernel reading back the whole activation."""
    torch.manual_seed(5)
    model = _GlobalPoolHead(activation, residual).eval()
    scripted = torch.jit.optimize_for_inference(torch.jit.script(model))
    traced = torch.jit.optimize_for_inference(torch.jit.trace(model, (torch.randn(2, 3, 9, 10),)))
    assert "adaptive_avg_pool2d" not in str(scripted.graph)
    assert _groups(scripted.graph) == _groups(traced.graph)
    assert _groups(scripted.graph)[-2][0] == "conv2d" and _groups(scripted.graph)[-2][-1] == "mean"
    for batch, h, w in ((1, 9, 10), (3, 9, 10), (4, 7, 12)):
        x = torch.randn(batch, 3, h, w)
        with torch.no_grad():
            np.testing.assert_allclose(scripted(x).numpy(), model(x).numpy(), rtol=1e-5, atol=1e-5)


def test_a_scripted_global_average_pool_of_any_rank_stays_a_pool_and_raises_as_eager():
    def pool(x):
        return torch.nn.functional.adaptive_avg_pool2d(torch.relu(x), 1)

    optimized = torch.jit.optimize_for_inference(torch.jit.script(pool))
    assert "adaptive_avg_pool2d" in str(optimized.graph)
    x = torch.randn(2, 3, 4, 5)
    np.testing.assert_allclose(optimized(x).numpy(), pool(x).numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="Expected 3D or 4D tensor"):
        pool(torch.randn(3, 4))
    with pytest.raises(RuntimeError, match="Expected 3D or 4D tensor"):
        optimized(torch.randn(3, 4))
