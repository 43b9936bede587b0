"""torch.fx.subgraph_rewriter.replace_pattern: find every occurrence of a pattern graph in a GraphModule
and replace it with a replacement graph."""

from __future__ import annotations

from typing import Callable, NamedTuple

from scriptc.fx.graph import Graph
from scriptc.fx.graph_module import GraphModule
from scriptc.fx.node import Node

__all__ = ["Match", "replace_pattern"]


class Match(NamedTuple):
    """One replaced occurrence: the pattern's output node the match was anchored at, and pattern node ->
    graph value (a placeholder may match a constant argument)."""
    anchor: Node
    nodes_map: dict[Node, Node]


def _graph_of(pattern: Callable | GraphModule | Graph) -> Graph:
    from scriptc.fx._symbolic_trace import symbolic_trace
    if isinstance(pattern, Graph):
        return pattern
    if isinstance(pattern, GraphModule):
        return pattern.graph
    return symbolic_trace(pattern).graph


class _Matcher:
    """Structural match of a single-output pattern graph, anchored at its returned node."""

    def __init__(self, pattern: Graph) -> None:
        self.placeholders = [n for n in pattern.nodes if n.op == "placeholder"]
        output = next(n for n in pattern.nodes if n.op == "output")
        if not isinstance(output.args[0], Node):
            raise NotImplementedError("replace_pattern: scriptc matches patterns that return one value")
        self.anchor = output.args[0]

    def match(self, candidate: Node) -> dict[Node, Node] | None:
        nodes_map: dict[Node, Node] = {}
        if not self._match_node(self.anchor, candidate, nodes_map):
            return None
        matched = {g for p, g in nodes_map.items() if p.op != "placeholder"}
        for p, g in nodes_map.items():
            if p.op != "placeholder" and p is not self.anchor and any(u not in matched for u in g.users):
                return None  # an inner value is also read outside the match: replacing would lose it
        return nodes_map

    def _match_node(self, p: Node, g: Node, nodes_map: dict[Node, Node]) -> bool:
        if p in nodes_map:
            return nodes_map[p] is g
        if p.op == "placeholder":
            nodes_map[p] = g
            return True
        if p.op != g.op or p.target != g.target or p.op == "output":
            return False
        if len(p.args) != len(g.args) or set(p.kwargs) != set(g.kwargs):
            return False
        nodes_map[p] = g
        return all(self._match_arg(pa, ga, nodes_map) for pa, ga in zip(p.args, g.args)) and \
            all(self._match_arg(p.kwargs[k], g.kwargs[k], nodes_map) for k in p.kwargs)

    def _match_arg(self, p, g, nodes_map: dict[Node, Node]) -> bool:
        if isinstance(p, Node) and p.op == "placeholder" and not isinstance(g, Node):
            if p in nodes_map:
                return not isinstance(nodes_map[p], Node) and type(nodes_map[p]) is type(g) and nodes_map[p] == g
            nodes_map[p] = g
            return True
        if isinstance(p, Node):
            return isinstance(g, Node) and self._match_node(p, g, nodes_map)
        if isinstance(p, (list, tuple)):
            return isinstance(g, (list, tuple)) and len(p) == len(g) and \
                all(self._match_arg(a, b, nodes_map) for a, b in zip(p, g))
        return not isinstance(g, Node) and type(p) is type(g) and p == g


def replace_pattern(gm: GraphModule, pattern: Callable | GraphModule, replacement: Callable | GraphModule) -> list[Match]:
    """Replace each non-overlapping occurrence of `pattern` (a function or GraphModule, traced) in gm with
    `replacement` (same inputs); recompiles gm and returns the matches."""
    pattern_graph, replacement_graph = _graph_of(pattern), _graph_of(replacement)
    matcher = _Matcher(pattern_graph)
    replacement_inputs = [n for n in replacement_graph.nodes if n.op == "placeholder"]
    graph = gm.graph
    matches: list[Match] = []
    taken: set[Node] = set()
    for node in list(graph.nodes):
        nodes_map = matcher.match(node)
        if nodes_map is None:
            continue
        inner = [g for p, g in nodes_map.items() if p.op != "placeholder"]
        if taken.intersection(inner):
            continue
        taken.update(inner)
        matches.append(Match(matcher.anchor, nodes_map))
    replaced: dict[Node, Node] = {}
    for match in matches:
        # An earlier replacement may have removed a node this match reads: read its replacement instead.
        for p, g in list(match.nodes_map.items()):
            if isinstance(g, Node) and g in replaced:
                match.nodes_map[p] = replaced[g]
        anchor = match.nodes_map[matcher.anchor]
        inputs = [match.nodes_map[p] for p in matcher.placeholders]
        with graph.inserting_before(anchor):
            result = graph.graph_copy(replacement_graph, dict(zip(replacement_inputs, inputs)))
        anchor.replace_all_uses_with(result)
        replaced[anchor] = result
        for p in reversed(list(pattern_graph.nodes)):
            g = match.nodes_map.get(p)
            if g is not None and p.op != "placeholder" and not g.users:
                graph.erase_node(g)
    gm.recompile()
    return matches
