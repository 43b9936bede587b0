"""Graph and Node editing: building graphs by hand, insertion points, use lists, dead code, lint,
copying, and the code a GraphModule generates from them (against torch 2.13's text)."""

from __future__ import annotations

import copy
import operator

import pytest

import scriptc
from scriptc import fx


def build_graph(torch):
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    y = graph.placeholder("y", default_value=3)
    weight = graph.get_attr("layer.weight")
    product = graph.call_function(torch.matmul, (x, weight))
    total = graph.call_function(operator.add, (product, y))
    relu = graph.call_method("relu", (total,))
    summed = graph.call_function(torch.sum, (relu,), {"dim": [0, 1]})
    graph.output((relu, summed))
    return graph


def test_hand_built_graph_prints_and_generates_code_as_torch():
    torch = pytest.importorskip("torch")
    ours, theirs = build_graph(scriptc), build_graph(torch)
    assert str(ours) == str(theirs)
    root = {"layer.weight": scriptc.ones(4, 2)}
    module = fx.GraphModule(root, ours)
    assert module.code == torch.fx.GraphModule({"layer.weight": torch.ones(4, 2)}, theirs).code
    relu, summed = module(scriptc.ones(3, 4))
    assert relu.tolist() == [[7.0, 7.0]] * 3 and summed.item() == 42.0
    assert module(scriptc.ones(3, 4), -10)[1].item() == 0.0


def test_node_users_inputs_and_neighbours():
    graph = build_graph(scriptc)
    x, y, weight, product, total, relu, summed, output = graph.nodes
    assert [n.op for n in graph.nodes] == ["placeholder", "placeholder", "get_attr", "call_function",
                                          "call_function", "call_method", "call_function", "output"]
    assert list(x.users) == [product] and list(relu.users) == [summed, output]
    assert total.all_input_nodes == [product, y] and output.all_input_nodes == [relu, summed]
    assert product.next is total and total.prev is product and len(graph.nodes) == 8
    assert [n.name for n in reversed(graph.nodes)][:2] == ["output", "sum_1"]
    assert graph.find_nodes(op="call_function", target=operator.add) == [total]
    assert x.args == () and y.args == (3,) and summed.kwargs == {"dim": [0, 1]}


def test_args_are_immutable_and_reassigning_them_updates_users():
    graph = build_graph(scriptc)
    x, y, _, product, total, *_ = graph.nodes
    with pytest.raises(TypeError, match="'immutable_list' object does not support mutation"):
        list(graph.nodes)[6].kwargs["dim"].append(2)
    with pytest.raises(TypeError, match="'immutable_dict' object does not support mutation"):
        list(graph.nodes)[6].kwargs["keepdim"] = True
    total.args = (x, y)
    assert total not in product.users and list(x.users) == [product, total]
    total.replace_input_with(x, product)
    assert total.args == (product, y)
    total.update_kwarg("alpha", 2)
    assert total.kwargs == {"alpha": 2}


def test_inserting_replacing_and_erasing_nodes():
    graph = build_graph(scriptc)
    _, _, _, product, total, relu, summed, output = graph.nodes
    with graph.inserting_after(relu):
        doubled = graph.call_function(operator.mul, (relu, 2))
    changed = relu.replace_all_uses_with(doubled, delete_user_cb=lambda user: user is not doubled)
    assert changed == [summed, output] and doubled.args == (relu, 2)
    with graph.inserting_before(product):
        first = graph.call_function(scriptc.neg, (list(graph.nodes)[0],))
    assert first.next is product and first.name == "neg"
    with pytest.raises(RuntimeError, match=r"Tried to erase Node relu but it still had 1 users in the graph"):
        graph.erase_node(relu)
    graph.erase_node(first)
    assert first not in list(graph.nodes) and len(graph.nodes) == 9
    graph.lint()


def test_dead_code_elimination_keeps_side_effects_and_impure_calls():
    graph = fx.Graph()
    x = graph.placeholder("x")
    graph.call_function(scriptc.relu, (x,))
    graph.call_function(scriptc._assert, (x, "message"))
    unused_method = graph.call_method("sum", (x,))
    graph.output(x)
    assert graph.eliminate_dead_code()
    assert [n.op for n in graph.nodes] == ["placeholder", "call_function", "output"]
    assert unused_method not in list(graph.nodes) and not graph.eliminate_dead_code()


def test_lint_finds_use_before_definition_and_missing_targets():
    graph = fx.Graph()
    x = graph.placeholder("x")
    late = graph.call_function(scriptc.relu, (x,))
    early = graph.call_function(scriptc.neg, (late,))
    graph.output(early)
    early.prepend(late)
    late.prepend(early)
    with pytest.raises(RuntimeError, match="Argument 'relu' of Node 'neg' was used before it has been defined"):
        graph.lint()
    module_graph = fx.Graph()
    module_graph.output(module_graph.call_module("missing", ()))
    with pytest.raises(AttributeError):
        fx.GraphModule(scriptc.nn.Module(), module_graph)


