"""Generates docs/api.md, the supported-API page, from the op table and the torch-like namespaces.

    python -m scriptc.apidoc                 # rewrite docs/api.md
    python -m scriptc.apidoc --torch-names   # also refresh scriptc/torch_names.py from the installed torch

tests/test_apidoc.py fails when docs/api.md is not what the first command writes. The second
records which names torch 2.13 has (what the AttributeError for a missing torch name reads).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import pkgutil
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
API_PAGE = REPO / "docs" / "api.md"
NAMES_MODULE = Path(__file__).resolve().parent / "torch_names.py"
REGENERATE = "python -m scriptc.apidoc"

# The torch namespaces whose names scriptc mirrors: (scriptc module, torch module, how the page calls it).
NAMESPACES = [
    ("scriptc.nn", "torch.nn", "torch.nn"),
    ("scriptc.nn.functional", "torch.nn.functional", "torch.nn.functional"),
    ("scriptc.nn.init", "torch.nn.init", "torch.nn.init"),
    ("scriptc.nn.grad", "torch.nn.grad", "torch.nn.grad"),
    ("scriptc.nn.utils", "torch.nn.utils", "torch.nn.utils"),
    ("scriptc.nn.utils.prune", "torch.nn.utils.prune", "torch.nn.utils.prune"),
    ("scriptc.optim", "torch.optim", "torch.optim"),
    ("scriptc.optim.lr_scheduler", "torch.optim.lr_scheduler", "torch.optim.lr_scheduler"),
    ("scriptc.optim.swa_utils", "torch.optim.swa_utils", "torch.optim.swa_utils"),
    ("scriptc.utils.data", "torch.utils.data", "torch.utils.data"),
    ("scriptc.autograd", "torch.autograd", "torch.autograd"),
    ("scriptc.jit", "torch.jit", "torch.jit"),
    ("scriptc.linalg", "torch.linalg", "torch.linalg"),
    ("scriptc.fft", "torch.fft", "torch.fft"),
    ("scriptc.special", "torch.special", "torch.special"),
    ("scriptc.distributions", "torch.distributions", "torch.distributions"),
    ("scriptc.random", "torch.random", "torch.random"),
    ("scriptc.cuda", "torch.cuda", "torch.cuda"),
    ("scriptc.backends.cudnn", "torch.backends.cudnn", "torch.backends.cudnn"),
    ("scriptc.accelerator", "torch.accelerator", "torch.accelerator"),
    ("scriptc.amp", "torch.amp", "torch.amp"),
    ("scriptc.func", "torch.func", "torch.func"),
    ("scriptc.fx", "torch.fx", "torch.fx"),
    ("scriptc.utils._pytree", "torch.utils._pytree", "torch.utils._pytree"),
]
# Where the AttributeError for a missing name looks: {page name: torch module}.
TORCH_NAMESPACES = {"torch": "torch", "torch.Tensor": "torch.Tensor", "torch.nn": "torch.nn",
                    "torch.nn.functional": "torch.nn.functional", "torch.special": "torch.special",
                    "torch.linalg": "torch.linalg", "torch.fft": "torch.fft", "torch.nn.init": "torch.nn.init",
                    "torch.nn.utils": "torch.nn.utils", "torch.autograd": "torch.autograd"}
_ADDRESS = re.compile(r" at 0x[0-9a-f]+")
# A module default prints where it was loaded from (a path that differs per machine): the name is enough.
_MODULE_PATH = re.compile(r"(<module '[^']+') from '[^']*'>")


def _public(names) -> list[str]:
    return sorted(n for n in names if not n.startswith("_") or n == "_assert")


def _signature(obj) -> str:
    try:
        text = str(inspect.signature(obj))
    except (TypeError, ValueError):
        return "(...)"
    return _MODULE_PATH.sub(r"\1>", _ADDRESS.sub("", text)).replace("|", "\\|")


def _mark(flag: bool) -> str:
    return "✓" if flag else ""


def _op_rows() -> list[str]:
    from scriptc import ops

    public = {}
    for alias, target in ops.ALIASES.items():
        public.setdefault(target, []).append(alias)
    rows = []
    for op in sorted(ops.all_ops(), key=lambda o: o.name):
        if op.inplace_of is not None or op.kind == ops.SCALAR:
            continue
        names = []
        if op.function:
            names.append(f"torch.{op.base_name}")
        if op.method:
            names.append(f"Tensor.{op.base_name}")
        if op.inplace is not None:
            names.append(f"Tensor.{op.inplace.base_name}")
        for other in public.get(op.base_name, []):
            names += ([f"torch.{other}"] if op.function else []) + ([f"Tensor.{other}"] if op.method else [])
        python = ", ".join(f"`{n}`" for n in names) or "graph only"
        schema = str(op.schema).replace("|", "\\|")
        pointwise = op.kind == ops.POINTWISE
        fused = pointwise or op.fusion_head or op.fusion_tail is not None
        callable_in_script = op.function or op.method
        rows.append(f"| `{op.name}` | {python} | `{schema}` | ✓ | {_mark(op.differentiable)} | "
                    f"{_mark(callable_in_script)} | {_mark(fused)} | {_mark(pointwise or op.fusion_head)} |")
    return rows


def _namespace_rows(module_name: str, label: str) -> list[str]:
    from scriptc import ops

    module = importlib.import_module(module_name)
    rows = []
    table_names = {op.base_name for op in ops.all_ops()} | set(ops.ALIASES)
    for name in _public(dir(module)):
        obj = getattr(module, name)
        if inspect.ismodule(obj) or not (inspect.isclass(obj) or callable(obj)):
            continue
        if not getattr(obj, "__module__", "scriptc").startswith("scriptc"):  # imported helpers (typing, math)
            continue
        kind = "class" if inspect.isclass(obj) else "function"
        built_from_ops = "ops" if module_name.startswith("scriptc.nn") else ""
        table = "✓ (table)" if name in table_names and module_name == "scriptc.nn.functional" else built_from_ops
        rows.append(f"| `{label}.{name}` | {kind} | `{name}{_signature(obj)}` | ✓ | {table} |")
    return rows


def _torch_level_rows() -> list[str]:
    """torch.* names that are not table ops: dtypes, devices, constructors, modes, helpers (those torch has)."""
    import scriptc
    from scriptc import ops, torch_names

    # (the ops the op rows list: a scripted-code helper op such as manual_seed leaves its torch name here)
    table_names = {op.base_name for op in ops.all_ops() if op.kind != ops.SCALAR} | set(ops.ALIASES)
    rows = []
    for name in _public(dir(scriptc)):
        if name in table_names or name not in torch_names.NAMES["torch"]:
            continue
        try:
            obj = getattr(scriptc, name)
        except AttributeError:  # a submodule listed before its code has landed
            continue
        if inspect.ismodule(obj):
            rows.append(f"| `torch.{name}` | module | | |")
        elif inspect.isclass(obj):
            rows.append(f"| `torch.{name}` | class | `{name}{_signature(obj)}` | ✓ |")
        elif callable(obj):
            rows.append(f"| `torch.{name}` | function | `{name}{_signature(obj)}` | ✓ |")
        else:
            rows.append(f"| `torch.{name}` | {type(obj).__name__} | `{_ADDRESS.sub('', repr(obj))}` | ✓ |")
    return rows


def _coverage() -> list[str]:
    from scriptc import torch_names

    lines = ["| torch namespace | torch 2.13 public names | in scriptc | not yet |", "|---|---|---|---|"]
    for page_name in TORCH_NAMESPACES:
        have = torch_names.NAMES[page_name]
        present = sum(1 for n in have if torch_names.supported(page_name, n))
        lines.append(f"| `{page_name}` | {len(have)} | {present} | {len(have) - present} |")
    return lines


def render() -> str:
    """The text of docs/api.md."""
    from scriptc import __version__

    lines = [
        "# scriptc supported API",
        "",
        f"Generated by `{REGENERATE}` from the op table (`scriptc/ops`) and the torch-like namespaces; do not "
        "edit by hand (tests/test_apidoc.py checks it is current).",
        f"scriptc {__version__}. A torch name missing here raises `AttributeError: ... is not supported by scriptc "
        "yet (see docs/api.md)`.",
        "",
        "Columns: **eager** runs on scriptc tensors; **autograd** has a gradient (checked by gradcheck in float64); "
        "**script** is callable from `jit.script` code (every table op is, through the table); **fused** may join "
        "a fusion group (pointwise ops, the reductions that end a group, the matmul/conv heads that start one); "
        "**compiled** runs as generated native code (LLVM on CPU, CUDA C on GPU) in a compiled graph; other ops run "
        "their array kernel in the runtime. For nn modules and functions, **ops** means: built from table ops, so "
        "tracing, scripting and fusion see through them.",
        "",
        "## Coverage of torch's namespaces",
        "",
        *_coverage(),
        "",
        "## Ops (the op table)",
        "",
        "| op | Python | schema | eager | autograd | script | fused | compiled |",
        "|---|---|---|---|---|---|---|---|",
        *_op_rows(),
        "",
        "## torch.* beyond the op table",
        "",
        "| name | kind | signature | eager |",
        "|---|---|---|---|",
        *_torch_level_rows(),
    ]
    for module_name, _, label in NAMESPACES:
        if importlib.util.find_spec(module_name) is None:
            continue
        lines += ["", f"## {label}", "", "| name | kind | signature | eager | autograd / script / fusion |",
                  "|---|---|---|---|---|", *_namespace_rows(module_name, label)]
    return "\n".join(lines) + "\n"


def torch_names_source() -> str:
    """The text of scriptc/torch_names.py from the installed torch."""
    import torch  # noqa: F401  (only the generator needs it)

    names = {}
    for page_name, module_name in TORCH_NAMESPACES.items():
        if module_name == "torch.Tensor":
            obj = importlib.import_module("torch").Tensor
        else:
            obj = importlib.import_module(module_name)
        # Submodules come from the package's files (dir() lists only those imported so far); modules a
        # namespace merely imports (torch.nn.functional's `math`) are not its API.
        submodules = {m.name for m in pkgutil.iter_modules(getattr(obj, "__path__", []))}
        names[page_name] = _public({n for n in dir(obj) if not inspect.ismodule(getattr(obj, n, None))} | submodules)
    body = []
    for page_name, listed in names.items():
        words, line, chunks = listed, "", []
        for word in words:
            if len(line) + len(word) + 1 > 110:
                chunks.append(line)
                line = ""
            line = f"{line} {word}".strip()
        chunks.append(line)
        text = "\n".join(f"    {c}" for c in chunks)
        body.append(f'    "{page_name}": frozenset("""\n{text}\n""".split()),')
    template = NAMES_MODULE.read_text().split("# --- generated below")[0]
    return template + "# --- generated below by `python -m scriptc.apidoc --torch-names` (torch " + \
        f"{importlib.import_module('torch').__version__.split('+')[0]}) ---\nNAMES = {{\n" + "\n".join(body) + "\n}\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scriptc.apidoc", description=__doc__.splitlines()[0])
    parser.add_argument("--torch-names", action="store_true", help="also refresh scriptc/torch_names.py (needs torch)")
    args = parser.parse_args(argv)
    if args.torch_names:
        NAMES_MODULE.write_text(torch_names_source())
    API_PAGE.parent.mkdir(exist_ok=True)
    API_PAGE.write_text(render())
    print(f"wrote {API_PAGE.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
