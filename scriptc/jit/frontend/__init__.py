"""jit.script's frontend: source -> typed AST (grammar.lark, parser.py, ast.py) -> IR (compile/)."""

from scriptc.errors import FrontendError, NotSupportedError  # noqa: F401  (torch.jit.frontend's)
