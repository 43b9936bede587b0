"""jit.script's frontend: source -> typed AST (grammar.lark, parser.py, ast.py) -> IR (compile/)."""
