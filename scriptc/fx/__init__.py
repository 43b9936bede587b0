"""torch.fx: capture a module as a Graph of Python-level operations (symbolic_trace), edit the graph,
and turn it back into a runnable module (GraphModule) or run it node by node (Interpreter)."""

from __future__ import annotations

import scriptc
from scriptc.fx import immutable_collections, passes, subgraph_rewriter  # noqa: F401  (torch.fx's submodules)
from scriptc.fx._symbolic_trace import PH, Tracer, symbolic_trace, wrap  # noqa: F401  (PH: torch.fx.PH)
from scriptc.fx.graph import Graph
from scriptc.fx.graph_module import GraphModule
from scriptc.fx.interpreter import Interpreter, Transformer
from scriptc.fx.node import Node, has_side_effect, map_arg
from scriptc.fx.proxy import Proxy
from scriptc.fx.subgraph_rewriter import replace_pattern

__all__ = ["symbolic_trace", "Tracer", "wrap", "Graph", "GraphModule", "Interpreter", "Transformer", "Node", "Proxy",
           "replace_pattern", "has_side_effect", "map_arg"]

has_side_effect(scriptc._assert)
