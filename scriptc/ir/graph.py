"""Graph, Block, Node, Value: the typed SSA IR with nested blocks (DESIGN.md, "The IR").

A Block owns a doubly linked list of Nodes, so inserting, erasing and moving a
node are O(1) and no pass is quadratic in graph size. Every Value records its
uses (a node input, or a block return), so replacing all uses is O(uses).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

from scriptc.types import Type


@dataclass(frozen=True)
class SourceLocation:
    """Where a node came from in the user's code: printed as `# file:line:col`. `text`: that source
    line, when the node was compiled from source (errors at run time show it)."""

    file: str
    line: int
    col: int
    text: str | None = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


class Use:
    """`value` is input `index` of `user`, a Node, or return `index` of `user`, a Block."""

    __slots__ = ("user", "index")

    def __init__(self, user, index: int):
        self.user, self.index = user, index


class Uses:
    """A value's uses in insertion order, with O(1) add and remove (a value may have thousands)."""

    __slots__ = ("_uses",)

    def __init__(self):
        self._uses: dict[tuple[int, int], Use] = {}

    def add(self, use: Use) -> None:
        self._uses[(id(use.user), use.index)] = use

    def remove(self, user, index: int) -> None:
        self._uses.pop((id(user), index), None)

    def __iter__(self):
        return iter(list(self._uses.values()))

    def __len__(self) -> int:
        return len(self._uses)

    def __bool__(self) -> bool:
        return bool(self._uses)


class Value:
    """An SSA value: defined once, by a node output or a block parameter, with a type."""

    __slots__ = ("type", "node", "block", "index", "uses", "name")

    def __init__(self, type: Type, node: "Node | None" = None, block: "Block | None" = None, index: int = 0,
                 name: str | None = None):
        self.type = type
        self.node = node
        self.block = block
        self.index = index
        self.uses = Uses()
        self.name = name

    def replace_all_uses_with(self, other: "Value") -> None:
        """Make every user of this value use `other` instead."""
        if other is self:
            return
        for use in self.uses:
            if isinstance(use.user, Node):
                use.user.inputs[use.index] = other
            else:
                use.user.returns[use.index] = other
            other.uses.add(use)
        self.uses = Uses()

    def __repr__(self) -> str:
        return f"<Value %{self.name or id(self)} : {self.type}>"


class Node:
    """One operation: an op-table op name or a `prim::` op, with inputs, outputs, attributes, blocks."""

    __slots__ = ("op", "inputs", "outputs", "attrs", "blocks", "loc", "owner", "prev", "next")

    def __init__(self, op: str, inputs: list[Value] = (), output_types: list[Type] = (),
                 attrs: dict[str, Any] | None = None, loc: SourceLocation | None = None):
        self.op = op
        self.inputs: list[Value] = []
        self.outputs: list[Value] = [Value(t, self, None, i) for i, t in enumerate(output_types)]
        self.attrs = dict(attrs or {})
        self.blocks: list[Block] = []
        self.loc = loc
        self.owner: Block | None = None
        self.prev: Node | None = None
        self.next: Node | None = None
        for v in inputs:
            self.add_input(v)

    @property
    def output(self) -> Value:
        if len(self.outputs) != 1:
            raise ValueError(f"{self.op} has {len(self.outputs)} outputs")
        return self.outputs[0]

    def add_input(self, value: Value) -> None:
        value.uses.add(Use(self, len(self.inputs)))
        self.inputs.append(value)

    def set_input(self, index: int, value: Value) -> None:
        self.inputs[index].uses.remove(self, index)
        self.inputs[index] = value
        value.uses.add(Use(self, index))

    def drop_inputs(self) -> None:
        for i, v in enumerate(self.inputs):
            v.uses.remove(self, i)
        self.inputs = []

    def add_output(self, type: Type) -> Value:
        v = Value(type, self, None, len(self.outputs))
        self.outputs.append(v)
        return v

    def add_block(self) -> "Block":
        b = Block(owner_node=self)
        self.blocks.append(b)
        return b

    def erase(self) -> None:
        """Remove this node (its outputs must be unused); also drops the uses its blocks make."""
        for out in self.outputs:
            if out.uses:
                raise ValueError(f"cannot erase {self.op}: output still used")
        for block in self.blocks:
            block.clear()
        self.drop_inputs()
        if self.owner is not None:
            self.owner._unlink(self)

    def insert_before(self, anchor: "Node") -> "Node":
        """Move or insert this node right before `anchor` (in anchor's block)."""
        if self.owner is not None:
            self.owner._unlink(self)
        anchor.owner._link_before(self, anchor)
        return self

    def insert_after(self, anchor: "Node") -> "Node":
        if self.owner is not None:
            self.owner._unlink(self)
        nxt = anchor.next
        if nxt is None:
            anchor.owner.append(self)
        else:
            anchor.owner._link_before(self, nxt)
        return self

    def is_before(self, other: "Node") -> bool:
        """Within one block: whether self comes before other (O(distance))."""
        node = self.next
        while node is not None:
            if node is other:
                return True
            node = node.next
        return False

    def __repr__(self) -> str:
        return f"<Node {self.op}>"


