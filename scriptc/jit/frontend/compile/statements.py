"""Simple statements: expression statements, assignments (plain, annotated, augmented, to targets),
del, with, pass, and the constructs TorchScript refuses."""

from __future__ import annotations

from scriptc.errors import NotSupportedError, ScriptValueError
from scriptc.ir.graph import Value
from scriptc.types import (
    Any_,
    Bool,
    DictType,
    Float,
    Int,
    ListType,
    NoneType,
    ObjectType,
    OptionalType,
    Scalar,
    Str,
    TensorType,
    TupleType,
)

from .. import ast
from .control import Conflict
from .types import assignable, members
from .values import ModuleChoice, Refined, SugaredModule, SugaredTuple


class Statements:
    """Statement dispatch and assignment."""

    def statement(self, stmt):
        """Compile one statement; its exit (control.LEAVE, control.LOOP) or None when it falls through."""
        self.at(stmt)
        handler = self.statement_handlers.get(type(stmt))
        if handler is None:
            raise self.error(f"'{type(stmt).__name__}' statements are not supported", stmt)
        return handler(self, stmt)

    def stmt_Expr(self, node: ast.Expr):
        self.expr(node.value)

    def stmt_Pass(self, node: ast.Pass):
        return None

    def stmt_Unsupported(self, node: ast.Unsupported):
        raise self.unsupported(node)

    def stmt_FunctionDef(self, node: ast.FunctionDef):
        raise self.error("nested function definitions are not supported", node, NotSupportedError)

    def stmt_ClassDef(self, node: ast.ClassDef):
        raise self.error("class definitions inside a scripted function are not supported", node, NotSupportedError)

    def stmt_With(self, node: ast.With):
        """`with torch.no_grad():` runs its body with grad mode off (enable_grad(): on) and puts back
        the mode it found; `with obj [as name]:` for a script-class object calls obj.__enter__()
        (bound to name), the body, then obj.__exit__(None, None, None) - also when the body returns,
        breaks or continues, and when it raises (a prim::With: torch's interpreter runs the __exit__ of
        each entered object, ignores what that raises, and re-raises the body's exception).
        `with torch.jit._IgnoreContextManager(...)`: see ignored_blocks.py."""
        if self.is_ignore_context(node.items[0].context):
            return self.ignored_block(node)
        return self.with_items(node, node.items)

    def with_items(self, node: ast.With, items: list):
        """Enter items[0], compile the rest of the items and the body inside it, exit it; their exit."""
        if not items:
            return self.statements(node.body)
        item = items[0]
        grad_mode = self.grad_mode_context(item.context)
        if grad_mode is not None:
            if item.name is not None:
                raise self.error("`with torch.no_grad() as name` is not supported", item)
            self.at(item.context)
            found = self.emit1("grad_mode.switch", [self.const(grad_mode == "enable_grad")], Bool)
            exit_kind = self.with_items(node, items[1:])
            self.at(node)
            self.emit("grad_mode.switch", [found], [Bool])  # put back the grad mode the region found
            return exit_kind
        manager = self.as_value(self.expr(item.context), item.context)
        self.check_context_manager(manager, item.context)
        value = self.object_method(manager, "__enter__", [], {}, item)
        if item.name is not None:
            self.assign_name(item.name, value, item)
        self.at(item)
        region = self.emit("prim::With", [], [])
        with self.inside(region.add_block()) as scope:
            exit_kind = self.with_items(node, items[1:])
        self.join(region, [scope], [exit_kind])
        with self.inside(region.add_block()):
            self.at(node)
            none = self.const(None)
            self.object_method(manager, "__exit__", [none, none, none], {}, node)
        return exit_kind

    def check_context_manager(self, manager: Value, node) -> None:
        """torch's checks of a with item: a script-class object whose __enter__(self) returns a value and
        whose __exit__(self, type, value, tb) takes them as Any."""
        if not (self.has_magic(manager, "__enter__") and self.has_magic(manager, "__exit__")):
            raise self.error("Object returned by with item expression does not define __enter__ and __exit__ "
                             "methods", node)
        cls = self.ctx.class_named(manager.type.name).cls
        if self.ctx.method_types(cls.__enter__)[0]:
            raise self.error("__enter__ must have only one argument and one return value", node)
        exit_types = self.ctx.method_types(cls.__exit__)[0]
        if len(exit_types) != 3:
            raise self.error("__exit__ must have four arguments", node)
        for position, t in enumerate(exit_types, 1):
            if t != Any_:
                raise self.error(f"argument {position} of __exit__ must have Any type; TorchScript does not currently "
                                 "support passing exception type, value, or traceback to the __exit__ function.", node)

    def stmt_Delete(self, node: ast.Delete):
        for target in node.targets:
            if isinstance(target, ast.Name):  # `del a`: a is undefined from here on
                if self.lookup(target.id) is None:
                    raise self.error(f"undefined value {target.id}", target)
                self.bind(target.id, Conflict(f"undefined value {target.id} (deleted by del)"))
                continue
            if not isinstance(target, ast.Subscript):
                raise self.error("del statements are only supported for deleting list and dict items and variables", target)
            if isinstance(target.index, ast.Slice):
                raise self.error("del statements only support deletion at a single index, slicing is not supported "
                                 "(see https://github.com/pytorch/pytorch/issues/31430)", target)
            container = self.as_value(self.expr(target.value), target.value)
            if isinstance(container.type, ListType):
                self.emit("delitem.list", [container, self.index_value(target.index)], [NoneType])
            elif isinstance(container.type, DictType):
                self.emit("delitem.dict", [container, self.key_value(container, target.index)], [NoneType])
            else:
                raise self.error(f"del is not supported on a value of type {container.type}", target)

    # --- assignment -----------------------------------------------------------------------------
    def stmt_Assign(self, node: ast.Assign):
        declared = self.annotation_text(node.type_comment, node) if node.type_comment else None
        if declared is not None and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            self.declared[node.targets[0].id] = declared
        expected = declared if declared is not None else self.expected_type(node.targets[0])
        value = self.expr(node.value, expected)
        for target in node.targets:
            self.assign_target(target, value)

    def stmt_AnnAssign(self, node: ast.AnnAssign):
        declared = self.annotation(node.annotation)
        if not isinstance(node.target, (ast.Name, ast.Attribute)):
            raise self.error("only a name or an attribute can be annotated", node.target)
        method = getattr(self.fn, "__name__", "")
        if isinstance(node.target, ast.Attribute) and isinstance(node.target.value, ast.Name) and \
                node.target.value.id == "self" and method != "__init__":
            raise self.error(f"Type annotations on instance attributes must be declared in __init__, not '{method}'",
                             node.target, ScriptValueError)
        if isinstance(node.target, ast.Name):
            if any(node.target.id in scope for scope in self.scopes[:-1]):
                raise self.error(f"Attempting to declare and annotate the type of variable '{node.target.id}' but "
                                 "it is already defined in an outer block", node.target)
            self.declared[node.target.id] = declared
        if node.value is None:
            return
        self.check_literal_annotation(node.value, declared)
        if self.takes_module(declared) and isinstance(node.target, ast.Name):
            # `m: Interface = self.layers[i]`: a module, or one picked at run time, checked against the interface
            chosen = self.expr(node.value, declared)
            if isinstance(chosen, (SugaredModule, ModuleChoice)):
                found, interface = self.lookup_object(node.annotation)
                if found and getattr(interface, "_scriptc_interface", False):
                    self.check_interface(interface, chosen, node.value)
                self.bind(node.target.id, chosen)
                return
        value = self.as_value(self.expr(node.value, declared), node.value)
        name = node.target.id if isinstance(node.target, ast.Name) else node.target.attr
        value = self.coerce(value, declared, node, f"Variable '{name}' is annotated with type {declared} but is "
                            f"being assigned to a value of type {value.type}")
        if isinstance(node.target, ast.Name):
            self.bind(name, value)
        else:
            self.assign_target(node.target, value)

    def expected_type(self, target):
        """The declared type a plain assignment to `target` fills (an annotated variable, `self.x`)."""
        if isinstance(target, ast.Name):
            return self.declared.get(target.id)
        return None

    def stmt_AugAssign(self, node: ast.AugAssign):
        target = node.target
        if isinstance(target, ast.Subscript):
            container = self.expr(target.value)
            if isinstance(container, Value) and isinstance(container.type, TupleType):
                raise self.error(f"{container.type} does not support augmented assignment.", target)
            current = self.subscript_value(container, target.index, target)
            result = self.augmented(node.op, current, node)
            self.store_subscript(container, target.index, result, target)
            return
        current = self.as_value(self.expr(target), target)
        result = self.augmented(node.op, current, node)
        self.assign_target(target, result)

    def augmented(self, op: str, current: Value, node: ast.AugAssign):
        """`current op= value`: in place for tensors and lists (as Python and TorchScript do)."""
        value = self.expr(node.value)
        if isinstance(current.type, TensorType):
            return self.inplace_binary(op, current, value, node)
        if isinstance(current.type, ListType) and op == "+":
            other = self.as_value(value, node.value)
            self.emit("extend.list", [current, self.as_list(other, node.value)], [NoneType])
            return current
        return self.binary(op, current, value, node)

    def assign_target(self, target, value) -> None:
        if isinstance(target, ast.Name):
            self.assign_name(target.id, value, target)
        elif isinstance(target, (ast.Tuple, ast.List)):
            self.assign_unpacked(target, value)
        elif isinstance(target, ast.Subscript):
            container = self.expr(target.value)
            self.store_subscript(container, target.index, value, target)
        elif isinstance(target, ast.Attribute):
            self.store_attribute(target, value)
        elif isinstance(target, ast.Starred):
            raise self.error("starred assignment target must be in a list or tuple", target)
        elif isinstance(target, ast.Unsupported):
            raise self.unsupported(target)
        else:
            raise self.error(f"cannot assign to a {type(target).__name__.lower()}", target)

    def assign_name(self, name: str, value, where) -> None:
        """Bind a variable. One annotated with a Union or Optional keeps the assigned value's narrower
        type until the next join (TorchScript refines on assignment); at joins it has its annotation."""
        declared = self.declared.get(name)
        if declared is not None and isinstance(value, Value) and not assignable(value.type, declared) and \
                not any(name in scope for scope in self.scopes[:-1]):
            # in the block that annotated it, a variable takes a value of another type as TorchScript lets it
            # (torchvision's AnchorGenerator: anchors: List[List[Tensor]], then anchors = [torch.cat(...)])
            del self.declared[name]
            declared = None
        if declared is not None and isinstance(value, Value) and value.type == Scalar:
            # a plain assignment of a number of unknown kind (x.item()) fills an int or float variable, as
            # TorchScript takes torchvision's `scale_factor = scale.item()` into an Optional[float]
            number = declared.elem if isinstance(declared, OptionalType) else declared
            if number in (Int, Float):
                value = self.implicit_conversion(value, number, from_tensor=True)
        if declared is not None and isinstance(value, Value):
            if not (assignable(value.type, declared) and value.type != NoneType):
                value = self.coerce(value, declared, where, f"Variable '{name}' is annotated with type {declared} "
                                    f"but is being assigned to a value of type {value.type}")
        if declared is None and isinstance(value, Value):
            value = self.keep_type_before_branch(name, value, where)
        self.bind(name, value)

    def check_literal_annotation(self, literal, declared) -> None:
        """A list or dict display (or comprehension) annotated with a type that holds no list or dict is
        refused as TorchScript refuses it, by the kind of container it expected."""
        kind = {ast.List: ListType, ast.ListComp: ListType, ast.Dict: DictType, ast.DictComp: DictType}.get(
            type(literal))
        if kind is None or any(isinstance(t, kind) or t == Any_ for t in members(declared)):
            return
        name = "List" if kind is ListType else "Dict"
        raise self.error(f"Expected an annotation of type {name} but got {declared}", literal)

    def keep_type_before_branch(self, name: str, value: Value, where) -> Value:
        """A variable bound before an if and re-bound in one of its branches keeps its type: TorchScript
        refuses a value of another type there (it takes a subtype, and a tensor where a number was)."""
        before = self.binding_before_branch(name)
        if not isinstance(before, (Value, Refined)) or assignable(value.type, before.type):
            return value
        # TorchScript converts a tensor, a bool or a number of unknown kind there, but not an int to a float
        converted = None if value.type == Int else self.implicit_conversion(value, before.type, from_tensor=True)
        if converted is not None:
            return converted
        message = (f"Variable '{name}' previously had type {before.type} but is now being assigned to a value of "
                   f"type {value.type}")
        if isinstance(before.type, ListType) and isinstance(value.type, ListType):
            message += ("\nEmpty lists default to List[Tensor]. Add a variable annotation to the assignment to "
                        "create an empty list of another type (torch.jit.annotate(List[T, []]) where T is the type "
                        "of elements in the list for Python 2)")
        raise self.error(message, where)

    def assign_unpacked(self, target, value) -> None:
        items = target.elts
        stars = [i for i, t in enumerate(items) if isinstance(t, ast.Starred)]
        if len(stars) > 1:
            raise self.error("multiple starred expressions in assignment", target)
        if stars and len(items) == 1:
            raise self.error("A Starred expression may only appear on the lhs within the presence of another "
                             "non-starred expression", target)
        values = self.unpack(value, len(items), stars[0] if stars else None, target)
        for item, v in zip(items, values):
            self.assign_target(item.value if isinstance(item, ast.Starred) else item, v)

    def unpack(self, value, count: int, star: int | None, where) -> list:
        """`count` values from a tuple, list or compile-time tuple; the starred position gets the
        rest as a tuple (TorchScript's form)."""
        if isinstance(value, SugaredTuple):
            items = list(value.items)
        elif isinstance(value, SugaredModule):
            items = self.module_items(value, where)
        else:
            value = self.as_value(value, where)
            t = value.type
            if isinstance(t, TupleType):
                items = self.tuple_items(value)
            elif isinstance(t, ListType):
                if star is not None:
                    raise self.error("starred assignment from a list is not supported", where)
                return self.emit("prim::ListUnpack", [value], [t.elem] * count).outputs
            elif isinstance(t, TensorType):
                if star is not None:
                    raise self.error("starred assignment from a tensor is not supported", where)
                return self.emit("prim::ListUnpack", [self.emit1("unbind", [value, self.const(0)],
                                                                 ListType(TensorType()))], [TensorType()] * count).outputs
            else:
                raise self.error(f"{t} cannot be used as a tuple", where)
        if star is None:
            if len(items) > count:
                raise self.error(f"too many values to unpack: need {count} but found {len(items)}", where)
            if len(items) < count:
                raise self.error(f"need {count} values to unpack but found only {len(items)}", where)
            return items
        tail = count - star - 1
        if len(items) < count - 1:
            raise self.error(f"not enough values to unpack (expected at least {count - 1}, got {len(items)})", where)
        middle = items[star:len(items) - tail]
        return items[:star] + [self.make_tuple(middle)] + items[len(items) - tail:]

    def store_attribute(self, target: ast.Attribute, value) -> None:
        owner = self.expr(target.value)
        value = self.as_value(value, target)
        if isinstance(owner, SugaredModule):
            self.set_module_attribute(owner, target.attr, value, target)
        elif isinstance(owner, Value) and isinstance(owner.type, ObjectType):
            self.set_object_attribute(owner, target.attr, value, target)
        else:
            kind = owner.type if isinstance(owner, Value) else type(owner).__name__
            raise self.error(f"Tried to set an attribute: {target.attr} on a non-class: {kind}", target)

    def store_subscript(self, container, index: ast.Node, value, where) -> None:
        container = self.as_value(container, where)
        t = container.type
        if self.has_magic(container, "__setitem__"):
            self.object_method(container, "__setitem__", [self.expr(index), value], {}, where)
        elif isinstance(t, TensorType):
            self.tensor_setitem(container, index, value, where)
        elif isinstance(t, ListType):
            item = self.coerce(self.as_value(value, where), t.elem, where,
                               f"Arguments for call are not valid: a list of {t.elem} cannot hold a "
                               f"{self.as_value(value, where).type}")
            self.emit("setitem.list", [container, self.index_value(index), item], [NoneType])
        elif isinstance(t, DictType):
            item = self.coerce(self.as_value(value, where), t.value, where,
                               f"Arguments for call are not valid: a Dict[{t.key}, {t.value}] cannot hold a "
                               f"{self.as_value(value, where).type}")
            self.emit("setitem.dict", [container, self.key_value(container, index), item], [NoneType])
        elif t == Str:
            raise self.error("'str' object does not support item assignment", where)
        else:
            raise self.error(f"{t} does not support subscripted assignment", where)
