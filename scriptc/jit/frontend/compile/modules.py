"""nn.Modules in script: `self` and its attributes, submodules (ModuleList/Sequential/ModuleDict
iterated and indexed by constants), methods inlined into the caller, forward hooks, and the
attributes that scripted code assigns."""

from __future__ import annotations

import enum
import inspect

from scriptc.errors import ScriptAttributeError, ScriptError
from scriptc.ir.graph import Value
from scriptc.types import (
    Bool,
    DictType,
    Int,
    ListType,
    ModuleType,
    NoneType,
    ObjectType,
    OptionalType,
    Str,
    TensorType,
    TupleType,
)

from .. import ast
from .hook_schemas import HookSchemas
from .interfaces import missing_methods
from .traced_calls import TracedCalls
from .types import AnnotationError, annotations_of, python_type, unify
from .values import IgnoredMethod, ModuleChoice, ModuleMethod, SugaredModule, SugaredTuple

MODULE_ITERATORS = ("children", "named_children", "modules", "named_modules")


class Modules(TracedCalls, HookSchemas):
    """Attribute access and calls on modules reached through `self`."""

    def submodule(self, owner: SugaredModule, name: str):
        child = owner.module._modules[name]
        if child is None:
            return self.const(None)
        from scriptc.jit.loaded_module import LoadedModule
        from scriptc.jit.module import TracedModule

        path = f"{owner.path}.{name}" if owner.path else name
        if isinstance(child, LoadedModule):  # its stored forward, called with its state as an attribute
            self.ctx.module_attributes[(owner.path, name)] = ModuleType(path)
            return SugaredModule(child, self.emit1("prim::GetAttr", [owner.value], ModuleType(path), {"name": name}),
                                 path, loaded=child)
        traced = child if isinstance(child, TracedModule) and "forward" in child._graphs else None
        child = getattr(child, "_scriptc_original", child)  # a jit.script'ed child: its module's source
        value = self.emit1("prim::GetAttr", [owner.value], ModuleType(path), {"name": name})
        declared = annotations_of(type(owner.module)).get(name)
        interface = declared if getattr(declared, "_scriptc_interface", False) else None
        missing = missing_methods(interface, type(child)) if interface is not None else []
        if missing:  # torch compiles each of the interface's methods of the module
            raise self.error(f"'{type(child).__name__}' object has no attribute '{missing[0]}'",
                             kind=ScriptAttributeError)
        return SugaredModule(child, value, path, traced, interface=interface)

    def check_interface_member(self, owner: SugaredModule, name: str, node: ast.Node) -> None:
        """torch's refusal of an attribute or method that the module interface a submodule is annotated
        with does not declare."""
        if owner.interface is not None and not inspect.isfunction(vars(owner.interface).get(name)):
            raise self.error(f"'__torch__.{owner.interface.__qualname__}' object has no attribute or method "
                             f"'{name}'.", node)

    def module_attribute(self, owner: SugaredModule, name: str, node: ast.Node):
        if owner.loaded is not None:
            raise self.error(f"scripted code can call the jit.load'ed module {owner.path}, not read its attribute "
                             f"'{name}'", node)
        module = owner.module
        self.check_interface_member(owner, name, node)
        if name in getattr(type(module), "__jit_ignored_attributes__", ()):
            raise self.error(f"Module '{type(module).__name__}' has no attribute '{name}' attribute was ignored "
                             "during compilation", node)
        for store in (module._parameters, module._buffers):
            if name in store:
                t = store[name]
                if t is None:
                    return self.const(None)
                return self.emit1("prim::GetAttr", [owner.value], TensorType(t.dtype, t._data.shape), {"name": name})
        if name in module._modules:
            return self.submodule(owner, name)
        if name == "training":
            return self.emit1("prim::GetAttr", [owner.value], Bool, {"name": "training"})
        cls_attr = inspect.getattr_static(type(module), name, None)
        if isinstance(cls_attr, property):
            return self.inline_method(owner, cls_attr.fget, [], {}, node)
        if isinstance(cls_attr, staticmethod):  # self.helper(...): the function, with no self (T5's bucketing)
            return self.sugar(cls_attr.__func__, name, node)
        if isinstance(cls_attr, classmethod):
            raise self.error(f"class methods of modules are not supported ({name})", node)
        if inspect.isfunction(cls_attr):
            if getattr(cls_attr, "_scriptc_ignore", False) or getattr(cls_attr, "_scriptc_unused", False):
                return IgnoredMethod(module, name, getattr(cls_attr, "_scriptc_unused", False))
            overloads = self.ctx.method_overloads(type(module), name)
            if overloads:
                return self.overloaded_method(owner, cls_attr, overloads)
            return ModuleMethod(owner, cls_attr)
        if name in module.__dict__:
            return self.module_data(owner, name, module.__dict__[name], node)
        if cls_attr is not None or hasattr(type(module), name):
            return self.constant_attribute(cls_attr, f"{type(module).__name__}.{name}", node)
        raise self.error(f"Module '{type(module).__name__}' has no attribute '{name}'", node)

    def module_has_attribute(self, owner: SugaredModule, name: str) -> bool:
        module = owner.module
        if name in getattr(type(module), "__jit_ignored_attributes__", ()):
            return False
        return name in module._parameters or name in module._buffers or name in module._modules or \
            name in module.__dict__ or hasattr(type(module), name)

    def module_data(self, owner: SugaredModule, name: str, value, node):
        """A plain attribute of a module: a constant (TorchScript's __constants__ and Final, and every
        number, string and tuple of constants), or, when scripted code assigns it or it is a list or
        dict, an attribute read at run time."""
        module = owner.module
        from scriptc.jit.markers import Attribute

        if isinstance(value, Attribute):  # torch.jit.Attribute(value, type): the value, of that type
            try:
                declared = python_type(value.type, self.class_type)
            except AnnotationError as exc:
                raise self.error(f"{type(module).__name__}.{name}: {exc}", node) from None
            self.ctx.module_attributes[(owner.path, name)] = declared
            value = value.value
            setattr(module, name, value)
        if name in self.ctx.assigned_attributes(type(module)) or isinstance(value, (list, dict)) or \
                _holds_tensor(value):
            t = self.ctx.attribute_type(owner, name, value, self, node)
            return self.emit1("prim::GetAttr", [owner.value], t, {"name": name})
        if isinstance(value, enum.Enum):
            return self.enum_constant(value)
        if _is_class_instance(value):  # an instance of a (script) class: an object attribute
            record = self.ctx.script_class(type(value), self)
            declared = annotations_of(type(module)).get(name)
            if getattr(declared, "_scriptc_interface", False):  # annotated with a class interface: checked
                if not getattr(type(value), "_scriptc_script_class", False):
                    raise self.error(f"{type(module).__name__}.{name} is annotated with interface "
                                     f"{declared.__qualname__}, but the value is not a TorchScript compatible type "
                                     f"(its class {type(value).__qualname__} was not scripted)", node)
                problem = self.interface_problem(ObjectType(record.name), self.interface_type(declared))
                if problem is not None:
                    raise self.error(f"{type(module).__name__}.{name}: {problem}; its class is not compatible "
                                     f"with interface __torch__.{declared.__qualname__}", node)
            self.ctx.module_attributes[(owner.path, name)] = ObjectType(record.name)
            return self.emit1("prim::GetAttr", [owner.value], ObjectType(record.name), {"name": name})
        if callable(value) and not isinstance(value, type):  # self.fn = some_function / a scripted one
            self.compile_function_attribute(module, name, value, node)
            return self.sugar(value, f"{type(module).__name__}.{name}", node)
        return self.constant_attribute(value, f"{type(module).__name__}.{name}", node,
                                       unconvertible=unconvertible_attribute(module, name, value))

    def compile_function_attribute(self, module, name: str, fn, node) -> None:
        """A Python function the module holds compiles where it is read, and what stops it is torch's
        error naming the attribute (the function's own error inside)."""
        if not inspect.isfunction(fn) or (fn.__module__ or "").split(".")[0] == "scriptc" or \
                getattr(fn, "_scriptc_ignore", False) or getattr(fn, "_scriptc_unused", False) or \
                self.functional_op(fn) is not None:
            return
        try:
            self.ctx.function_graph(fn, self, node)
        except ScriptError as exc:
            raise self.error(f"Module '{type(module).__name__}' has no attribute '{name}' (This function exists as "
                             "an attribute on the Python module, but we failed to compile it to a TorchScript "
                             f"function. \nThe error stack is reproduced here:\n{exc})", node) from None

    def constant_attribute(self, value, where: str, node, unconvertible: str | None = None):
        """`value` as a constant (`unconvertible`: the message when it cannot be one)."""
        from scriptc.types import device, dtype

        if value is None or isinstance(value, (bool, int, float, complex, str, dtype, device)):
            return self.const(value)
        if isinstance(value, (tuple, list)) and _constant_data(value):
            return self.container_constant(value, node)
        if isinstance(value, tuple):
            return self.sugar(value, where, node)
        raise self.error(unconvertible or f"attribute {where} of type {type(value).__name__} cannot be used in a "
                         "scripted module (only tensors, submodules, numbers, strings, and lists, dicts and tuples of "
                         "them)", node)

    def set_module_attribute(self, owner: SugaredModule, name: str, value: Value, node) -> None:
        module = owner.module
        if name in module._parameters or name in module._buffers:
            held = module._parameters.get(name, module._buffers.get(name))
            if held is not None and not isinstance(value.type, TensorType):
                raise self.error(f"Wrong type for attribute assignment. Expected Tensor but got {value.type}", node)
            self.emit("prim::SetAttr", [owner.value, value], [], {"name": name})
            return
        if name in module._modules or name == "training":
            raise self.error(f"cannot assign to {name} of a module in scripted code", node)
        setter = inspect.getattr_static(type(module), name, None)
        if isinstance(setter, property) and setter.fset is not None:  # self.attr = v runs attr's setter
            self.inline_method(owner, setter.fset, [value], {}, node)
            return
        current = module.__dict__.get(name)
        t = self.ctx.attribute_type(owner, name, current, self, node, writing=True)
        value = self.coerce(value, t, node, f"Wrong type for attribute assignment. Expected {t} but got {value.type} "
                            f"(attribute '{name}')")
        self.emit("prim::SetAttr", [owner.value, value], [], {"name": name})

    # --- submodule containers --------------------------------------------------------------------
    def module_items(self, owner: SugaredModule, node) -> list:
        """The items of iterating a ModuleList/Sequential (its modules), ParameterList (its
        parameters) or ModuleDict/ParameterDict (its keys)."""
        if _is_parameter_list(owner.module):
            return [self.module_attribute(owner, n, node) for n in owner.module._parameters]
        if is_parameter_dict(owner.module):
            return [self.const(n) for n in owner.module._parameters]
        names = list(owner.module._modules)
        if is_module_dict(owner.module):
            return [self.const(name) for name in names]
        return [self.submodule(owner, name) for name in names]

    def module_subscript(self, owner: SugaredModule, index: ast.Node, node, expected=None):
        """self.layers[0], self.blocks["a"], self.layers[1:3]; with a run-time index, only where an
        annotation with a module interface takes the result (a ModuleChoice)."""
        if _is_parameter_list(owner.module) or is_parameter_dict(owner.module):
            names = list(owner.module._parameters)
            key = self.expr(index)
            constant = key.node.attrs.get("value") if isinstance(key, Value) and key.node is not None and \
                key.node.op == "prim::Constant" else None
            if isinstance(constant, int) and not isinstance(constant, bool) and -len(names) <= constant < len(names):
                return self.module_attribute(owner, names[constant], node)
            if isinstance(constant, str) and constant in names:
                return self.module_attribute(owner, constant, node)
            raise self.error("ParameterList/ParameterDict indices must be constants naming a parameter", index)
        names = list(owner.module._modules)
        if isinstance(index, ast.Slice) and not is_module_dict(owner.module):  # self.layers[1:3], [::-1]
            bounds = [None if part is None else self.static_int(self.expr(part))
                      for part in (index.lower, index.upper, index.step)]
            if any(b is None and part is not None for b, part in zip(bounds, (index.lower, index.upper, index.step))):
                raise self.error("ModuleList/Sequential slices must have constant bounds", index)
            return SugaredTuple([self.submodule(owner, n) for n in names[slice(*bounds)]])
        key = self.expr(index)
        # torch indexes containers only with literals: a local variable is refused even when it holds one
        variable = isinstance(index, ast.Name) and self.read(index.id) is not None
        if is_module_dict(owner.module):
            text = key.node.attrs.get("value") if isinstance(key, Value) and key.node is not None and \
                key.node.op == "prim::Constant" and not variable else None
            if not isinstance(text, str) and self.takes_module(expected):
                return self.module_choice(owner, names, key, Str, node)
            if not isinstance(text, str):
                raise self.error("Unable to extract string literal index. ModuleDict indexing is only supported "
                                 "with string literals. For example, 'i = \"a\"; self.layers[i](x)' will fail "
                                 "because i is not a literal. Enumeration of ModuleDict is supported, e.g. "
                                 "'for k, v in self.items(): out = v(inp)'", node)
            if text not in names:
                raise self.error(f"Key Error, {text}", node)
            return self.submodule(owner, text)
        position = None if variable else self.static_int(key)
        if position is None and self.takes_module(expected):
            return self.module_choice(owner, names, key, Int, node)
        if position is None:
            raise self.error("Expected integer literal for index but got a variable or non-integer. "
                             "ModuleList/Sequential indexing is only supported with integer literals. For example, "
                             "'i = 4; self.layers[i](x)' will fail because i is not a literal. Enumeration is "
                             "supported, e.g. 'for index, v in enumerate(self): out = v(inp)'", node)
        if not -len(names) <= position < len(names):
            raise self.error(f"Index {position} out of range of length {len(names)}", node)
        return self.submodule(owner, names[position])

    def module_choice(self, owner: SugaredModule, names: list, key, key_type, node) -> ModuleChoice:
        key = self.as_value(key, node)
        container = "ModuleDict" if key_type == Str else "ModuleList"
        if key.type != key_type:
            raise self.error(f"a {container} index must be {key_type}, not {key.type}", node)
        if not names:  # (torch compiles it, and every call fails: no field with the index's name)
            raise self.error(f"{owner.path} is an empty {container}: an index has no module to pick", node)
        if key_type == Str:
            candidates = [(name, self.submodule(owner, name)) for name in names]
        else:  # each position also answers to its negative index
            candidates = [((i, i - len(names)), self.submodule(owner, name)) for i, name in enumerate(names)]
        return ModuleChoice(candidates, key)

    def call_chosen(self, choice: ModuleChoice, args: list, kwargs: dict, node):
        """choice.method(*args): the picked candidate's method, by a chain of prim::If on the index; an
        index no candidate has raises torch's error at run time."""
        args = [self.as_value(a, node) for a in args]
        kwargs = {k: self.as_value(v, node) for k, v in kwargs.items()}
        return self.chosen_call(choice, 0, args, kwargs, node)

    def chosen_call(self, choice: ModuleChoice, position: int, args: list, kwargs: dict, node) -> Value:
        key, module = choice.candidates[position]
        keys = key if isinstance(key, tuple) else (key,)
        test = self.compare("==", choice.index, self.const(keys[0]), node)
        for other in keys[1:]:
            test = self.either(test, lambda other=other: self.compare("==", choice.index, self.const(other), node))
        branch = self.emit("prim::If", [test], [])
        with self.inside(branch.add_block()):
            method = module if choice.method == "forward" else self.attribute(module, choice.method, node)
            taken = self.as_value(self.call(method, args, kwargs, node), node)
        with self.inside(branch.add_block()):
            if position + 1 < len(choice.candidates):
                other = self.chosen_call(choice, position + 1, args, kwargs, node)
            else:
                self.raises("IndexError: index out of range" if isinstance(key, tuple) else "KeyError: key not found")
                other = self.emit1("prim::Uninitialized", [], taken.type)
        merged = unify(taken.type, other.type)
        if merged is None:
            raise self.error(f"the modules this index picks return different types ({taken.type} and "
                             f"{other.type})", node)
        branch.blocks[0].add_return(taken)
        branch.blocks[1].add_return(other)
        return branch.add_output(merged)

    def either(self, test: Value, other) -> Value:
        """`test or other()`, the second evaluated only when the first is false."""
        branch = self.emit("prim::If", [test], [Bool])
        with self.inside(branch.add_block()):
            branch.blocks[0].add_return(self.const(True))
        with self.inside(branch.add_block()):
            branch.blocks[1].add_return(other())
        return branch.output

    def check_interface(self, interface, chosen, node) -> None:
        """torch's refusal of a module that lacks a method of the module interface it is annotated with,
        or has it with other parameter or return types (`chosen`: a SugaredModule or ModuleChoice)."""
        candidates = chosen.candidates if isinstance(chosen, ModuleChoice) else [(chosen.path, chosen)]
        for key, module in candidates:
            for name, declared in vars(interface).items():
                if not inspect.isfunction(declared):
                    continue
                member = inspect.getattr_static(type(module.module), name, None)
                if not inspect.isfunction(member) or not self.same_signature(declared, member):
                    shown = key[0] if isinstance(key, tuple) else key
                    raise self.error(f"Attribute {shown} is not of annotated type {interface.__qualname__}", node)

    def same_signature(self, declared, member) -> bool:
        """Whether a method's parameter and return annotations are the interface's (an annotation the
        method leaves out is not compared)."""
        ours, theirs = inspect.signature(declared), inspect.signature(member)
        if len(ours.parameters) != len(theirs.parameters):
            return False
        pairs = list(zip(list(ours.parameters.values())[1:], list(theirs.parameters.values())[1:]))
        pairs = [(a.annotation, b.annotation) for a, b in pairs] + [(ours.return_annotation, theirs.return_annotation)]
        try:
            return all(a == b or python_type(a, self.class_type) == python_type(b, self.class_type) for a, b in pairs
                       if a is not inspect.Parameter.empty and b is not inspect.Parameter.empty)
        except AnnotationError:
            return False

    def module_dict_method(self, owner: SugaredModule, name: str, node):
        if name in MODULE_ITERATORS:
            return self.module_iterator(owner, name)
        parameters = is_parameter_dict(owner.module)
        names = list(owner.module._parameters if parameters else owner.module._modules)

        def member(n):
            return self.module_attribute(owner, n, node) if parameters else self.submodule(owner, n)

        if name == "keys":
            return [self.const(n) for n in names]
        if name == "values":
            return [member(n) for n in names]
        if name == "items":
            return [SugaredTuple([self.const(n), member(n)]) for n in names]
        raise self.error(f"ModuleDict has no method '{name}' in scripted code", node)

    def module_iterator(self, owner: SugaredModule, name: str) -> list:
        """self.children() / named_children() / modules() / named_modules(), unrolled: the submodules
        (named as Python names them, `modules()` starting with the module itself). As in torch's scripted
        code, a module held under two names is listed under each (eager Python lists it once)."""
        found = []

        def walk(parent: SugaredModule, prefix: str, recurse: bool):
            for child_name, child in parent.module._modules.items():
                if child is None:
                    continue
                child_value = self.submodule(parent, child_name)
                if child_value.interface is not None:
                    raise self.error(f"Could not compile {name}() because module is an interface type. Please file "
                                     "issue.")
                found.append((prefix + child_name, child_value))
                if recurse:
                    walk(child_value, f"{prefix}{child_name}.", recurse)

        recursive = name in ("modules", "named_modules")
        if recursive:
            found.append(("", owner))
        walk(owner, "", recursive)
        if name.startswith("named_"):
            return [SugaredTuple([self.const(n), m]) for n, m in found]
        return [m for _, m in found]

    # --- calls --------------------------------------------------------------------------------------
    def call_module(self, owner: SugaredModule, args: list, kwargs: dict, node):
        """module(x): forward inlined, with the module's forward pre-hooks and hooks around it."""
        if owner.traced is not None:
            return self.call_traced(owner, args, kwargs, node)
        if owner.loaded is not None:
            return self.call_loaded(owner, args, kwargs, node)
        module = owner.module
        self.check_interface_member(owner, "forward", node)
        forward = inspect.getattr_static(type(module), "forward", None)
        if forward is None or not inspect.isfunction(forward):
            raise self.error(f"module {type(module).__name__} has no forward() scripted code can call", node)
        hooked = bool(getattr(module, "_forward_pre_hooks", None) or getattr(module, "_forward_hooks", None))
        forward_types = None
        if hooked:
            self.check_hook_names(owner, node)
            forward_types = self.forward_parameter_types(forward)
        for hook in list(getattr(module, "_forward_pre_hooks", {}).values()):
            self.check_pre_hook(owner, getattr(hook, "__func__", hook), forward_types, node)
            packed = self.sequence_of([self.as_value(a, node) for a in args])
            result = self.call_hook(owner, hook, [packed], node)
            if not (isinstance(result, Value) and result.type == ModuleType()):
                replaced = self.hook_result(result, packed, node, as_tuple=True)
                if replaced is not packed:
                    args = list(self.tuple_elements(replaced, node))
        overloads = self.ctx.method_overloads(type(module), "forward")
        if overloads:  # torchvision's _DenseLayer: forward(List[Tensor]) and forward(Tensor)
            output = self.call_overloaded_method(self.overloaded_method(owner, forward, overloads), args, kwargs, node)
        else:
            output = self.inline_method(owner, forward, args, kwargs, node)
        if hooked:
            self.check_hooks_against_methods(owner, node)
        for hook in list(getattr(module, "_forward_hooks", {}).values()):
            self.check_forward_hook(owner, getattr(hook, "__func__", hook), forward_types,
                                    self.as_value(output, node).type, node)
            packed = self.sequence_of([self.as_value(a, node) for a in args])
            result = self.call_hook(owner, hook, [packed, output], node)
            output = self.hook_result(result, output, node, as_tuple=False)
        return output

    def hook_result(self, result, current, node, as_tuple: bool):
        """What a hook's result replaces `current` with: nothing when it returns None, its value (a
        pre-hook's single value as a one-tuple of inputs), or - an Optional - either, decided at run
        time."""
        if _is_none(result) or isinstance(result, Value) and result.type == NoneType:
            return current

        def replacement(value):
            if as_tuple and not self.tuple_like(value):
                return self.make_tuple([self.as_value(value, node)])
            return value

        if not (isinstance(result, Value) and isinstance(result.type, OptionalType)):
            return replacement(result)
        current = self.as_value(current, node)
        branch = self.emit("prim::If", [self.emit1("prim::IsNone", [result], Bool)], [])
        with self.inside(branch.add_block()):
            branch.blocks[0].add_return(current)
        with self.inside(branch.add_block()):
            value = self.as_value(replacement(self.emit1("prim::Refine", [result], result.type.elem)), node)
            value = self.coerce(value, current.type, node, f"a hook returned {value.type} where {current.type} "
                                "was expected")
            branch.blocks[1].add_return(value)
        return branch.add_output(current.type)

    def call_hook(self, owner: SugaredModule, hook, args: list, node):
        fn = getattr(hook, "__func__", hook)
        key = (owner.path, getattr(fn, "__name__", ""))
        known = key in self.ctx.inlined_methods
        result = self.ctx.inline(fn, owner, args, {}, self, node, bound_self=True)
        if not known:  # (a hook is no method of its module: check_hooks_against_methods compares them)
            self.ctx.inlined_methods.discard(key)
        return result

    def inline_method(self, owner: SugaredModule, fn, args: list, kwargs: dict, node):
        return self.ctx.inline(fn, owner, args, kwargs, self, node)

    def call_ignored_method(self, callee: IgnoredMethod, args: list, kwargs: dict, node):
        fn = getattr(callee.module, callee.name)
        if callee.unused:
            return self.call_unused(fn.__func__ if hasattr(fn, "__func__") else fn, node)
        return self.call_ignored(fn, args, kwargs, node)

    def overloaded_method(self, owner: SugaredModule, fn, declarations):
        from .values import Overloads

        return Overloads(owner, fn, declarations)


