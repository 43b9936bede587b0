"""Facts about statement lists read off the AST before compiling them: which statements may exit,
whether a function needs a return flag, which names a loop body assigns."""

from __future__ import annotations

from .. import ast

_COMPOUND = (ast.If, ast.While, ast.For, ast.With)


def _children(stmt) -> list[list]:
    """The statement lists nested directly in a compound statement."""
    if isinstance(stmt, ast.If) or isinstance(stmt, (ast.While, ast.For)):
        return [stmt.body, stmt.orelse]
    if isinstance(stmt, ast.With):
        return [stmt.body]
    return []


class Exits:
    """Exit facts per statement, computed once each (the compiler asks for every statement)."""

    def __init__(self):
        self._returns: dict[int, bool] = {}
        self._escapes: dict[int, bool] = {}

    def contains_return(self, stmt) -> bool:
        key = id(stmt)
        found = self._returns.get(key)
        if found is None:
            found = isinstance(stmt, ast.Return) or any(
                self.contains_return(s) for body in _children(stmt) for s in body)
            self._returns[key] = found
        return found

    def escapes_loop(self, stmt) -> bool:
        """Whether stmt holds a break/continue of the loop around it (not of a loop inside stmt)."""
        key = id(stmt)
        found = self._escapes.get(key)
        if found is None:
            if isinstance(stmt, (ast.Break, ast.Continue)):
                found = True
            elif isinstance(stmt, (ast.While, ast.For)):
                found = any(self.escapes_loop(s) for s in stmt.orelse)
            else:
                found = any(self.escapes_loop(s) for body in _children(stmt) for s in body)
            self._escapes[key] = found
        return found

    def may_exit(self, stmt) -> bool:
        """Whether running stmt may skip the statements after it through a flag (return, break,
        continue); `raise` needs no flag, it leaves the graph."""
        return self.contains_return(stmt) or self.escapes_loop(stmt)

    def loop_exits(self, body: list) -> tuple[bool, bool]:
        """(has break, has continue) belonging to the loop whose body this is."""
        found = {ast.Break: False, ast.Continue: False}

        def visit(stmts):
            for s in stmts:
                if isinstance(s, (ast.Break, ast.Continue)):
                    found[type(s)] = True
                elif not isinstance(s, (ast.While, ast.For)):
                    for nested in _children(s):
                        visit(nested)
        visit(body)
        return found[ast.Break], found[ast.Continue]

    def needs_return_flag(self, body: list) -> bool:
        """Whether some return does not end its path: a statement follows it, or a loop holds it."""
        for index, stmt in enumerate(body):
            if not self.contains_return(stmt):
                continue
            if index + 1 < len(body) or isinstance(stmt, (ast.While, ast.For)):
                return True
            if any(self.needs_return_flag(nested) for nested in _children(stmt)):
                return True
        return False


def ends_in_exit(body: list) -> bool:
    """Whether a statement list certainly returns or raises, read syntactically."""
    if not body:
        return False
    last = body[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    if isinstance(last, ast.If):
        return ends_in_exit(last.body) and ends_in_exit(last.orelse)
    return False


def assigned_names(stmts: list) -> set[str]:
    """Names a statement list assigns (targets of =, +=, for, del excepted), nested blocks included."""
    names: set[str] = set()
    stack = list(stmts)
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                names |= target_names(target)
        elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
            names |= target_names(stmt.target)
        elif isinstance(stmt, ast.For):
            names |= target_names(stmt.target)
        for body in _children(stmt):
            stack.extend(body)
    return names


def target_names(target) -> set[str]:
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        out: set[str] = set()
        for item in target.elts:
            out |= target_names(item)
        return out
    if isinstance(target, ast.Starred):
        return target_names(target.value)
    return set()
