"""Functions in TorchScript's language, one construct each: the tests script them and compare with
the same function run as Python, then run the saved archive in scriptc.runtime.

LANGUAGE maps a name to (function, argument tuples). Functions here use only what Python and
TorchScript agree on.
"""

from __future__ import annotations

import math
from enum import Enum
from typing import Any, Dict, List, NamedTuple, Optional, Tuple, Union

import scriptc as torch

# --- numbers and operators -------------------------------------------------------------------


def int_semantics(a: int, b: int) -> Tuple[int, int, int, int, int, int, bool]:
    return a // b, a % b, -a // b, a << 2, a >> 1, (a & b) | (a ^ b), 0 < a < b <= 100


def float_semantics(a: float, b: float) -> Tuple[float, float, float, float]:
    return a // b, a % b, a / b, round(a, 2)


def bool_bitwise(a: bool, b: bool) -> Tuple[bool, bool, bool, bool]:
    c = a
    c &= b
    return a & b, a | b, a ^ b, c


def builtins_on_numbers(a: int, b: float) -> Tuple[int, float, str, str, str, str, int, Tuple[int, int]]:
    return abs(-a), abs(b), bin(a), hex(a), oct(a), chr(65 + a % 26), ord("a") + a, divmod(a, 3)


def math_module(x: float) -> Tuple[float, float, int, int, bool, float]:
    return math.sqrt(abs(x)), math.atan2(x, 2.0), math.floor(x), math.ceil(x), math.isnan(x), math.pi * x


def complex_numbers(a: float, b: float) -> Tuple[complex, complex, float, bool]:
    z = complex(a, b)
    w = z * 2 + 1j
    return w, w - z, abs(z), z == complex(a, b)


# --- strings ----------------------------------------------------------------------------------


def string_methods(s: str) -> Tuple[str, str, List[str], str, bool, int, str, str, Tuple[str, str, str]]:
    return (s.upper(), s.strip(" x"), s.split(" "), "-".join(s.split()), s.startswith("ab"), s.find("b"),
            s.replace("a", "A"), s.center(12, "*"), s.partition(" "))


def string_formatting(name: str, n: int, x: float) -> Tuple[str, str, str]:
    return f"{name}: {n} ({x:.2f})", "{} and {}".format(name, n), "%s=%d" % (name, n)


def string_indexing(s: str) -> Tuple[str, str, str, List[str], bool]:
    chars: List[str] = []
    for c in s:
        if c.isalpha():
            chars.append(c)
    return s[0], s[1:3], s[::-1], chars, "b" in s


# --- lists -----------------------------------------------------------------------------------


def list_methods(xs: List[int]) -> Tuple[List[int], int, int, int, List[int]]:
    ys = xs.copy()
    ys.append(7)
    ys.insert(0, 9)
    ys.extend([1, 2])
    last = ys.pop()
    ys.remove(9)
    ys.sort(reverse=True)
    ys.reverse()
    count = ys.count(7)
    where = ys.index(7)
    zs = ys[1:4] + ys[::2] * 2
    del zs[0]
    zs[0] = 100
    return ys, last, count, where, zs


def list_builtins(xs: List[float]) -> Tuple[float, float, float, List[float], bool, bool, int]:
    return min(xs), max(xs), sum(xs), sorted(xs), any([x > 2.0 for x in xs]), all([x > 0.0 for x in xs]), len(xs)


def comprehensions(n: int) -> Tuple[List[int], List[List[int]], Dict[int, int]]:
    squares = [i * i for i in range(n) if i % 2 == 0]
    nested = [[i + j for j in range(i)] for i in range(n) if i > 0]
    table = {i: i * 3 for i in range(n)}
    return squares, nested, table


def list_truthiness(xs: List[int]) -> int:
    total = 0
    while xs:
        total += xs.pop()
    return total


def enumerate_zip(xs: List[int], ys: List[str]) -> List[str]:
    out: List[str] = []
    for i, (x, y) in enumerate(zip(xs, ys), 1):
        out.append(f"{i}{y}{x}")
    for i, x in enumerate(reversed(xs)):
        out.append(str(i * x))
    return out


# --- dicts ------------------------------------------------------------------------------------


def dict_methods(d: Dict[str, int]) -> Tuple[List[str], List[int], int, int, Optional[int], int, Dict[str, int]]:
    e = d.copy()
    e["z"] = 26
    e.update({"y": 25})
    got = e.get("a", -1)
    missing = e.get("nope")
    popped = e.pop("z")
    e.setdefault("w", 0)
    del e["y"]
    return list(e.keys()), list(e.values()), got, popped, missing, len(e), e


