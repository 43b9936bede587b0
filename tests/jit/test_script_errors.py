"""jit.script refuses what it does not support with a ScriptError at the right place, never anything else."""

from __future__ import annotations

import inspect
import random

import pytest

import scriptc
from scriptc import nn
from scriptc.errors import ScriptError
from scriptc.jit.frontend.compile import ScriptContext

from ..source_util import define


def compile_source(source: str):
    """Compile the first function of `source` as jit.script would."""
    return ScriptContext().compile_function_graph(define(source))


pytestmark = pytest.mark.invalid_graphs  # refused scripts leave half-built graphs behind


@pytest.mark.parametrize("body, message, line, col", [
    ("def f(x):\n    g = lambda y: y\n    return x\n", "Lambda aren't supported", 6, 9),
    ("def f(x):\n    yield x\n", "Yield aren't supported", 6, 5),
    ("def f(x):\n    with x:\n        pass\n    return x\n", "does not define __enter__ and __exit__ methods", 6, 10),
    ("def f(x):\n    try:\n        x = x + 1\n    except Exception:\n        pass\n    return x\n",
     "try blocks aren't supported", 6, 5),
    ("def f(x):\n    global y\n    return x\n", "global variables aren't supported", 6, 5),
    ("def f(x):\n    def inner(y):\n        return y\n    return x\n", "nested function definitions", 6, 5),
    ("def f(*args):\n    return args\n", "*args and **kwargs are not supported", 5, 7),
    ("def f(x, **kw):\n    return x\n", "*args and **kwargs are not supported", 5, 10),
    ("def f(x):\n    if (n := 3) > 2:\n        return x\n    return x\n", "walrus operator", 6, 9),
    ("def f(x):\n    s = {1, 2}\n    return x\n", "Set aren't supported", 6, 9),
    ("def f(x):\n    return x + undefined_name\n", "undefined value undefined_name", 6, 16),
    ("def f(x):\n    a = x\n    del a\n    return a\n", "undefined value a", 8, 12),
    ("def f(x):\n    torch._check(x > 0, x)\n    return x\n", "message must be a string constant", 6, 5),
    ("def f(x, n: int):\n    y = 1\n    for i in range(n):\n        y = x\n    return y\n",
     "previously had type int", 7, 5),
    ("def f(x):\n    return torch.relu(x, 3, 4)\n", "relu", 6, 12),
    ("def f(x):\n    return x.sum(dim='a')\n", "Arguments for call are not valid", 6, 12),
    ("def f(x):\n    return torch.frobnicate(x)\n", "object has no attribute frobnicate", 6, 12),
    ("def f(x):\n    import os\n    return x\n", "import statements are not supported", 6, 5),
    ("def f(x):\n    del x.y\n    return 1\n", "del statements are only supported for deleting list and dict items", 6, 9),
    ("async def f(x):\n    return x\n", "async functions are not supported", 5, 1),
    ("def f(x):\n    for i in range(3):\n        pass\n    else:\n        pass\n    return x\n", "for ... else", 6, 5),
    ("def f(x):\n    return x if x else 3\n", "conditional expression have types", 6, 12),
    ("def f(x):\n    return b'raw'\n", "bytes literals are not supported", 6, 12),
    ("def f(x, /, y):\n    return x\n", "positional-only parameters", 5, 7),
    ("def f(x):\n    return ()[0]\n", "Tuple index out of range. Tuple is length 0 and index is 0", 6, 15),
    ("def f(x: int):\n    if x > 0:\n        y = 1\n    return y\n", "'y' is not defined in the false branch", 8, 12),
    ("def f(x: int):\n    if x > 0:\n        y = 1\n    else:\n        y = 'a'\n    return y\n",
     "has type int in the true branch and type str", 10, 12),
    ("def f(x: int):\n    if x > 0:\n        return 1\n    return 'a'\n", "Previous return statement returned", 5, 1),
    ("def f(x: int):\n    return f(x - 1)\n", "recursive call to f()", 6, 12),
    ("def f(x: int) -> str:\n    return x\n", "annotated as having type str but is actually of type int", 6, 5),
    ("def f(x: Dict[List[int], int]):\n    return x\n", "Dict keys must be", 5, 10),
    ("def f(x: int):\n    y: List[int] = [1, 'a']\n    return y\n",
     "List type annotation `List[int]` did not match the types of the given list elements, which were unified "
     "to Union[int, str]", 6, 20),
    ("def f(x: Optional[int]):\n    return x + 1\n", "unsupported operand types for +: Optional[int] and int", 6, 12),
    ("def f(x):\n    return x.frobnicate()\n", "'Tensor' object has no attribute or method 'frobnicate'", 6, 12),
    ("def f(x: str):\n    return x.frobnicate()\n", "'str' has no method 'frobnicate'", 6, 12),
    ("def f(x: List[int]):\n    return x[0:1:0]\n", "slice step cannot be zero", 6, 14),
    ("def f(x):\n    return x[1, ..., ...]\n", "single ellipsis", 6, 12),
    ("def f(x):\n    *b, = (x, x)\n    return b\n", "A Starred expression may only appear on the lhs", 6, 5),
    ("def f(x):\n    raise Undefined(x, 'hi')\n", "undefined value Undefined", 6, 11),
    ("def f(x):\n    raise 3 + 4\n", "exceptions must derive from BaseException", 6, 11),
    ("def f(x):\n    return g(x)\n\ndef g(b: bool):\n    return b\n",
     "Expected a value of type 'bool' for argument 'b' but instead found type 'Tensor'", 6, 12),
    ("def f(x):\n    return Derived().two(x)\n\nclass Base:\n    def two(self, x):\n        return x\n\n"
     "class Derived(Base):\n    pass\n", "TorchScript does not support inheritance", 6, 12),
    ("def f(x):\n    raise len(x)\n", "exceptions must derive from BaseException", 6, 11),
    ("def f(x: int):\n    return Pair((x, x))\n\nclass Pair(tuple):\n    pass\n",
     "a subclass of a Python builtin type is not a script class", 6, 12),
    ("def f(x: int):\n    return Empty(x)\n\nclass Empty:\n    pass\n", "Empty() takes no arguments", 6, 12),
    ("def f(x: int):\n    return type(x)\n", "type() in scripted code takes a module or a script-class object", 6, 12),
    ("def f(x: List[str]):\n    return torch.Size(x)\n", "torch.Size() takes a list or tuple of ints", 6, 12),
])
def test_unsupported_constructs_name_the_construct_and_place(body, message, line, col):
    with pytest.raises(ScriptError) as info:
        compile_source(body)
    error = info.value
    assert message in str(error)
    assert (error.line, error.col) == (line, col), str(error)
    assert error.source_line is not None and "^" in str(error)