def _is_parameter_list(module) -> bool:
    from scriptc.nn import ParameterList
    return isinstance(module, ParameterList)


def is_parameter_dict(module) -> bool:
    from scriptc.nn import ParameterDict
    return isinstance(module, ParameterDict)


def is_module_dict(module) -> bool:
    """A ModuleDict or ParameterDict (or a subclass of one): keys, values and items are unrolled."""
    from scriptc.nn import ModuleDict
    return isinstance(module, ModuleDict) or is_parameter_dict(module)


def user_method(module, name: str):
    """`name` as the module's own class (not an nn container of scriptc's) defines it, or None."""
    for cls in type(module).__mro__:
        if name in vars(cls):
            fn = vars(cls)[name]
            return fn if inspect.isfunction(fn) and not cls.__module__.startswith("scriptc.") else None
    return None


def _is_none(value) -> bool:
    return isinstance(value, Value) and value.node is not None and value.node.op == "prim::Constant" and \
        value.node.attrs.get("value") is None


def _is_class_instance(value) -> bool:
    """An instance of a user class scripted code can compile (not a module, tensor or builtin value)."""
    cls = type(value)
    if getattr(cls, "_scriptc_script_class", False):
        return True
    # a callable one counts when its __call__ is a method to compile (torchvision's det_utils.Matcher)
    call = inspect.getattr_static(cls, "__call__", None) if callable(value) else None
    compiled_call = call is None or inspect.isfunction(call) and not getattr(call, "_scriptc_ignore", False)
    return cls.__module__ not in ("builtins", "typing", "enum") and not cls.__module__.startswith("scriptc") and \
        inspect.isfunction(getattr(cls, "__init__", None)) and compiled_call and \
        not hasattr(value, "_fields") and not isinstance(value, BaseException)