def dict_keys_of_every_kind(x: float) -> Tuple[int, float, bool, Dict[int, str]]:
    by_int = {1: "one", 2: "two"}
    by_float = {1.5: 3.0, x: 4.0}
    by_bool = {True: 1, False: 0}
    items = 0
    for k, v in by_int.items():
        items += k * len(v)
    return items, by_float[x], by_bool[x > 0.0] == 1, dict(zip([3, 4], ["c", "d"]))


# --- control flow -------------------------------------------------------------------------------


def loops_with_exits(n: int) -> Tuple[int, int]:
    total, steps = 0, 0
    for i in range(n):
        if i % 3 == 0:
            continue
        if total > 40:
            break
        total += i
    while True:
        steps += 1
        if steps * steps > n:
            break
    return total, steps


def early_returns(x: int) -> str:
    if x < 0:
        return "negative"
    for i in range(10):
        if i * i == x:
            return f"square of {i}"
    if x % 2 == 0:
        return "even"
    return "odd"


def raises_and_asserts(x: int) -> int:
    assert x >= 0, "x must not be negative"
    if x > 100:
        raise ValueError("too big")
    return x * 2


def formatted_messages(x: int, xs: List[int]) -> int:
    assert x != 3, f"x is {x} of {xs}"
    if x > 100:
        raise ValueError(f"{x} is too big for {xs}")
    if x < 0:
        raise RuntimeError("negative: " + str(x))
    return x


def rebinding(x: int) -> str:
    y = x + 1
    y = str(y)
    return y + "!"


# --- types ------------------------------------------------------------------------------------


def optional_refinement(x: Optional[int], y: Optional[int]) -> int:
    if x is None or y is None:
        return 0
    total = x + y
    assert x is not None
    return total if y > 0 and x > 0 else -total


def union_refinement(v: Union[int, str, List[int]]) -> str:
    if isinstance(v, int):
        return str(v + 1)
    elif isinstance(v, str):
        return v + "?"
    return str(len(v))


def jit_isinstance(v: Union[List[int], Dict[str, int]]) -> int:
    if torch.jit.isinstance(v, List[int]):
        return sum(v)
    return len(v)


def annotations_and_comments(a, b):
    # type: (int, List[float]) -> float
    scale = torch.jit.annotate(float, 2.0)
    empty: List[int] = []
    other = []  # type: List[str]
    other.append("x")
    empty.append(a)
    return float(len(empty) + len(other)) + scale * b[0]


class Point(NamedTuple):
    x: float
    y: float = 0.0


def named_tuples(a: float) -> Tuple[float, float, float]:
    p = Point(a, 2.0)
    q = Point(x=1.0)
    return p.x * p.y, q.y, p[0] + q[0]


class Color(Enum):
    RED = 1
    GREEN = 2


def enums(which: int) -> Tuple[str, int, bool]:
    c = Color.RED if which == 1 else Color.GREEN
    return c.name, c.value, c == Color.GREEN


@torch.jit.script
class Account:
    def __init__(self, owner: str, balance: float):
        self.owner = owner
        self.balance = balance
        self.log: List[float] = []

    def deposit(self, amount: float) -> float:
        self.balance += amount
        self.log.append(amount)
        return self.balance


def script_classes(amount: float) -> Tuple[str, float, List[float]]:
    acct = Account("ann", 10.0)
    acct.deposit(amount)
    acct.deposit(1.0)
    return acct.owner, acct.balance, acct.log


@torch.jit.script
class Version:
    """Python's syntax on a script class's own methods: operators, comparisons, len, [], in, with."""

    def __init__(self, major: int, minor: int):
        self.major = major
        self.minor = minor
        self.log: List[str] = []

    def __lt__(self, other: "Version") -> bool:
        return self.major < other.major or self.major == other.major and self.minor < other.minor

    def __eq__(self, other: "Version") -> bool:
        return self.major == other.major and self.minor == other.minor

    def __add__(self, minors: int) -> "Version":
        return Version(self.major, self.minor + minors)

    def __len__(self) -> int:
        return 2

    def __getitem__(self, i: int) -> int:
        return self.major if i == 0 else self.minor

    def __contains__(self, part: int) -> bool:
        return part == self.major or part == self.minor

    def __enter__(self) -> int:
        self.log.append("enter")
        return self.major

    def __exit__(self, kind: Any, value: Any, trace: Any) -> None:
        self.log.append("exit")