def test_deep_expressions_compile():
    deep = "def f(x: int):\n    return " + " + ".join(["x"] * 500) + "\n"
    assert ScriptContext().compile_function_graph(define(deep)) is not None


def test_a_module_whose_init_skipped_super_is_a_script_error():
    import scriptc

    class NoSuper(scriptc.nn.Module):
        def __init__(self):
            self.x = 2

        def forward(self):
            return self.x

    with pytest.raises(ScriptError, match="has not been initialized, did you forget to call 'super\\(\\)'"):
        scriptc.jit.script(NoSuper())


def test_source_that_cannot_be_read_is_a_script_error():
    import linecache

    fn = define("def f(x):\n    return x\n")
    filename = fn.__code__.co_filename
    lines = linecache.cache[filename]
    try:
        # the file changed under the function: an unterminated bracket (inspect's tokenize raised TokenError)
        linecache.cache[filename] = (0, None, lines[2][:4] + ["def f(x):\n", "    return (x\n"], filename)
        with pytest.raises(ScriptError) as info:
            compile_source_of(fn)
        assert info.value.line is not None
        del linecache.cache[filename]  # and a file that is gone
        with pytest.raises(ScriptError, match="could not read the source"):
            compile_source_of(fn)
    finally:
        linecache.cache[filename] = lines