def _holds_tensor(value) -> bool:
    if isinstance(value, (list, tuple)):
        return any(_holds_tensor(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_tensor(v) for v in value.values())
    return hasattr(value, "_data") and hasattr(value, "dtype")


def _constant_data(value) -> bool:
    if isinstance(value, (list, tuple)):
        return all(_constant_data(v) for v in value)
    if isinstance(value, dict):
        return all(_constant_data(k) and _constant_data(v) for k, v in value.items())
    return value is None or isinstance(value, (bool, int, float, complex, str))


def container_type_of(value, fallback):
    """The IR type of a module's list/dict attribute, from its items."""
    from .types import scalar_of_python

    if value is None:
        return NoneType
    if isinstance(value, list):
        item = _items_type(value, fallback)
        return ListType(item) if item is not None else fallback
    if isinstance(value, dict):
        key, item = _items_type(list(value), fallback), _items_type(list(value.values()), fallback)
        return DictType(key, item) if key is not None and item is not None else fallback
    if isinstance(value, tuple):
        return TupleType(tuple(container_type_of(v, fallback) for v in value))
    if hasattr(value, "_data") and hasattr(value, "dtype"):
        return TensorType()
    return scalar_of_python(value) or fallback


def _items_type(items: list, fallback):
    """The one type of a container's items, as torch infers it ([t, None] is List[Optional[Tensor]]);
    None where there are none or they have no common type."""
    found = None
    for item in items:
        t = container_type_of(item, fallback)
        found = t if found is None else (unify(found, t) if t is not None else None)
        if found is None:
            return None
    return found


def unconvertible_attribute(module, name: str, value) -> str:
    """torch's message for a module attribute whose value has no TorchScript type."""
    from scriptc.nn.module import Module

    reason = ""
    if isinstance(value, (list, tuple)) and any(isinstance(v, Module) for v in value):
        reason = ("Could not infer type of list element: Cannot infer concrete type of torch.nn.Module. "
                  if isinstance(value, list) else "Cannot infer concrete type of torch.nn.Module. ")
    return (f"Module '{type(module).__name__}' has no attribute '{name}' (This attribute exists on the Python "
            f"module, but we failed to convert Python type: '{type(value).__name__}' to a TorchScript type. "
            f"{reason}Its type was inferred; try adding a type annotation for the attribute.)")