def class_magic_methods(minor: int) -> Tuple[bool, bool, bool, int, int, bool, List[int], List[str], int]:
    a, b = Version(1, minor), Version(1, 2)
    versions = [Version(2, 0), a, b, Version(0, 9)]
    versions.sort()
    newest = sorted(versions, reverse=True)[0]
    with a as major:
        total = major + 1
    return (a < b, a == b + (minor - 2), a != b, len(a), a[1], 3 in a, [v.major * 10 + v.minor for v in versions],
            a.log, newest.major + total)


def enum_iteration_and_slices(xs: List[int]) -> Tuple[List[str], List[int], str]:
    names = [c.name for c in Color]
    every_other = slice(0, None, 2)
    return names, xs[every_other], "abcdef"[every_other]


def deletes_and_checks(xs: List[int], x: torch.Tensor) -> Tuple[List[int], bool, bool, int, int, bool]:
    a = xs[0]
    del a
    del xs[0], xs[-1]
    torch._check(len(xs) >= 0, "a list has no negative length")
    return xs, x.is_complex(), x.is_floating_point(), x.element_size(), x.itemsize, x.is_sparse


def any_and_tuples(t: Tuple[int, str, float]) -> Tuple[str, int, Tuple[str, float]]:
    first: Any = t[0]
    return str(first), len(t), t[1:]


# --- tensors ----------------------------------------------------------------------------------


def tensor_properties(x: torch.Tensor) -> Tuple[List[int], int, torch.Tensor, torch.Tensor, bool]:
    return x.shape, x.ndim, x.T, x.mT, x.is_cuda


def sizes_compared_with_tuples(x: torch.Tensor) -> Tuple[bool, bool, List[int], int]:
    rest = torch.Size(x.size()[1:])
    return x.size() == (2, 3), x.shape != (3, 2), rest, len(rest)


def tensor_literals(n: int) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    a = torch.tensor([1, 2, n])
    b = torch.tensor([[1.5, 2.0], [3.0, 4.0]], dtype=torch.float64)
    c = torch.tensor(True)
    return a, b, c


def tensor_indexing(x: torch.Tensor, i: int) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    mask = x > 0
    return x[i, ..., 1:], x[:, None, [0, 2]], x[mask], x[slice(0, 2), -1]


def tensor_setitem(x: torch.Tensor) -> torch.Tensor:
    y = x.clone()
    y[0] = 1.0
    y[:, 1] = torch.zeros(y.size(0))
    y[y > 2.0] = 2.0
    return y


def item_and_tolist(x: torch.Tensor) -> Tuple[float, List[List[float]], int]:
    v = x.sum().item()
    rows: List[List[float]] = x.tolist()
    n = 0
    if isinstance(v, float):
        n = 1
    return float(v), rows, n


def tensor_arithmetic(x: torch.Tensor, k: int) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    y = x + k
    y += 1
    return 2 - y, y ** 2 / 4, torch.where(y > 3.0, y, x)


def _square(t: torch.Tensor) -> torch.Tensor:
    return t * t


def fork_and_wait(x: torch.Tensor) -> torch.Tensor:
    futures = [torch.jit.fork(_square, x + i) for i in range(3)]
    total = torch.zeros_like(x)
    for f in futures:
        total += torch.jit.wait(f)
    return total


