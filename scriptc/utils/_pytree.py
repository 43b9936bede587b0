"""torch.utils._pytree: flatten nested containers (tuple, list, dict, namedtuple, OrderedDict, defaultdict,
deque and registered classes) into leaves plus a TreeSpec, and rebuild them."""

from __future__ import annotations

from collections import OrderedDict, defaultdict, deque, namedtuple
from dataclasses import dataclass
from typing import Any, Callable, Iterable

__all__ = ["TreeSpec", "LeafSpec", "register_pytree_node", "tree_flatten", "tree_unflatten", "tree_leaves",
           "tree_structure", "tree_map", "tree_map_", "tree_map_only", "tree_all", "tree_any", "tree_all_only",
           "tree_any_only", "PyTree", "tree_flatten_with_path", "tree_leaves_with_path",
           "tree_map_with_path", "keystr", "SequenceKey", "MappingKey", "GetAttrKey"]

PyTree = Any


@dataclass(frozen=True)
class NodeDef:
    """How one container type splits into (children, context) and is rebuilt from them; with
    flatten_with_keys_fn, also the key (a KeyEntry) of each child."""
    type: type
    flatten_fn: Callable[[Any], tuple[list, Any]]
    unflatten_fn: Callable[[Iterable, Any], Any]
    flatten_with_keys_fn: Callable[[Any], tuple[list, Any]] | None = None


@dataclass(frozen=True)
class SequenceKey:
    """A child's position in a sequence: prints as `[0]`."""
    idx: int

    def __str__(self) -> str:
        return f"[{self.idx!r}]"

    def get(self, sequence):
        return sequence[self.idx]


@dataclass(frozen=True)
class MappingKey:
    """A child's key in a mapping: prints as `['a']`."""
    key: Any

    def __str__(self) -> str:
        return f"[{self.key!r}]"

    def get(self, mapping):
        return mapping[self.key]


@dataclass(frozen=True)
class GetAttrKey:
    """A child's attribute name (a namedtuple field): prints as `.x`."""
    name: str

    def __str__(self) -> str:
        return f".{self.name}"

    def get(self, obj):
        return getattr(obj, self.name)


KeyEntry = Any
KeyPath = tuple


SUPPORTED_NODES: dict[type, NodeDef] = {}


def register_pytree_node(cls: type, flatten_fn: Callable, unflatten_fn: Callable, *,
                         serialized_type_name: str | None = None, to_dumpable_context: Callable | None = None,
                         from_dumpable_context: Callable | None = None,
                         flatten_with_keys_fn: Callable | None = None) -> None:
    """Teach pytree a container class: flatten_fn(obj) -> (children, context) and
    unflatten_fn(children, context) -> obj."""
    if cls in SUPPORTED_NODES:
        raise ValueError(f"{cls} is already registered as pytree node.")
    SUPPORTED_NODES[cls] = NodeDef(cls, flatten_fn, unflatten_fn, flatten_with_keys_fn)


def _with_keys(key_of: Callable[[Any, Any, int], Any], flatten_fn: Callable) -> Callable:
    """A flatten_with_keys_fn from flatten_fn and `key_of(node, context, index)`."""
    def flatten_with_keys(node):
        children, context = flatten_fn(node)
        return [(key_of(node, context, i), child) for i, child in enumerate(children)], context
    return flatten_with_keys


def _sequence_key(node, context, i):
    return SequenceKey(i)


def _mapping_key(node, context, i):
    return MappingKey(list(node)[i])


def _field_key(node, context, i):
    return GetAttrKey(type(node)._fields[i])


def _is_namedtuple_instance(tree) -> bool:
    return isinstance(tree, tuple) and hasattr(type(tree), "_fields")


def _node_type(tree) -> type:
    return namedtuple if _is_namedtuple_instance(tree) else type(tree)


def _dict_unflatten(values: Iterable, context: list) -> dict:
    return dict(zip(context, values))


_DICT_KEYS = _with_keys(_mapping_key, lambda d: (list(d.values()), list(d)))
register_pytree_node(tuple, lambda t: (list(t), None), lambda values, _: tuple(values),
                     flatten_with_keys_fn=_with_keys(_sequence_key, lambda t: (list(t), None)))
register_pytree_node(list, lambda t: (list(t), None), lambda values, _: list(values),
                     flatten_with_keys_fn=_with_keys(_sequence_key, lambda t: (list(t), None)))
register_pytree_node(dict, lambda d: (list(d.values()), list(d)), _dict_unflatten, flatten_with_keys_fn=_DICT_KEYS)
register_pytree_node(namedtuple, lambda t: (list(t), type(t)), lambda values, cls: cls(*values),
                     flatten_with_keys_fn=_with_keys(_field_key, lambda t: (list(t), type(t))))
