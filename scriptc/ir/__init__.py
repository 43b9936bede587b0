"""scriptc.ir: the typed SSA graph, its text form (print and parse) and the verifier."""

from scriptc.ir import types  # noqa: F401
from scriptc.ir.graph import Block, Graph, Node, SourceLocation, Use, Value, walk  # noqa: F401
from scriptc.ir.parser import ParseError, parse  # noqa: F401
from scriptc.ir.printer import graph_code, print_graph  # noqa: F401
from scriptc.ir.verify import VerifyError, verify  # noqa: F401