def test_graph_copy_node_copy_and_deepcopy():
    source = build_graph(scriptc)
    target = fx.Graph()
    value_map: dict = {}
    result = target.graph_copy(source, value_map)
    target.output(result)
    assert str(target) == str(source)
    assert set(value_map) == {n for n in source.nodes if n.op != "output"}
    copied = copy.deepcopy(source)
    assert str(copied) == str(source) and next(iter(copied.nodes)) is not next(iter(source.nodes))
    module = fx.GraphModule({"layer.weight": scriptc.ones(4, 2)}, source)
    clone = copy.deepcopy(module)
    assert clone.code == module.code and clone.layer.weight is not module.layer.weight
    assert clone(scriptc.ones(1, 4))[1].item() == module(scriptc.ones(1, 4))[1].item()


def test_editing_then_recompile_changes_forward():
    module = fx.symbolic_trace(lambda x: scriptc.relu(x) + 1)
    for node in module.graph.nodes:
        if node.op == "call_function" and node.target is scriptc.relu:
            node.target = scriptc.neg
    module.recompile()
    assert "torch.neg(x)" in module.code
    assert module(scriptc.tensor([2.0])).tolist() == [-1.0]
    assert "def forward(self, x):" in str(module) and "graph_module.print_readable()" in str(module)


def test_print_tabular_lists_every_node(capsys):
    build_graph(scriptc).print_tabular()
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["opcode", "name", "target", "args", "kwargs"]
    assert set(lines[1].replace(" ", "")) == {"-"} and len(lines) == 10
    assert lines[6].split()[:3] == ["call_function", "add", "<built-in"]


def test_submodules_can_be_added_and_deleted():
    module = fx.symbolic_trace(scriptc.nn.Sequential(scriptc.nn.Linear(2, 2), scriptc.nn.ReLU()))
    assert module.add_submodule("extra.inner", scriptc.nn.Tanh())
    assert isinstance(module.get_submodule("extra.inner"), scriptc.nn.Tanh)
    module.delete_all_unused_submodules()
    assert [name for name, _ in module.named_children()] == ["0", "1"]
    assert not module.delete_submodule("nothing.here")


def test_proxies_around_raw_nodes_build_and_inline_code():
    graph = fx.Graph()
    x, y = fx.Proxy(graph.placeholder("x")), fx.Proxy(graph.placeholder("y"))
    graph.output(scriptc.neg(scriptc.tanh(scriptc.cat([x, y]))).node)
    module = fx.GraphModule(scriptc.nn.Module(), graph)
    assert "cat = torch.cat([x, y]);  x = y = None\n    tanh = torch.tanh(cat)" in module.code
    assert module(scriptc.zeros(1), scriptc.zeros(2)).tolist() == [0.0, 0.0, 0.0]

    traced = fx.symbolic_trace(scriptc.nn.Sequential(scriptc.nn.ReLU()))
    for node in list(traced.graph.nodes):
        if node.op == "call_module":
            with traced.graph.inserting_before(node):
                inlined = traced.get_submodule(node.target)(*fx.node.map_arg(node.args, fx.Proxy))
            node.replace_all_uses_with(inlined.node)
            traced.graph.erase_node(node)
    traced.recompile()
    assert "torch.nn.functional.relu(input_1" in traced.code
    assert traced(scriptc.tensor([-1.0, 2.0])).tolist() == [0.0, 2.0]


def test_torch_functions_record_only_while_a_raw_proxy_lives():
    from scriptc.nn.functional import relu as imported_relu
    body = scriptc.relu.__code__
    graph = fx.Graph()
    proxy = fx.Proxy(graph.placeholder("x"))
    assert scriptc.relu.__code__ is not body
    assert scriptc.relu(proxy).node.target is scriptc.relu
    assert imported_relu(proxy).node.target is scriptc.nn.functional.relu
    assert scriptc.relu(scriptc.tensor([-1.0])).tolist() == [0.0]
    del proxy
    assert scriptc.relu.__code__ is body and scriptc.Tensor.__add__(scriptc.ones(1), 1).tolist() == [2.0]


def test_graph_module_pickles_as_its_code_and_state():
    import math
    import pickle

    class Model(scriptc.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = scriptc.nn.Linear(3, 2)
            self.register_buffer("offset", scriptc.ones(2))

        def forward(self, x):
            return scriptc.relu(self.linear(x)) * math.sqrt(x.shape[-1]) + self.offset
    module = fx.symbolic_trace(Model())
    restored = pickle.loads(pickle.dumps(module))
    x = scriptc.randn(4, 3)
    assert type(restored).__name__ == "Model" and restored.code == module.code
    assert (restored(x) - module(x)).abs().max().item() == 0.0
    assert restored.linear.weight is not module.linear.weight


def test_deepcopy_keeps_every_submodule_and_the_preserved_attributes():
    from scriptc.fx.graph_module import _USER_PRESERVED_ATTRIBUTES_KEY
    module = fx.symbolic_trace(scriptc.nn.Sequential(scriptc.nn.Linear(2, 2)))
    module.add_submodule("unused", scriptc.nn.ReLU())
    module.meta[_USER_PRESERVED_ATTRIBUTES_KEY] = {"note": "kept"}
    clone = copy.deepcopy(module)
    assert type(clone) is not type(module) and type(clone).__name__ == "Sequential"
    assert isinstance(clone.unused, scriptc.nn.ReLU) and clone.note == "kept"
    assert clone.get_submodule("0").weight is not module.get_submodule("0").weight