register_pytree_node(OrderedDict, lambda d: (list(d.values()), list(d)),
                     lambda values, keys: OrderedDict(zip(keys, values)), flatten_with_keys_fn=_DICT_KEYS)
register_pytree_node(defaultdict, lambda d: (list(d.values()), [d.default_factory, list(d)]),
                     lambda values, context: defaultdict(context[0], zip(context[1], values)),
                     flatten_with_keys_fn=_with_keys(_mapping_key,
                                                     lambda d: (list(d.values()), [d.default_factory, list(d)])))
register_pytree_node(deque, lambda d: (list(d), d.maxlen), lambda values, maxlen: deque(values, maxlen=maxlen),
                     flatten_with_keys_fn=_with_keys(_sequence_key, lambda d: (list(d), d.maxlen)))
_STANDARD_DICTS = (dict, OrderedDict, defaultdict)
_BUILTIN_TYPES = (tuple, list, dict, namedtuple, OrderedDict, defaultdict, deque)


class TreeSpec:
    """The structure of a pytree: its container type, context (keys, namedtuple class) and child specs."""

    def __init__(self, type: type | None, context: Any, children_specs: list[TreeSpec]) -> None:
        self.type = type
        self.context = context
        self._children = list(children_specs)
        self.num_children = len(self._children)
        self.num_leaves = sum(c.num_leaves for c in self._children) if type is not None else 1
        self.num_nodes = 1 + sum(c.num_nodes for c in self._children)

    @property
    def children_specs(self) -> list[TreeSpec]:
        return self._children

    def children(self) -> list[TreeSpec]:
        return list(self._children)

    def child(self, index: int) -> TreeSpec:
        return self._children[index]

    def is_leaf(self) -> bool:
        return self.type is None

    def __eq__(self, other) -> bool:
        return isinstance(other, TreeSpec) and (self.type, self.context, self._children) == \
            (other.type, other.context, other._children)

    def __hash__(self) -> int:
        return hash((self.type, repr(self.context), tuple(self._children)))

    def __repr__(self, indent: int = 0) -> str:
        if self.is_leaf():
            return "*"
        children = ""
        if self._children:
            indent += 2
            children = self._children[0].__repr__(indent) + ("," if self.num_children > 1 else "")
            children += ",".join("\n" + " " * indent + c.__repr__(indent) for c in self._children[1:])
        return f"TreeSpec({self.type.__name__}, {self.context}, [{children}])"

    def flatten_up_to(self, tree: PyTree) -> list[PyTree]:
        """The subtrees of tree at this spec's leaves (tree must have this spec's containers above them)."""
        subtrees: list[PyTree] = []
        self._flatten_up_to(tree, subtrees)
        return subtrees

    def _flatten_up_to(self, node: PyTree, subtrees: list) -> None:
        if self.is_leaf():
            subtrees.append(node)
            return
        node_type = _node_type(node)
        both_dicts = self.type in _STANDARD_DICTS and node_type in _STANDARD_DICTS
        if not both_dicts and node_type is not self.type:
            kind = "Node type" if self.type in _BUILTIN_TYPES else "Type"
            raise ValueError(f"{kind} mismatch; expected {self.type!r}, but got {node_type!r}.")
        if len(node) != self.num_children:
            raise ValueError(f"Node arity mismatch; expected {self.num_children}, but got {len(node)}.")
        if both_dicts:
            keys = self.context[1] if self.type is defaultdict else self.context
            missing, extra = set(keys) - set(node), set(node) - set(keys)
            if missing or extra:
                message = (f"; missing key(s): {missing}" if missing else "") + \
                          (f"; extra key(s): {extra}" if extra else "")
                raise ValueError(f"Node keys mismatch{message}.")
            children = [node[key] for key in keys]
        else:
            children, context = SUPPORTED_NODES[node_type].flatten_fn(node)
            if node_type is not deque and context != self.context:
                raise ValueError(f"Node context mismatch for node type {self.type!r}; expected "
                                 f"{self.context!r}, but got {context!r}.")
        for subtree, spec in zip(children, self._children):
            spec._flatten_up_to(subtree, subtrees)

    def unflatten(self, leaves: Iterable[Any]) -> PyTree:
        """Rebuild the pytree from its leaves, in tree_flatten's order."""
        leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but the spec refers "
                             f"to a pytree that holds {self.num_leaves} items ({self}).")
        return self._build(iter(leaves))

    def _build(self, leaves: Iterable) -> PyTree:
        if self.is_leaf():
            return next(leaves)
        children = [child._build(leaves) for child in self._children]
        return SUPPORTED_NODES[self.type].unflatten_fn(children, self.context)


class LeafSpec(TreeSpec):
    """The spec of a leaf (printed `*`)."""

    def __init__(self) -> None:
        super().__init__(None, None, [])


