"""torch.utils._pytree: flatten/unflatten, TreeSpec's structure and printing, tree_map over several trees,
registered classes, and the errors for mismatched trees (against torch 2.13)."""

from __future__ import annotations

from collections import OrderedDict, defaultdict, deque, namedtuple

import pytest

from scriptc.utils import _pytree as pytree

Point = namedtuple("Point", "x y")
TREES = [
    {"a": (1, [2, 3]), "b": None, "c": OrderedDict(x=4)},
    [Point(1, 2), deque([3, 4], maxlen=5), defaultdict(int, {"k": 5})],
    (),
    7,
    [[], {}, ((),)],
]


@pytest.mark.parametrize("tree", TREES)
def test_flatten_and_spec_match_torch(tree):
    torch_pytree = pytest.importorskip("torch.utils._pytree")
    leaves, spec = pytree.tree_flatten(tree)
    their_leaves, their_spec = torch_pytree.tree_flatten(tree)
    assert leaves == their_leaves
    assert repr(spec) == repr(their_spec)
    assert (spec.num_leaves, spec.num_nodes) == (their_spec.num_leaves, their_spec.num_nodes)
    rebuilt = pytree.tree_unflatten(leaves, spec)
    assert rebuilt == tree and type(rebuilt) is type(tree)
    assert pytree.tree_structure(tree) == spec and pytree.tree_leaves(tree) == leaves


def test_tree_map_over_several_trees_and_its_errors():
    assert pytree.tree_map(lambda a, b: a + b, (1, {"x": 2}), (10, {"x": 20})) == (11, {"x": 22})
    assert pytree.tree_map(lambda a, b: (a, b), [1, 2], [(3, 4), {"deep": 5}]) == [(1, (3, 4)), (2, {"deep": 5})]
    with pytest.raises(ValueError, match=r"Node arity mismatch; expected 2, but got 1\."):
        pytree.tree_map(lambda a, b: a, (1, 2), (1,))
    with pytest.raises(ValueError, match=r"Node type mismatch; expected <class 'tuple'>, but got <class 'list'>\."):
        pytree.tree_map(lambda a, b: a, (1, 2), [1, 2])
    with pytest.raises(ValueError, match=r"Node keys mismatch; missing key\(s\): \{'a'\}; extra key\(s\): \{'b'\}\."):
        pytree.tree_map(lambda a, b: a, {"a": 1}, {"b": 1})
    with pytest.raises(ValueError, match=r"`leaves` has length 1 but the spec refers to a pytree that holds 2 items"):
        pytree.tree_unflatten([1], pytree.tree_structure((1, 2)))


def test_leaf_predicates_and_typed_maps():
    assert pytree.tree_leaves([(1, 2), (3,)], is_leaf=lambda t: isinstance(t, tuple)) == [(1, 2), (3,)]
    assert pytree.tree_map_only(int, lambda v: v * 10, (1, 2.0, "a")) == (10, 2.0, "a")
    assert pytree.tree_all(lambda v: v > 0, [1, (2, 3)]) and not pytree.tree_any(lambda v: v > 5, [1, (2, 3)])
    assert pytree.tree_any_only(str, lambda v: v == "a", (1, "a")) and pytree.tree_all_only(int, bool, (1, "", 2))
    seen = []
    assert pytree.tree_map_(seen.append, {"a": 1, "b": [2]}) == {"a": 1, "b": [2]} and seen == [1, 2]
    assert pytree.tree_structure(3).is_leaf() and repr(pytree.LeafSpec()) == "*"


class Pair:
    def __init__(self, first, second):
        self.first, self.second = first, second


pytree.register_pytree_node(Pair, lambda p: ([p.first, p.second], "pair"), lambda values, _: Pair(*values))


def test_registered_classes_flatten_and_duplicates_are_refused():
    leaves, spec = pytree.tree_flatten({"p": Pair(1, (2, 3))})
    assert leaves == [1, 2, 3]
    rebuilt = pytree.tree_unflatten([4, 5, 6], spec)["p"]
    assert isinstance(rebuilt, Pair) and rebuilt.first == 4 and rebuilt.second == (5, 6)
    assert pytree.tree_map(lambda v: -v, Pair(1, 2)).second == -2
    with pytest.raises(ValueError, match="<class 'tuple'> is already registered as pytree node."):
        pytree.register_pytree_node(tuple, lambda t: (list(t), None), lambda v, _: tuple(v))
    with pytest.raises(TypeError, match="Expected `treespec` to be an instance of PyTreeSpec but got item of type "
                                        "<class 'NoneType'>"):
        pytree.tree_unflatten([1], None)


def test_key_paths_match_torch():
    torch_pytree = pytest.importorskip("torch.utils._pytree")
    tree = {"a": (1, [2, Point(3, 4)]), "b": OrderedDict(x=5), "c": deque([6]), "d": defaultdict(int, {"k": 7})}
    ours, theirs = pytree.tree_leaves_with_path(tree), torch_pytree.tree_leaves_with_path(tree)
    assert [(pytree.keystr(path), leaf) for path, leaf in ours] == \
        [(torch_pytree.keystr(path), leaf) for path, leaf in theirs]
    assert [repr(k) for k in ours[2][0]] == [repr(k) for k in theirs[2][0]]
    doubled = pytree.tree_map_with_path(lambda path, leaf, other: (pytree.keystr(path), leaf + other),
                                        (1, {"k": 2}), (10, {"k": 20}))
    assert doubled == (("[0]", 11), {"k": ("[1]['k']", 22)})
    assert pytree.MappingKey("a").get({"a": 1}) == 1 and pytree.GetAttrKey("x").get(Point(8, 9)) == 8


def test_key_paths_need_a_keyed_flatten_for_registered_classes():
    with pytest.raises(ValueError, match="Did not find a flatten_with_keys_fn for type: .*Pair"):
        pytree.tree_flatten_with_path(Pair(1, 2))
