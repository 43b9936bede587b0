"""jit.trace: traced graphs equal eager on fresh inputs and other batch sizes; warnings; checks."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import scriptc as torch
from scriptc.jit import TracerWarning, TracingCheckError

from ..models import ALL, make_inputs


def _close(a, b):
    if isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _close(x, y)
        return
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", sorted(ALL))
def test_traced_equals_eager_on_fresh_inputs_and_other_batch_sizes(name):
    torch.manual_seed(0)
    model = ALL[name]().eval()
    traced = torch.jit.trace(model, make_inputs(name, 3))
    for batch in (3, 7, 1):
        x = make_inputs(name, batch)
        with torch.no_grad():
            expected = model(x)
        _close(traced(x), expected)


def test_parameters_are_getattr_not_constants():
    model = ALL["MLP"]().eval()
    traced = torch.jit.trace(model, make_inputs("MLP", 2))
    text = str(traced.graph)
    assert 'prim::GetAttr[name="layers"](%self)' in text and 'prim::GetAttr[name="weight"]' in text
    assert "array(" not in text
    with torch.no_grad():
        model.layers[0].weight.mul_(2)  # traced modules share the module's parameters
    x = make_inputs("MLP", 2)
    _close(traced(x), model(x))
    assert [n for n, _ in traced.named_parameters()] == [n for n, _ in model.named_parameters()]
    assert list(traced.state_dict()) == list(model.state_dict())
    assert "def forward(self" in traced.code


def test_input_dims_are_symbolic_and_reshapes_follow_them():
    def flatten_head(x):
        return x.view(x.size(0), -1).sum(1)
    traced = torch.jit.trace(flatten_head, torch.randn(3, 4, 5))
    assert "Tensor(float32, [B, S1, S2])" in str(traced.graph) and "size(" in str(traced.graph)
    for shape in ((9, 4, 5), (2, 7, 3)):
        x = torch.randn(*shape)
        np.testing.assert_allclose(traced(x).numpy(), flatten_head(x).numpy(), rtol=1e-6)


def test_tuple_list_and_dict_outputs():
    def many(x, y):
        return (x + y, [x * y, y]), {"diff": x - y}
    x, y = torch.randn(2, 3), torch.randn(2, 3)
    traced = torch.jit.trace(many, (x, y), strict=False)  # (a dict output needs strict=False, as in torch)
    (s, (p, yy)), d = traced(x, y)
    np.testing.assert_allclose(s.numpy(), (x + y).numpy())
    np.testing.assert_allclose(p.numpy(), (x * y).numpy())
    np.testing.assert_allclose(d["diff"].numpy(), (x - y).numpy())


def test_data_dependent_control_flow_warns_at_the_users_line():
    def gate(x):
        if x.sum() > 0:  # this line
            return x * 2
        return -x
    line = gate.__code__.co_firstlineno + 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        traced = torch.jit.trace(gate, torch.ones(3))
    hits = [w for w in caught if issubclass(w.category, TracerWarning)]
    assert hits and hits[0].lineno == line and hits[0].filename == __file__
    assert "might cause the trace to be incorrect" in str(hits[0].message)
    # The branch taken at trace time is baked in.
    np.testing.assert_allclose(traced(-torch.ones(3)).numpy(), [-2, -2, -2])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.jit.trace(lambda x: x * x.max().item(), torch.ones(2))
    assert any(issubclass(w.category, TracerWarning) for w in caught)


@pytest.mark.parametrize("leave, what", [(lambda x: torch.from_numpy(np.sin(x.numpy())), "a NumPy array"),
                                         (lambda x: torch.tensor(x.tolist()), "a Python list")])
def test_a_traced_value_read_as_numpy_or_a_list_warns_as_torch(leave, what):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.jit.trace(lambda x: leave(x) * 2, torch.ones(3))
    messages = [str(w.message) for w in caught if issubclass(w.category, TracerWarning)]
    assert messages == [f"Converting a tensor to {what} might cause the trace to be incorrect. We can't record the "
                        "data flow of Python values, so this value will be treated as a constant in the future. "
                        "This means that the trace might not generalize to other inputs!"]


def test_numpy_scalars_in_a_trace_are_python_constants(tmp_path):
    traced = torch.jit.trace(lambda x: x * np.float32(2.0) + np.int64(3) * x - np.sqrt(np.float64(0.25)),
                             torch.ones(2))
    x = torch.arange(2.0)
    assert "np." not in str(traced.graph)
    path = str(tmp_path / "m.pt")
    torch.jit.save(traced, path)
    for model in (traced, torch.jit.load(path)):
        out = model(x)
        assert out.dtype == torch.float32 and out.tolist() == [-0.5, 4.5]


def test_check_trace_tolerates_differences_small_against_the_outputs_largest_values():
    """A long float32 computation replayed op by op may end a few ulps of its largest values away
    (torchvision's RAFT: 1.5e-5 on outputs up to 4.3): the absolute tolerance scales with them."""
    drift = torch.zeros(2)

    def drifts(x):
        drift.add_(1e-4)  # each run is 1e-4 off the last: 1e-7 of the largest output
        return x * torch.tensor([1000.0, 0.0]) + drift
    torch.jit.trace(drifts, torch.ones(2))
    with pytest.raises(TracingCheckError, match="differs from the eager code"):
        torch.jit.trace(lambda x: x * torch.tensor([1.0, 0.0]) + drift.add_(1e-4), torch.ones(2))


def test_check_trace_catches_divergence():
    state = torch.zeros(3)

    def bumps_a_tensor_from_outside(x):
        state.add_(1)  # the trace bakes in the value state had after the write, and adds 1 again
        return x + state
    with pytest.raises(TracingCheckError, match="differs from the eager code"):
        torch.jit.trace(bumps_a_tensor_from_outside, torch.ones(3))


def test_random_ops_warn_nondeterministic_and_stay_in_the_graph():
    def vae_sample(mu):
        return mu + torch.randn_like(mu)
    with pytest.warns(TracerWarning) as record:
        traced = torch.jit.trace(vae_sample, torch.zeros(4))
    messages = [str(w.message) for w in record]
    assert any(m.startswith("Trace had nondeterministic nodes.") and "randn_like(" in m for m in messages)
    assert any(m.startswith("Output nr 1. of the traced function does not match") for m in messages)
    first, second = traced(torch.zeros(4)), traced(torch.zeros(4))
    assert not torch.equal(first, second)  # each call draws anew
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torch.jit.trace(vae_sample, torch.zeros(4), check_trace=False)


def test_a_generator_argument_is_traced_as_the_default_generator():
    g = torch.Generator().manual_seed(0)
    with pytest.warns(TracerWarning, match="torch.Generator passed to a random op is not recorded"):
        traced = torch.jit.trace(lambda x: x + torch.rand(x.shape, generator=g), torch.zeros(3), check_trace=False)
    torch.manual_seed(5)
    first = traced(torch.zeros(3))
    torch.manual_seed(5)
    assert torch.equal(first, traced(torch.zeros(3)))


def test_source_locations_point_at_user_code():
    def f(x):
        return x.exp()
    traced = torch.jit.trace(f, torch.ones(2))
    exp = next(n for n in traced.graph.nodes() if n.op == "exp")
    assert exp.loc.file == "test_trace.py" and exp.loc.line == f.__code__.co_firstlineno + 1


def test_bad_example_inputs_are_typed_errors():
    with pytest.raises(RuntimeError, match=r"Type 'Tuple\[int\]' cannot be traced"):
        torch.jit.trace(lambda x: x, (3,))
    with pytest.raises(RuntimeError, match="Tracer cannot infer type of"):
        torch.jit.trace(lambda x: object(), torch.ones(1))


@pytest.mark.parametrize("constant", [None, 3, 2.5, True])
def test_non_tensor_outputs_are_refused_as_torch_refuses_them(constant):
    # nanoGPT's forward returns (logits, None) without targets: torch.jit.trace raises, and so do we
    with pytest.raises(RuntimeError, match="Only tensors, lists, tuples of tensors, or dictionary of tensors"):
        torch.jit.trace(lambda x: (x * 2, constant), torch.ones(2))
    with pytest.raises(RuntimeError, match="Only tensors, lists, tuples of tensors, or dictionary of tensors"):
        torch.jit.trace(lambda x: constant, torch.ones(2))


class _StatefulLSTM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.LSTM(4, 5)

    def forward(self, x, hidden):
        out, (h, c) = self.rnn(x, hidden)
        return out, (h, c)


def test_tuple_and_list_example_inputs_become_tuple_and_list_inputs(tmp_path):
    import scriptc.runtime as rt

    model = _StatefulLSTM().eval()
    x, hidden = torch.randn(3, 2, 4), (torch.randn(1, 2, 5), torch.randn(1, 2, 5))
    traced = torch.jit.trace(model, (x, hidden))
    # (sequence-first: the batch is dim 1, which the state shares; the LSTM runs at any length)
    assert "%x : Tensor(float32, [S1, B, 4]), %hidden : Tuple[Tensor(float32, [1, B, 5]), Tensor(float32, [1, B, 5])]" \
        in str(traced.graph).splitlines()[0]
    x2, hidden2 = torch.randn(6, 3, 4), (torch.randn(1, 3, 5), torch.randn(1, 3, 5))
    got, (h2, c2) = traced(x2, hidden2)
    want, (wh, wc) = model(x2, hidden2)
    for a, b in ((got, want), (h2, wh), (c2, wc)):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)
    path = str(tmp_path / "lstm.sc")
    torch.jit.save(traced, path)
    out = rt.load(path)(x2.numpy(), (hidden2[0].numpy(), hidden2[1].numpy()))
    np.testing.assert_allclose(out[0], want.detach().numpy(), rtol=1e-5, atol=1e-6)
    summed = torch.jit.trace(lambda xs: xs[0] + xs[1], ([torch.ones(2), torch.ones(2)],))
    assert summed([torch.ones(2), torch.full((2,), 3.0)]).tolist() == [4.0, 4.0]
    with pytest.raises(RuntimeError, match=r"Type 'Tuple\[Tuple\[Tensor, int\]\]' cannot be traced"):
        torch.jit.trace(lambda a: a, ((torch.ones(2), 3),))