def _is_leaf(tree, is_leaf: Callable | None) -> bool:
    return (is_leaf is not None and is_leaf(tree)) or _node_type(tree) not in SUPPORTED_NODES


def tree_flatten(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> tuple[list, TreeSpec]:
    """(leaves, spec): the leaves in order and the structure to rebuild the tree with tree_unflatten."""
    leaves: list = []

    def flatten(node) -> TreeSpec:
        if _is_leaf(node, is_leaf):
            leaves.append(node)
            return LeafSpec()
        node_type = _node_type(node)
        children, context = SUPPORTED_NODES[node_type].flatten_fn(node)
        return TreeSpec(node_type, context, [flatten(child) for child in children])
    return leaves, flatten(tree)


def tree_unflatten(leaves: Iterable[Any], treespec: TreeSpec) -> PyTree:
    """Rebuild a pytree from its leaves and the spec tree_flatten returned."""
    if not isinstance(treespec, TreeSpec):
        raise TypeError(f"Expected `treespec` to be an instance of PyTreeSpec but got item of type "
                        f"{type(treespec)}.")
    return treespec.unflatten(leaves)


def tree_leaves(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> list:
    """The leaves of a pytree, in order."""
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> TreeSpec:
    """The TreeSpec of a pytree."""
    return tree_flatten(tree, is_leaf)[1]


def tree_map(func: Callable, tree: PyTree, *rests: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> PyTree:
    """A tree of the same structure with func(leaf, *corresponding leaves of rests) at each leaf."""
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [spec.flatten_up_to(r) for r in rests]
    return spec.unflatten(func(*values) for values in zip(leaves, *others))


def tree_map_(func: Callable, tree: PyTree, *rests: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> PyTree:
    """Call func on every leaf (with the matching leaves of rests) for its side effects; returns tree."""
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [spec.flatten_up_to(r) for r in rests]
    for values in zip(leaves, *others):
        func(*values)
    return tree


def _type_filter(type_or_types, func: Callable) -> Callable:
    return lambda x: func(x) if isinstance(x, type_or_types) else x


def tree_map_only(type_or_types, func: Callable, tree: PyTree, is_leaf: Callable | None = None) -> PyTree:
    """tree_map applied only to the leaves of the given type(s); other leaves stay as they are."""
    return tree_map(_type_filter(type_or_types, func), tree, is_leaf=is_leaf)


def tree_all(pred: Callable[[Any], bool], tree: PyTree, is_leaf: Callable | None = None) -> bool:
    return all(map(pred, tree_leaves(tree, is_leaf)))


def tree_any(pred: Callable[[Any], bool], tree: PyTree, is_leaf: Callable | None = None) -> bool:
    return any(map(pred, tree_leaves(tree, is_leaf)))


def tree_all_only(type_or_types, pred: Callable[[Any], bool], tree: PyTree, is_leaf: Callable | None = None) -> bool:
    return all(pred(x) for x in tree_leaves(tree, is_leaf) if isinstance(x, type_or_types))


def tree_any_only(type_or_types, pred: Callable[[Any], bool], tree: PyTree, is_leaf: Callable | None = None) -> bool:
    return any(pred(x) for x in tree_leaves(tree, is_leaf) if isinstance(x, type_or_types))



def tree_flatten_with_path(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> tuple[list, TreeSpec]:
    """([(key path, leaf)], spec): each leaf with the keys leading to it (SequenceKey, MappingKey, GetAttrKey)."""
    pairs: list = []

    def walk(node, path: tuple) -> None:
        if _is_leaf(node, is_leaf):
            pairs.append((path, node))
            return
        node_def = SUPPORTED_NODES[_node_type(node)]
        if node_def.flatten_with_keys_fn is None:
            raise ValueError(f"Did not find a flatten_with_keys_fn for type: {node_def.type}. Please pass a "
                             "flatten_with_keys_fn argument to register_pytree_node.")
        for key, child in node_def.flatten_with_keys_fn(node)[0]:
            walk(child, path + (key,))
    walk(tree, ())
    return pairs, tree_structure(tree, is_leaf)


def tree_leaves_with_path(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> list:
    """[(key path, leaf)] in tree_flatten's order."""
    return tree_flatten_with_path(tree, is_leaf)[0]


def tree_map_with_path(func: Callable, tree: PyTree, *rests: PyTree,
                       is_leaf: Callable[[PyTree], bool] | None = None) -> PyTree:
    """tree_map whose func also receives each leaf's key path first: func(path, leaf, *rest leaves)."""
    pairs, spec = tree_flatten_with_path(tree, is_leaf)
    others = [spec.flatten_up_to(r) for r in rests]
    return spec.unflatten(func(path, leaf, *values) for (path, leaf), *values in zip(pairs, *others))


def keystr(kp: tuple) -> str:
    """A key path as source text: `['a'][0].x`."""
    return "".join(str(k) for k in kp)
