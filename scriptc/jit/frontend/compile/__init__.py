"""The AST -> IR compiler, one module per concern (statements, control flow, loops, expressions,
subscripts, attributes, calls and builtins, annotations and refinement, modules, classes)."""

from .context import ScriptContext, compiling, definition_of  # noqa: F401