def _writes_through_views(T):
    class Writes(T.nn.Module):
        """A KV cache kept as a plain attribute (llama), a mask filled by slices (swin), in-place ops on
        views of intermediates."""

        def __init__(self):
            super().__init__()
            self.cache = T.zeros(4, 6, 3)
            self.lin = T.nn.Linear(3, 3)

        def forward(self, x):
            b, s, _ = x.shape
            y = self.lin(x)
            self.cache[:b, 1:1 + s] = y
            keys = self.cache[:b, :1 + s]
            mask = x.new_zeros((s, s))
            mask[0:1, :] = 2.0
            mask[:, 0].fill_(-1.0)
            z = y.clone()
            z[:, :1].zero_()
            z[..., 2] = 7.0
            z[...] += 1.0
            return keys.sum(1) + z.sum(1) + mask.sum()
    return Writes()


def test_writes_through_views_trace_like_torch(tmp_path):
    real = pytest.importorskip("torch")
    from scriptc.runtime import load as runtime_load
    ours, theirs = _writes_through_views(torch).eval(), _writes_through_views(real).eval()
    ours.lin.load_state_dict({k: torch.from_numpy(v.detach().numpy()) for k, v in theirs.lin.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((2, 3, 3)).astype(np.float32)
    traced = torch.jit.trace(ours, torch.from_numpy(x))
    with warnings.catch_warnings(), real.no_grad():  # (torch refuses a cache that requires grad as a constant)
        warnings.simplefilter("ignore")
        reference = real.jit.trace(theirs, real.from_numpy(x))
    assert any(n.op == "copy_" for n in traced.graph.nodes())
    traced.save(tmp_path / "m.sc")
    optimized = torch.jit.optimize_for_inference(traced)
    standalone = runtime_load(tmp_path / "m.sc")
    for seed in (1, 2):  # new values at the traced shapes: every call writes the cache anew
        x = np.random.default_rng(seed).standard_normal((2, 3, 3)).astype(np.float32)
        with real.no_grad():
            expected = reference(real.from_numpy(x)).numpy()
        with torch.no_grad():
            for got in (traced(torch.from_numpy(x)), optimized(torch.from_numpy(x))):
                np.testing.assert_allclose(got.numpy(), expected, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(np.asarray(standalone(x)), expected, rtol=1e-5, atol=1e-5)


def test_a_write_through_a_view_made_before_the_trace_is_refused():
    class Rows(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("table", torch.ones(3, 2))
            self.first_row = self.table[0]  # a view taken outside the trace

        def forward(self, x):
            y = self.table * x
            self.first_row.zero_()
            return y

    with pytest.raises(RuntimeError, match="writes into a view of a traced tensor that the trace did not see made"):
        torch.jit.trace(Rows(), torch.ones(3, 2))


def test_a_traced_function_takes_its_arguments_by_name_as_torch_allows():
    def combine(first, second):
        return 2 * first - second

    a, b = torch.randn(3, 4), torch.randn(3, 4)
    traced = torch.jit.trace(combine, (a, b), _force_outplace=True)
    expected = combine(a, b).numpy()
    for call in (lambda: traced(a, b), lambda: traced(a, second=b), lambda: traced(second=b, first=a)):
        np.testing.assert_allclose(call().numpy(), expected, rtol=1e-6)
    with pytest.raises(RuntimeError, match=r"combine\(\) expected at most 2 argument\(s\) but received 3"):
        traced(a, b, third=a)


def test_underscore_fork_and_wait_are_torch_jit_fork_and_wait_in_script():
    def double(x):
        return x * 2

    @torch.jit.script
    def run(x):
        futures = [torch.jit._fork(double, x), torch.jit.fork(double, x + 1)]
        return torch.jit._wait(futures[0]) + torch.jit.wait(futures[1])

    x = torch.randn(5)
    np.testing.assert_allclose(run(x).numpy(), (x * 4 + 2).numpy(), rtol=1e-6)


def _row_sums_plus_total(x, y):
    return x.sum(1) + y.sum()


@pytest.mark.parametrize("x_shape, y_shape", [((0, 3), (2,)), ((2, 0), (2,)), ((2, 3), (0,))])
def test_a_trace_with_an_empty_example_dim_saves_an_archive_runtime_load_runs(tmp_path, x_shape, y_shape):
    from scriptc.runtime import load as runtime_load

    x, y = torch.randn(*x_shape), torch.randn(*y_shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TracerWarning)
        traced = torch.jit.trace(_row_sums_plus_total, (x, y))
    torch.jit.save(traced, tmp_path / "m.sc")
    loaded = runtime_load(tmp_path / "m.sc")
    np.testing.assert_allclose(loaded(x.numpy(), y.numpy()), _row_sums_plus_total(x, y).numpy(), rtol=1e-6)


class _Optional(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(3, 2)

    def forward(self, x, y=None, z=None):
        out = self.linear(x)
        if y is not None:
            out = out + y
        if z is not None:
            out = out * z
        return out


def test_example_kwarg_inputs_trace_a_call_by_keyword():
    model = _Optional()
    x, z = torch.randn(2, 3), torch.randn(2, 2)
    traced = torch.jit.trace(model, example_kwarg_inputs={"z": z, "x": x})
    x2, z2 = torch.randn(2, 3), torch.randn(2, 2)
    expected = model(x2, z=z2)
    np.testing.assert_allclose(traced(x=x2, z=z2).detach().numpy(), expected.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(traced(x2, z2).detach().numpy(), expected.detach().numpy(), rtol=1e-6)  # declared order
    scaled = torch.jit.trace(lambda a, b=2.0: a * b, example_kwarg_inputs={"a": x, "b": z[:, :1]})
    assert scaled(a=x, b=z[:, :1]).tolist() == (x * z[:, :1]).tolist()


def test_example_kwarg_inputs_errors_as_torch():
    with pytest.raises(RuntimeError, match="example_kwarg_inputs should be a dict"):
        torch.jit.trace(_Optional(), example_kwarg_inputs=[torch.ones(2, 3)])
    with pytest.raises(RuntimeError, match="example_kwarg_inputs should be a dict"):
        torch.jit.trace(_Optional())
    with pytest.raises(NameError, match=r"'w' is not in forward\(\) method's arguments"):
        torch.jit.trace(_Optional(), example_kwarg_inputs={"w": torch.ones(2, 3)})
    with pytest.raises(TypeError, match="unexpected keyword argument 'w'"):  # (a function's)
        torch.jit.trace(lambda x: x, example_kwarg_inputs={"w": torch.ones(2, 3)})


class _SumsIntoFirst(torch.nn.Module):
    def forward(self, *inputs):
        output = inputs[0]
        for i in range(1, len(inputs)):
            output += inputs[i]
        return output


def test_the_trace_check_replays_on_the_inputs_as_they_were_before_tracing():
    """Code that adds into its first input in place changes the examples while it is traced; the
    check (as torch's) replays on copies taken before, so it passes."""
    examples = (torch.ones(4, 3), torch.ones(4, 3), torch.ones(4, 3))
    traced = torch.jit.trace(_SumsIntoFirst(), examples)
    assert examples[0].tolist() == [[3.0] * 3] * 4
    assert traced(torch.ones(2), torch.ones(2), torch.ones(2)).tolist() == [3.0, 3.0]


def test_arithmetic_with_a_size_read_in_the_trace_keeps_the_tensors_dtype():
    # (a size the trace reads is an int subclass: numpy takes it for an int64 array, not a weak scalar)
    def scaled(x):
        return x.sum(1) / x.shape[1], x * x.size(0)

    traced = torch.jit.trace(scaled, torch.randn(2, 6))
    assert "float64" not in str(traced.graph)
    x = torch.randn(3, 4)
    for got, want in zip(traced(x), scaled(x)):
        assert got.dtype == torch.float32
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
