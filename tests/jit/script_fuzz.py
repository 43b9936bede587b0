"""Random Python functions for fuzzing jit.script: well-typed and ill-typed code, supported and
refused constructs, deep nesting. Each is valid Python (the generator keeps Python's own syntax
rules), so that inspect can read it as jit.script would."""

from __future__ import annotations

import random

NAMES = ["a", "b", "n", "s", "xs", "d", "t", "o"]
PARAMS = "a: int, b: float, n: int, s: str, xs: List[int], d: Dict[str, int], t: torch.Tensor, o: Optional[int]"
BINARY = ["+", "-", "*", "/", "//", "%", "**", "<<", ">>", "&", "|", "^", "@"]
COMPARE = ["<", "<=", ">", ">=", "==", "!=", "in", "not in", "is", "is not"]
CALLS = ["len", "abs", "min", "max", "int", "float", "str", "bool", "sum", "sorted", "list", "range", "divmod",
         "round", "print", "isinstance", "torch.relu", "torch.zeros", "math.sqrt", "torch.tensor", "enumerate"]
METHODS = ["append", "pop", "upper", "split", "keys", "get", "sum", "view", "size", "item", "items", "index",
           "strip", "join", "tolist", "clone", "insert", "sort", "count", "format", "frobnicate"]
ATOMS = ["0", "1", "2", "-3", "2.5", "True", "False", "None", "'x'", "\"ab\"", "[1, 2]", "[]", "{}", "{'k': 1}",
         "(1, 'a')", "()", "...", "1j", "b'raw'", "f'{a}'"]


class Generator:
    def __init__(self, seed: int, max_depth: int = 4):
        self.rng = random.Random(seed)
        self.max_depth = max_depth

    def choice(self, items):
        return self.rng.choice(items)

    def expr(self, depth: int = 0) -> str:
        if depth >= self.max_depth or self.rng.random() < 0.3:
            return self.choice(NAMES + ATOMS)
        kind = self.rng.random()
        sub = lambda: self.expr(depth + 1)  # noqa: E731
        if kind < 0.25:
            return f"({sub()} {self.choice(BINARY)} {sub()})"
        if kind < 0.35:
            return f"({sub()} {self.choice(COMPARE)} {sub()})"
        if kind < 0.42:
            return f"({self.choice(['not ', '-', '~'])}{sub()})"
        if kind < 0.55:
            args = ", ".join(sub() for _ in range(self.rng.randint(0, 2)))
            return f"{self.choice(CALLS)}({args})"
        if kind < 0.65:
            args = ", ".join(sub() for _ in range(self.rng.randint(0, 2)))
            return f"{self.choice(NAMES)}.{self.choice(METHODS)}({args})"
        if kind < 0.72:
            return f"{self.choice(NAMES)}[{self.choice([sub(), '1:', ':-1', '::2', '0, None', '...'])}]"
        if kind < 0.78:
            return f"({sub()} if {sub()} else {sub()})"
        if kind < 0.84:
            return f"({sub()} {self.choice(['and', 'or'])} {sub()})"
        if kind < 0.9:
            return f"[{sub()} for {self.choice(NAMES)} in {sub()}]"
        if kind < 0.94:
            return f"{{{sub()}: {sub()} for {self.choice(NAMES)} in {sub()}}}"
        return self.choice(["(lambda q: q)", "(yield)", "{1, 2}", "(q := 1)", "x.T", "t.shape", "t.mT",
                            "torch.jit.annotate(List[int], [])", "torch.jit.isinstance(o, int)"])

    def target(self) -> str:
        return self.choice(NAMES + ["xs[0]", "d['k']", "t[0]", "a, b", "(a, *xs)", "self.x", "n"])

    def statement(self, depth: int, indent: str) -> list[str]:
        kind = self.rng.random()
        body = lambda: self.block(depth + 1, indent + "    ")  # noqa: E731
        if depth < 3 and kind < 0.15:
            lines = [f"{indent}if {self.expr()}:"] + body()
            if self.rng.random() < 0.5:
                lines += [f"{indent}else:"] + body()
            return lines
        if depth < 3 and kind < 0.25:
            return [f"{indent}for {self.choice(NAMES)} in {self.expr()}:"] + body()
        if depth < 3 and kind < 0.3:
            return [f"{indent}while {self.expr()}:"] + body()
        if kind < 0.55:
            return [f"{indent}{self.target()} = {self.expr()}"]
        if kind < 0.62:
            return [f"{indent}{self.choice(NAMES)} {self.choice(BINARY)}= {self.expr()}"]
        if kind < 0.67:
            return [f"{indent}{self.choice(NAMES)}: {self.choice(['int', 'List[int]', 'Optional[str]', 'Tensor'])}"
                    f" = {self.expr()}"]
        if kind < 0.72:
            return [f"{indent}return {self.expr()}"]
        if kind < 0.76:
            return [f"{indent}{self.choice(['break', 'continue', 'pass'])}"]
        if kind < 0.8:
            return [f"{indent}assert {self.expr()}, 'message'"]
        if kind < 0.84:
            return [f"{indent}raise ValueError({self.expr()})"]
        if kind < 0.88:
            return [f"{indent}del {self.choice(['xs[0]', 'd[s]', 'a'])}"]
        if kind < 0.9:
            return [f"{indent}{self.choice(['import os', 'global a', 'with t: pass', 'try: pass'])}"]
        return [f"{indent}{self.expr()}"]

    def block(self, depth: int, indent: str) -> list[str]:
        lines = []
        for _ in range(self.rng.randint(1, 3)):
            lines += self.statement(depth, indent)
        return lines

    def function(self) -> str:
        lines = [f"def fuzzed({PARAMS}):"] + self.block(0, "    ")
        if self.rng.random() < 0.7:
            lines.append(f"    return {self.expr()}")
        return "\n".join(lines) + "\n"


def deep_expressions(depth: int) -> list[str]:
    """Functions with one expression `depth` levels deep, in each form Python's parser allows."""
    return [
        "def f(x: int):\n    return " + " + ".join(["x"] * depth) + "\n",
        "def f(x: int):\n    return " + "-" * depth + "x\n",
        "def f(x: bool):\n    return " + "not " * depth + "x\n",
        "def f(x: float):\n    return " + " ** ".join(["x"] * depth) + "\n",
        "def f(x: int):\n    return " + " if x else ".join(["x"] * depth) + "\n",
        "def f(x: int):\n    return " + " < ".join(["x"] * depth) + "\n",
        "def f(x: int):\n    return " + " and ".join(["x > 0"] * depth) + "\n",
    ]
