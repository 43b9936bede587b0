"""The hand-written IR parser: it reads what ir.lark (the text form's spec) accepts, refuses what it
refuses, and never recurses past its nesting limit on the texts a hostile archive can hold (the
100,000-node chain: tests/runtime/test_hostile_archives.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from scriptc import ir
from scriptc.ir import parser

from .test_ir import GOOD

lark = pytest.importorskip("lark")

EVERY_FORM = '''graph(%self : Module(layers.0), %x : Tensor(float32, [B, ?, 3], cuda), %o : Optional[Tensor]):
  %a : Dict[str, List[Tuple[int, float]]] = prim::Constant[value={"k": [(1, 2.5), (3, -1e-05)], "e": []}]()
  %b : complex = prim::Constant[value=complex(1.0, -inf)]()
  %c : Device = prim::Constant[value=Device("cpu")]()
  %d : Tensor(bool, [2]) = prim::Constant[value=array(bool, [2], [True, False])]()
  %e : Tuple[int] = prim::Constant[value=(1,)]()
  %f : float = prim::Constant[value=nan]()
  %g : None = prim::Constant[value=None]()
  = prim::RaiseException[message="\\u00e9\\n"]() # file with spaces.py:3:9
  return (%x)
'''

BAD = [
    "graph(%x : Tensor):\n  %1 : Tensor = relu(%x)\n",                        # no return
    "graph(%x : Tensor):\n  return (%x) trailing\n",
    "graph(%x : Tensor):\n  %1 : Tensor = relu(%x) extra\n  return (%1)\n",
    'graph(%x : Tensor):\n  %1 : str = prim::Constant[value="a\nb"]()\n  return (%x)\n',  # newline in a string
    "graph(%x : Tensor):\n  %1 : int = prim::Constant[value=(,)]()\n  return (%x)\n",
    "graph(%x : Tensor(float32, [B, 4)):\n  return (%x)\n",
    "graph(%x : Tensor):\n  %1 : Tensor = relu(%x)\n    block0():\n      -> (%x)\n  return %1\n",
]


@pytest.fixture(scope="module")
def grammar():
    return lark.Lark((Path(parser.__file__).with_name("ir.lark")).read_text(), parser="lalr")


@pytest.mark.parametrize("text", [GOOD, EVERY_FORM])
def test_the_grammar_accepts_what_the_parser_reads_and_the_printer_writes(text, grammar):
    graph = ir.parse(text)
    printed = ir.print_graph(graph)
    assert ir.print_graph(ir.parse(printed)) == printed
    grammar.parse(text)
    grammar.parse(printed)


def test_module_paths_that_are_no_identifiers_print_quoted_and_parse_back(grammar):
    text = 'graph(%self : Module("trunk.block1-0"), %x : Tensor):\n  return (%x)\n'
    graph = ir.parse(text)
    assert str(graph.inputs[0].type) == 'Module("trunk.block1-0")'
    assert ir.print_graph(graph) == ir.print_graph(ir.parse(ir.print_graph(graph)))
    grammar.parse(text)


@pytest.mark.parametrize("type_text", [
    'NamedTuple("make.<locals>.Pair", a: int, b: Tensor)',
    'Object("make.<locals>.Box")',
    'Interface("make.<locals>.HasArea")',
    'Enum("make.<locals>.Color", int)',
])
def test_class_names_that_are_no_dotted_identifiers_print_quoted_and_parse_back(type_text, grammar):
    """A class defined inside a function keeps `<locals>` in its name; its graphs must still save
    (a NamedTuple or Enum of one made archives jit.load refused)."""
    text = f"graph(%x : {type_text}):\n  return (%x)\n"
    graph = ir.parse(text)
    assert str(graph.inputs[0].type) == type_text
    assert ir.print_graph(ir.parse(ir.print_graph(graph))) == ir.print_graph(graph)
    grammar.parse(text)


@pytest.mark.invalid_graphs  # (a text refused half-way leaves a half-built graph)
@pytest.mark.parametrize("text", BAD)
def test_the_parser_refuses_what_the_grammar_refuses(text, grammar):
    with pytest.raises(lark.exceptions.UnexpectedInput):
        grammar.parse(text)
    with pytest.raises(ir.ParseError):
        ir.parse(text)


def test_a_control_character_in_a_string_is_a_parse_error():
    """(The fuzzer's JSONDecodeError: a tab inside a string literal.)"""
    with pytest.raises(ir.ParseError, match="2:35: invalid string literal"):
        ir.parse('graph(%x : Tensor):\n  %1 : str = prim::Constant[value="a\tb"]()\n  return (%x)\n')


@pytest.mark.invalid_graphs
@pytest.mark.parametrize("nest", [
    lambda n: "[" * n + "1" + "]" * n,                          # a literal
    lambda n: "(" * n + "1," + ")" * n,
])
def test_deep_literals_are_refused_before_the_recursion_limit(nest):
    for depth, ok in ((parser.MAX_NESTING, True), (parser.MAX_NESTING + 1, False), (100_000, False)):
        text = f"graph(%x : Tensor):\n  %1 : int = prim::Constant[value={nest(depth)}]()\n  return (%x)\n"
        if ok:
            ir.parse(text)
        else:
            with pytest.raises(ir.ParseError, match="nested more than"):
                ir.parse(text)


@pytest.mark.invalid_graphs
def test_deep_types_and_blocks_are_refused_before_the_recursion_limit():
    deep_type = "List[" * 100_000 + "int" + "]" * 100_000
    with pytest.raises(ir.ParseError, match="nested more than"):
        ir.parse(f"graph(%x : {deep_type}):\n  return (%x)\n")
    lines = ["graph(%c : bool, %x : Tensor):"]
    depth = 2000
    for level in range(depth):
        lines += [f"  %{level} : Tensor = prim::If(%c)", "    block0():"]
    lines += ["      -> (%x)"] * depth + ["  return (%x)"]
    with pytest.raises(ir.ParseError, match="nested more than"):
        ir.parse("\n".join(lines) + "\n")


@pytest.mark.invalid_graphs
def test_types_nest_at_most_max_type_nesting_levels():
    """(Each walk of a type - str(), fits, an archive's checks - recurses once per level.)"""
    def nested(levels: int) -> str:
        return "Optional[int|" * (levels - 1) + "float" + "]" * (levels - 1)
    assert str(parser.parse_type(nested(parser.MAX_TYPE_NESTING))) == nested(parser.MAX_TYPE_NESTING)
    with pytest.raises(ir.ParseError, match=f"a type nested more than {parser.MAX_TYPE_NESTING} levels deep"):
        parser.parse_type(nested(parser.MAX_TYPE_NESTING + 1))
    with pytest.raises(ir.ParseError, match="a type nested more than"):
        ir.parse(f"graph(%x : {nested(500)}):\n  return (%x)\n")
    with pytest.raises(ir.ParseError, match="unexpected token 'x'"):
        parser.parse_type("int x")