class Block:
    """An ordered list of nodes with parameters and returned values; owned by a Graph or a Node."""

    __slots__ = ("params", "returns", "first", "last", "owner_node", "size")

    def __init__(self, owner_node: Node | None = None):
        self.params: list[Value] = []
        self.returns: list[Value] = []
        self.first: Node | None = None
        self.last: Node | None = None
        self.owner_node = owner_node
        self.size = 0

    @property
    def nodes(self) -> list[Node]:
        """A snapshot of the nodes in order (safe to mutate the block while iterating it)."""
        return list(self)

    def __iter__(self) -> Iterator[Node]:
        node = self.first
        while node is not None:
            nxt = node.next
            yield node
            node = nxt

    def __len__(self) -> int:
        return self.size

    def add_param(self, type: Type, name: str | None = None) -> Value:
        v = Value(type, None, self, len(self.params), name)
        self.params.append(v)
        return v

    def add_return(self, value: Value) -> None:
        value.uses.add(Use(self, len(self.returns)))
        self.returns.append(value)

    def set_return(self, index: int, value: Value) -> None:
        self.returns[index].uses.remove(self, index)
        self.returns[index] = value
        value.uses.add(Use(self, index))

    def drop_returns(self) -> None:
        for i, v in enumerate(self.returns):
            v.uses.remove(self, i)
        self.returns = []

    def append(self, node: Node) -> Node:
        if node.owner is not None:
            node.owner._unlink(node)
        node.owner = self
        node.prev, node.next = self.last, None
        if self.last is None:
            self.first = node
        else:
            self.last.next = node
        self.last = node
        self.size += 1
        return node

    def prepend(self, node: Node) -> Node:
        if self.first is None:
            return self.append(node)
        if node.owner is not None:
            node.owner._unlink(node)
        self._link_before(node, self.first)
        return node

    def _link_before(self, node: Node, anchor: Node) -> None:
        node.owner = self
        node.prev, node.next = anchor.prev, anchor
        if anchor.prev is None:
            self.first = node
        else:
            anchor.prev.next = node
        anchor.prev = node
        self.size += 1

    def _unlink(self, node: Node) -> None:
        if node.prev is None:
            self.first = node.next
        else:
            node.prev.next = node.next
        if node.next is None:
            self.last = node.prev
        else:
            node.next.prev = node.prev
        node.prev = node.next = None
        node.owner = None
        self.size -= 1

    def clear(self) -> None:
        """Drop every node and return (for erasing the block's owner)."""
        self.drop_returns()
        node = self.last
        while node is not None:
            prev = node.prev
            for b in node.blocks:
                b.clear()
            node.drop_inputs()
            node.owner = None
            node.prev = node.next = None
            node = prev
        self.first = self.last = None
        self.size = 0


class Graph:
    """A function in the IR: a top block whose params are the inputs and whose returns are the outputs."""

    def __init__(self, name: str = "forward"):
        self.block = Block()
        self.name = name

    @property
    def inputs(self) -> list[Value]:
        return self.block.params

    @property
    def outputs(self) -> list[Value]:
        return self.block.returns

    def add_input(self, type: Type, name: str | None = None) -> Value:
        return self.block.add_param(type, name)

    def add_output(self, value: Value) -> None:
        self.block.add_return(value)

    def nodes(self) -> Iterator[Node]:
        """Every node, nested blocks included, in program order."""
        yield from walk(self.block)

    def __iter__(self) -> Iterator[Node]:
        return iter(self.block)

    def __len__(self) -> int:
        return sum(1 for _ in self.nodes())

    def __str__(self) -> str:
        """The text form, with large array constants (frozen weights) shown by dtype, shape and count;
        `scriptc.ir.print_graph(graph)` writes every value."""
        from .printer import SHOWN_VALUES, print_graph
        return print_graph(self, SHOWN_VALUES)

    def copy(self) -> "Graph":
        """A deep copy (new Values and Nodes, same types and attributes)."""
        out = Graph(self.name)
        mapping = {}
        for v in self.inputs:
            mapping[v] = out.add_input(v.type, v.name)
        clone_block_into(self.block, out.block, mapping)
        for v in self.outputs:
            out.add_output(mapping[v])
        return out


def walk(block: Block) -> Iterator[Node]:
    """Every node of the block and of its nested blocks, in program order (iteratively)."""
    stack = [iter(block)]
    while stack:
        try:
            node = next(stack[-1])
        except StopIteration:
            stack.pop()
            continue
        yield node
        for b in reversed(node.blocks):
            stack.append(iter(b))


def clone_node(node: Node, mapping: dict) -> Node:
    """A copy of node whose inputs go through `mapping` (old Value -> new Value); maps its outputs too."""
    new = Node(node.op, [mapping.get(v, v) for v in node.inputs], [o.type for o in node.outputs],
               dict(node.attrs), node.loc)
    for old_out, new_out in zip(node.outputs, new.outputs):
        new_out.name = old_out.name
        mapping[old_out] = new_out
    for b in node.blocks:
        nb = new.add_block()
        for p in b.params:
            mapping[p] = nb.add_param(p.type, p.name)
        clone_block_into(b, nb, mapping, with_params=False)
        for r in b.returns:
            nb.add_return(mapping.get(r, r))
    return new


def clone_block_into(src: Block, dst: Block, mapping: dict, with_params: bool = False) -> None:
    """Append copies of src's nodes to dst (params must already be in mapping)."""
    if with_params:
        for p in src.params:
            mapping[p] = dst.add_param(p.type, p.name)
    for node in src:
        dst.append(clone_node(node, mapping))
