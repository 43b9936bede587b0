"""torch.fx: capture a module as a Graph of Python-level operations (symbolic_trace), edit the graph,
and turn it back into a runnable module (GraphModule) or run it node by node (Interpreter)."""

from __future__ import annotations

import scriptc
from scriptc.fx import passes, subgraph_rewriter  # noqa: F401  (torch.fx.passes, torch.fx.subgraph_rewriter)
from scriptc.fx.graph import Graph, PythonCode
from scriptc.fx.graph_module import GraphModule
from scriptc.fx.interpreter import Interpreter, Transformer
from scriptc.fx.node import Node, has_side_effect, map_arg
from scriptc.fx.proxy import Proxy, TraceError
from scriptc.fx.subgraph_rewriter import replace_pattern
from scriptc.fx._symbolic_trace import PH, Tracer, is_fx_tracing, symbolic_trace, wrap

__all__ = ["symbolic_trace", "Tracer", "Graph", "GraphModule", "Node", "Proxy", "Interpreter", "Transformer",
           "wrap", "replace_pattern", "has_side_effect", "map_arg", "PH", "PythonCode", "TraceError",
           "is_fx_tracing"]

has_side_effect(scriptc._assert)
