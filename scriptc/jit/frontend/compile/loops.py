"""Loops: while, for over every iterable TorchScript has, comprehensions, break and continue.

A loop is TorchScript's prim::Loop(max_trip, cond, carried...) with a body block (i, carried...)
-> (cond, carried...): a `for` over n items passes n and true, a `while` the largest int64 and its
condition. The carried values are the variables the body assigns that exist before the loop, plus
the break and return flags. Loops over tuples, modules and compile-time sequences are unrolled.
"""

from __future__ import annotations

from dataclasses import dataclass

from scriptc.errors import NotSupportedError
from scriptc.ir.graph import Value
from scriptc.types import Bool, DictType, Int, ListType, NoneType, Str, TensorType, TupleType

from .. import ast
from .analysis import assigned_names, target_names
from .control import LOOP, RETVAL
from .emitter import BranchScope
from .types import assignable
from .values import ClassRef, Refined, SugaredModule, SugaredTuple

INT64_MAX = 2 ** 63 - 1


@dataclass
class LoopState:
    break_flag: str | None
    continue_flag: str | None


@dataclass
class Iteration:
    """A runtime iteration: `trip` items, item i given by element(i)."""

    trip: Value
    element: object


class Loops:
    """while/for statements, iteration protocols, comprehensions."""

    def stmt_While(self, node: ast.While):
        self.at(node)
        if node.orelse:
            raise self.error("while ... else is not supported", node, NotSupportedError)
        cond, (when_true, _) = self.condition(node.test)
        if self.static_bool(cond) is False:
            return None

        def body(i):
            self.scopes[-1].update(when_true)
            self.statements(node.body)
            self.forget_exit_narrowing()
            return self.continue_condition(lambda: self.as_bool(self.expr(node.test), node.test))

        self.emit_loop(node, self.const(INT64_MAX), cond, node.body, body, set())
        return None

    def stmt_For(self, node: ast.For):
        self.at(node)
        if node.orelse:
            raise self.error("for ... else is not supported", node)
        iteration = self.iterate(node.iter)
        if isinstance(iteration, list):
            return self.unrolled_for(node, iteration)

        def body(i):
            self.assign_target(node.target, iteration.element(i))
            self.statements(node.body)
            self.forget_exit_narrowing()
            return self.continue_condition(lambda: self.const(True))

        self.at(node)
        self.emit_loop(node, iteration.trip, self.const(True), node.body, body, target_names(node.target))
        return None

    def unrolled_for(self, node: ast.For, items: list):
        """A loop over a tuple or modules: the body once per item."""
        if any(self.exits.escapes_loop(s) for s in node.body):
            raise self.error("break/continue in a loop over a tuple or modules is not supported", node)
        for item in items:
            self.assign_target(node.target, item)
            exit_kind = self.statements(node.body)
            if exit_kind:
                return exit_kind
        return None

    def continue_condition(self, condition) -> Value:
        """The body's last value: the loop condition unless a break or return fired."""
        flags = [self.read(f) for f in (self.loops[-1].break_flag, self.return_flag) if f is not None and
                 self.lookup(f) is not None]
        if not flags:
            return condition()
        stopped = flags[0]
        for flag in flags[1:]:
            stopped = self.emit1("or.scalar", [stopped, flag], Bool)
        node = self.emit("prim::If", [stopped], [Bool])
        with self.inside(node.add_block()):
            node.blocks[0].add_return(self.const(False))
        with self.inside(node.add_block()):
            node.blocks[1].add_return(condition())
        return node.output

    def emit_loop(self, where: ast.Node, trip: Value, cond: Value, body_stmts: list, body, extra: set) -> None:
        has_break, has_continue = self.exits.loop_exits(body_stmts)
        state = LoopState(self.fresh("break") if has_break else None, self.fresh("continue") if has_continue else None)
        if state.break_flag is not None:
            self.bind(state.break_flag, self.const(False))
        names = assigned_names(body_stmts) | extra
        carried = [n for n in sorted(names) if isinstance(self.lookup(n), (Value, Refined))]
        if self.return_flag is not None and any(self.exits.contains_return(s) for s in body_stmts):
            carried += [self.return_flag] + ([RETVAL] if self.lookup(RETVAL) is not None else [])
        if state.break_flag is not None:
            carried.append(state.break_flag)
        initial = [self.read(n) for n in carried]
        self.at(where)
        loop = self.emit("prim::Loop", [trip, cond] + initial, [])
        block = loop.add_block()
        index = block.add_param(Int)
        params = {}
        for name, value in zip(carried, initial):
            declared = self.declared.get(name)
            params[name] = block.add_param(declared if declared is not None else _loop_type(value.type),
                                           None if name.startswith("$") else name)
        with self.inside(block, dict(params)):
            if state.continue_flag is not None:
                self.bind(state.continue_flag, self.const(False))
            self.loops.append(state)
            try:
                next_cond = body(index)
            finally:
                self.loops.pop()
            block.add_return(next_cond)
            for name in carried:
                value = self.read(name)
                if not isinstance(value, Value):
                    raise self.error(f"loop variable '{name}' must stay a runtime value", where)
                expected = params[name].type
                if not assignable(value.type, expected):
                    converted = self.implicit_conversion(value, expected)
                    if converted is None:
                        raise self.error(f"Variable '{name}' previously had type {expected} but is now being "
                                         f"assigned to a value of type {value.type}", where)
                    value = converted
                block.add_return(value)
        for name in carried:
            out = loop.add_output(params[name].type)
            if not name.startswith("$"):
                out.name = name
            self.scopes[-1][name] = out

    def stmt_Break(self, node: ast.Break):
        if not self.loops or self.loops[-1].break_flag is None:
            raise self.error("'break' outside loop", node)
        self.bind(self.loops[-1].break_flag, self.const(True))
        return LOOP

    def stmt_Continue(self, node: ast.Continue):
        if not self.loops or self.loops[-1].continue_flag is None:
            raise self.error("'continue' not properly in loop", node)
        self.bind(self.loops[-1].continue_flag, self.const(True))
        return LOOP

    # --- what a for loop can iterate ------------------------------------------------------------------
    def iterate(self, node: ast.Node):
        """An Iteration for a runtime loop, or a list of items to unroll."""
        if isinstance(node, ast.Call):
            name = self.builtin_name(node.func)
            if name in ("range", "enumerate", "zip", "reversed"):
                return getattr(self, f"iterate_{name}")(node)
        return self.iterate_value(self.expr(node), node)

    def iterate_value(self, value, node: ast.Node):
        if isinstance(value, SugaredModule):
            return self.module_items(value, node)
        if isinstance(value, SugaredTuple):
            return list(value.items)
        if isinstance(value, ClassRef) and value.kind == "enum":  # for c in Color: its members, unrolled
            return self.enum_members(value)
        if isinstance(value, Iteration) or isinstance(value, list):
            return value
        value = self.as_value(value, node)
        t = value.type
        if isinstance(t, TupleType):
            return self.tuple_items(value)
        if isinstance(t, ListType):
            return Iteration(self.emit1("len.list", [value], Int),
                             lambda i: self.emit1("getitem.list", [value, i], t.elem))
        if t == Str:
            return Iteration(self.emit1("len.str", [value], Int), lambda i: self.emit1("getitem.str", [value, i], Str))
        if isinstance(t, DictType):
            keys = self.emit1("keys.dict", [value], ListType(t.key))
            return Iteration(self.emit1("len.list", [keys], Int),
                             lambda i: self.emit1("getitem.list", [keys, i], t.key))
        if isinstance(t, TensorType):
            zero = self.const(0)
            return Iteration(self.emit1("size", [value, zero], Int),
                             lambda i: self.emit1("select", [value, zero, i], TensorType()))
        raise self.error(f"'{t}' object is not iterable", node)

    def iterate_range(self, call: ast.Call):
        if call.keywords:
            raise self.error("range() takes no keyword arguments", call)
        args = [self.as_value(self.expr(a), a) for a in call.args]
        for index, (a, arg) in enumerate(zip(args, call.args)):
            if a.type not in (Int, Bool):
                raise self.error(f"all inputs of range must be ints, found {a.type} in argument {index}", arg)
        if not 1 <= len(args) <= 3:
            raise self.error(f"range expected 1 to 3 arguments, got {len(args)}", call)
        start, stop, step = (self.const(0), args[0], self.const(1)) if len(args) == 1 else (
            (args[0], args[1], self.const(1)) if len(args) == 2 else tuple(args))
        trip = self.emit1("range_length.int", [start, stop, step], Int)
        if len(args) == 1:
            return Iteration(trip, lambda i: i)
        return Iteration(trip, lambda i: self.emit1("add.scalar", [start, self.emit1("mul.scalar", [i, step], Int)],
                                                    Int))

    def iterate_enumerate(self, call: ast.Call):
        start = None
        args = list(call.args)
        for kw in call.keywords:
            if kw.name != "start":
                raise self.error(f"enumerate() got an unexpected keyword argument '{kw.name}'", kw)
            start = kw.value
        if len(args) == 2:
            start = args.pop()
        if len(args) != 1:
            raise self.error("enumerate() takes an iterable and an optional start", call)
        inner = self.iterate(args[0])
        offset = self.as_value(self.expr(start), start) if start is not None else None
        if isinstance(inner, list):
            first = self.static_int(offset) if offset is not None else 0
            if first is None:
                raise self.error("enumerate() over a tuple or modules needs a constant start", call)
            return [SugaredTuple([self.const(first + k), item]) for k, item in enumerate(inner)]

        def element(i):
            index = i if offset is None else self.emit1("add.scalar", [i, offset], Int)
            return SugaredTuple([index, inner.element(i)])
        return Iteration(inner.trip, element)

    def iterate_zip(self, call: ast.Call):
        inners = [self.iterate(a) for a in call.args]
        if not inners:
            raise self.error("zip() needs at least one iterable", call)
        if all(isinstance(x, list) for x in inners):
            return [SugaredTuple(list(items)) for items in zip(*inners)]
        if any(isinstance(x, list) for x in inners):
            raise self.error("zip() of a tuple or modules with a list is not supported", call)
        trip = inners[0].trip
        for other in inners[1:]:
            trip = self.emit1("min.scalar", [trip, other.trip], Int)
        return Iteration(trip, lambda i: SugaredTuple([x.element(i) for x in inners]))

    def iterate_reversed(self, call: ast.Call):
        if len(call.args) != 1:
            raise self.error("reversed() takes one argument", call)
        inner = self.iterate(call.args[0])
        if isinstance(inner, list):
            return list(reversed(inner))
        last = self.emit1("sub.scalar", [inner.trip, self.const(1)], Int)
        return Iteration(inner.trip, lambda i: inner.element(self.emit1("sub.scalar", [last, i], Int)))

    def tuple_items(self, value: Value) -> list:
        if value.node is not None and value.node.op == "prim::TupleConstruct":
            return list(value.node.inputs)
        return self.emit("prim::TupleUnpack", [value], list(value.type.elems)).outputs

    # --- comprehensions ---------------------------------------------------------------------------------
    def expr_ListComp(self, node: ast.ListComp, expected=None):
        return self.comprehension(node, [node.elt], self.container_hint(expected, ListType), is_dict=False)

    def expr_DictComp(self, node: ast.DictComp, expected=None):
        return self.comprehension(node, [node.key, node.value], self.container_hint(expected, DictType),
                                  is_dict=True)

    def comprehension(self, node, parts: list, expected, is_dict: bool):
        """A list/dict display filled by a loop over the generators (nested for the later ones). The
        element types come from compiling the element once; the display's type is set after."""
        self.at(node)
        result = self.emit1("prim::DictConstruct" if is_dict else "prim::ListConstruct", [],
                            expected or (DictType(Str, TensorType()) if is_dict else ListType(TensorType())))
        stores: list = []
        self.scopes.append(BranchScope())
        declared = self.declared  # the comprehension's own variables shadow annotated ones outside it
        self.declared = {k: v for k, v in declared.items() if not any(
            k in target_names(g.target) for g in node.generators)}
        try:
            self.comprehension_loop(node.generators, 0, parts, result, stores, is_dict)
        finally:
            self.scopes.pop()
            self.declared = declared
        if expected is not None and not is_dict and any(
                not assignable(store.inputs[1].type, expected.elem) for store in stores):
            expected = None  # a hint the elements do not fit (a variable annotated before, rebound here)
        if expected is None:
            types = [v.type for v in stores[0].inputs[1:]] if stores else None
            if is_dict:
                result.type = DictType(types[0], types[1]) if types else DictType(Str, TensorType())
            else:
                result.type = ListType(types[0]) if types else ListType(TensorType())
            for store in stores:
                if not is_dict:
                    store.outputs[0].type = result.type
        return result

    def comprehension_loop(self, generators: list, depth: int, parts: list, result, stores: list, is_dict):
        generator = generators[depth]
        iteration = self.iterate(generator.iter)

        def body(i=None, item=None):
            self.assign_target(generator.target, iteration.element(i) if item is None else item)
            refined = {}
            if generator.ifs:
                cond = generator.ifs[0]
                for extra in generator.ifs[1:]:
                    cond = ast.BoolOp(cond.line, cond.col, "and", [cond, extra])
                value, (refined, _) = self.condition(cond)
                self.emit_if(value, lambda: self.comprehension_store(generators, depth, parts, result, stores,
                                                                     is_dict, refined), None)
            else:
                self.comprehension_store(generators, depth, parts, result, stores, is_dict, refined)
            return self.const(True)

        if isinstance(iteration, list):
            for item in iteration:
                body(item=item)
            return
        self.emit_loop(generator, iteration.trip, self.const(True), [], body, set())

    def comprehension_store(self, generators, depth, parts, result, stores, is_dict, refined):
        self.scopes[-1].update(refined)
        if depth + 1 < len(generators):
            self.comprehension_loop(generators, depth + 1, parts, result, stores, is_dict)
            return None
        values = [self.as_value(self.expr(p, self.element_expectation(result, k)), p) for k, p in enumerate(parts)]
        if is_dict:
            store = self.emit("setitem.dict", [result] + values, [NoneType])
        else:
            store = self.emit("append.list", [result] + values, [result.type])
        stores.append(store)
        return None

    def element_expectation(self, container: Value, index: int):
        t = container.type
        if isinstance(t, ListType):
            return t.elem
        if isinstance(t, DictType):
            return t.key if index == 0 else t.value
        return None


def _loop_type(t):
    return TensorType() if isinstance(t, TensorType) else t