def compile_source_of(fn):
    return ScriptContext().compile_function_graph(fn)


def test_syntax_errors_show_the_source_line_and_a_caret():
    from scriptc.jit.frontend.parser import parse
    from scriptc.jit.frontend.source import Source

    text = "def f(x):\n    return x @@ x\n"
    with pytest.raises(ScriptError) as info:
        parse(Source(text, "model.py", 10))
    message = str(info.value)
    assert message.startswith("model.py:12:") and "invalid syntax" in message
    assert "return x @@ x" in message and message.strip().endswith("^")


def test_wrong_op_arguments_show_the_schema():
    with pytest.raises(ScriptError) as info:
        compile_source("def f(x):\n    return torch.clamp(x, min='low')\n")
    assert "clamp(self: Tensor" in str(info.value)


VALID = '''def f(x, y, n: int):
    z = x * 2 + y
    total = 0.0
    for i in range(n):
        if float(z.sum()) > 3.0:
            z = z - 1
        else:
            z = torch.relu(z) + i
        total += 1.5
    while total > 0.0:
        total -= 2.0
    w = [z, x]
    return torch.cat(w, 0), total
'''


def _mutants(seed: int, count: int):
    rng = random.Random(seed)
    tokens = ["(", ")", ":", ",", "x", "y", "+", "-", "*", "if", "for", "return", "1", "2.5", "[", "]", "=", " ",
              "\n", "    ", "torch", ".", "z", "not", "and", "'s'", "None", "lambda", "yield", "@", "{", "}"]
    for _ in range(count):
        text = list(VALID)
        for _ in range(rng.randint(1, 4)):
            pos = rng.randrange(len(text))
            action = rng.random()
            if action < 0.4:
                del text[pos]
            elif action < 0.8:
                text.insert(pos, rng.choice(tokens))
            else:
                text[pos] = rng.choice(tokens)
        yield "".join(text)


def test_fuzzed_scripts_give_a_graph_or_a_script_error():
    import warnings

    from scriptc.ir import verify

    warnings.simplefilter("ignore", SyntaxWarning)
    ok = refused = 0
    for source in _mutants(seed=1234, count=1500):
        try:
            fn = define(source)
        except Exception:
            continue  # Python itself cannot define the mutated function: not an input jit.script can get
        try:
            graph = ScriptContext().compile_function_graph(fn)
        except ScriptError:
            refused += 1
            continue
        verify(graph)
        ok += 1
    assert ok > 0 and refused > 0



class _PreparesItself:
    def __prepare_scriptable__(self):
        return self


def test_an_object_whose_prepare_scriptable_names_itself_is_refused_not_scripted_again_and_again():
    import scriptc

    with pytest.raises(ScriptError, match="cannot compile a _PreparesItself"):
        scriptc.jit.script(_PreparesItself())


class _CallsDataParallel(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Linear(3, 3)

    def forward(self, x):
        if x.is_cuda:
            return nn.parallel.data_parallel(self.main, x, range(2))  # the call refused
        return self.main(x)


def test_a_refused_library_function_is_reported_at_the_users_call():
    """A scriptc function scripted code cannot compile (torch refuses data_parallel too) is refused at
    the user's call, naming the library's line only as the reason."""
    with pytest.raises(ScriptError) as caught:
        scriptc.jit.script(_CallsDataParallel())
    lines, first = inspect.getsourcelines(_CallsDataParallel.forward)
    call = first + next(i for i, text in enumerate(lines) if "the call refused" in text)
    assert (caught.value.filename, caught.value.line) == (__file__, call)
    assert "data_parallel cannot be compiled" in caught.value.message