def op_results(x: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    best = x.max(dim=1)  # torch.return_types: fields by name
    values, counts = torch.unique(x.round(), return_counts=True)  # constant flags pick the results
    q = torch.linalg.qr(x @ x.T + torch.eye(x.shape[0])).Q  # an op only in a namespace
    return best.indices, best.values + values.sum(), counts, q.abs(), torch.nn.functional.max_pool1d(
        x.unsqueeze(0), 2, return_indices=True)[1]


def tracing_state(x: torch.Tensor) -> torch.Tensor:
    if torch._C._get_tracing_state():
        return x + 1
    return x - 1


def starred_tuple_arguments(x: torch.Tensor, size: Tuple[int, int]) -> Tuple[torch.Tensor, int, List[int]]:
    grid = x.new_zeros(*size) + x.sum()
    return grid, max(*size, 1), torch.ones(2, *size).shape[1:]


def generator_expressions(xs: List[int]) -> Tuple[bool, bool, int, List[int]]:
    doubled = (x * 2 for x in xs)
    return any(x > 2 for x in xs), all(x > 0 for x in xs), sum(x for x in xs), list(doubled)


def _t(*shape):
    return lambda rng: torch.from_numpy(rng.standard_normal(shape).astype("float32"))


LANGUAGE = {
    "int_semantics": (int_semantics, [(7, 3), (-7, 3), (7, -3), (0, 5)]),
    "float_semantics": (float_semantics, [(7.5, 2.0), (-7.5, 2.0), (1.0, -0.25)]),
    "bool_bitwise": (bool_bitwise, [(True, False), (True, True), (False, False)]),
    "builtins_on_numbers": (builtins_on_numbers, [(5, -2.5), (255, 3.25)]),
    "math_module": (math_module, [(2.5,), (-1.25,)]),
    "complex_numbers": (complex_numbers, [(1.0, 2.0), (-0.5, 0.0)]),
    "string_methods": (string_methods, [("ab cd xx",), ("  hello world",)]),
    "string_formatting": (string_formatting, [("x", 3, 2.5), ("long name", -1, 0.125)]),
    "string_indexing": (string_indexing, [("abc1d",), ("bb",)]),
    "list_methods": (list_methods, [([3, 1, 7, 5],), ([7],)]),
    "list_builtins": (list_builtins, [([3.0, 1.0, 2.5],), ([0.5],)]),
    "comprehensions": (comprehensions, [(5,), (1,)]),
    "list_truthiness": (list_truthiness, [([1, 2, 3],), ([],)]),
    "enumerate_zip": (enumerate_zip, [([1, 2, 3], ["a", "b", "c"]), ([4], ["d", "e"])]),
    "dict_methods": (dict_methods, [({"a": 1, "b": 2},), ({"y": 5},)]),
    "dict_keys_of_every_kind": (dict_keys_of_every_kind, [(2.5,), (-1.0,)]),
    "loops_with_exits": (loops_with_exits, [(20,), (3,), (0,)]),
    "early_returns": (early_returns, [(-3,), (49,), (8,), (7,)]),
    "raises_and_asserts": (raises_and_asserts, [(5,), (-1,), (101,)]),
    "formatted_messages": (formatted_messages, [(5, [1]), (3, [1, 2]), (101, []), (-1, [2])]),
    "rebinding": (rebinding, [(41,)]),
    "optional_refinement": (optional_refinement, [(1, 2), (None, 3), (4, None), (-1, 2)]),
    "union_refinement": (union_refinement, [(3,), ("s",), ([1, 2],)]),
    "jit_isinstance": (jit_isinstance, [([1, 2, 3],), ({"a": 1},)]),
    "annotations_and_comments": (annotations_and_comments, [(3, [1.5, 2.0])]),
    "named_tuples": (named_tuples, [(3.0,)]),
    "enums": (enums, [(1,), (2,)]),
    "script_classes": (script_classes, [(5.0,)]),
    "class_magic_methods": (class_magic_methods, [(1,), (3,)]),
    "enum_iteration_and_slices": (enum_iteration_and_slices, [([1, 2, 3, 4, 5],)]),
    "deletes_and_checks": (deletes_and_checks, [([1, 2, 3, 4], _t(2))]),
    "any_and_tuples": (any_and_tuples, [((1, "a", 2.0),)]),
    "tensor_properties": (tensor_properties, [(_t(2, 3),)]),
    "sizes_compared_with_tuples": (sizes_compared_with_tuples, [(_t(2, 3),), (_t(3, 2),)]),
    "tensor_literals": (tensor_literals, [(4,)]),
    "tensor_indexing": (tensor_indexing, [(_t(3, 4), 1), (_t(2, 3, 4), -1)]),
    "tensor_setitem": (tensor_setitem, [(_t(3, 4),)]),
    "item_and_tolist": (item_and_tolist, [(_t(2, 2),)]),
    "tensor_arithmetic": (tensor_arithmetic, [(_t(4,), 2)]),
    "fork_and_wait": (fork_and_wait, [(_t(3,),)]),
    "op_results": (op_results, [(_t(3, 4),)]),
    "tracing_state": (tracing_state, [(_t(2,),)]),
    "generator_expressions": (generator_expressions, [([1, 3, 5],), ([],), ([-1, 2],)]),
    "starred_tuple_arguments": (starred_tuple_arguments, [(_t(2,), (2, 3)), (_t(1,), (1, 4))]),
}
