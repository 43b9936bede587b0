"""jit.script's frontend: source -> typed AST (grammar.lark, parser.py, ast.py) -> IR (compile/)."""

from scriptc.errors import NotSupportedError  # noqa: F401  (torch.jit.frontend.NotSupportedError)
