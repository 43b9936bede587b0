"""Class interfaces: a @torch.jit.interface class that is no nn.Module types values of any script
class with its methods (`c: List[OneTwo] = [Foo(), Bar()]`). A value of a class becomes one where
its class has each method with types the interface's calls fit; a method call on one runs the
method of the object's class, picked at run time by a chain of prim::isinstance tests over the
script classes that implement the interface.
A @torch.jit.interface class deriving from nn.Module types parameters and list elements that hold
modules (`mods: List[OneTwo]`): a method call on one calls that module's method (compiled where it
is a ScriptModule), which is why such a function cannot be saved."""

from __future__ import annotations

import inspect

from scriptc.ir.graph import Value
from scriptc.types import Bool, InterfaceType, ModuleType, ObjectType, TensorType

from .types import assignable, unify


def is_module_interface(cls) -> bool:
    """Whether `cls` is a @torch.jit.interface class deriving from nn.Module."""
    from scriptc.nn import Module

    return isinstance(cls, type) and issubclass(cls, Module) and getattr(cls, "_scriptc_interface", False)


def method_caller(declared, interface: str):
    """A Python function calling the method `declared` names on the module it is given."""
    name = declared.__name__

    def call(module, *args):
        method = getattr(module, name, None)
        if not callable(method):
            raise RuntimeError(f"Object of type __torch__.{type(module).__name__} is not compatible with interface "
                               f"__torch__.{interface}: it has no method '{name}'")
        return method(*args)
    call.__qualname__ = f"{declared.__qualname__.replace('<locals>.', '')}"
    return call


def interface_methods(cls) -> dict:
    """The methods a class interface declares, by name."""
    return {name: member for name, member in vars(cls).items() if inspect.isfunction(member)}


def missing_methods(interface, cls: type) -> list[str]:
    """The methods the interface declares that the class `cls` does not define."""
    return [name for name in interface_methods(interface)
            if not inspect.isfunction(inspect.getattr_static(cls, name, None))]


class Interfaces:
    """Conversions to class interfaces and calls of their methods."""

    def interface_type(self, cls) -> InterfaceType:
        """The type an annotation naming the class interface `cls` means."""
        name = cls.__qualname__.replace("<locals>.", "")
        self.ctx.interfaces[name] = cls
        if is_module_interface(cls):
            from scriptc.jit.arguments import MODULE_INTERFACES

            MODULE_INTERFACES[name] = cls  # calls from Python check the modules passed for it
        return InterfaceType(name)

    def takes_module(self, t) -> bool:
        """Whether a value of type `t` is a module: a submodule's, or a module interface's."""
        return isinstance(t, ModuleType) or isinstance(t, InterfaceType) and is_module_interface(
            self.ctx.interfaces.get(t.name))

    def interface_problem(self, source, interface: InterfaceType) -> str | None:
        """Why a value of type `source` (a script class's objects or another interface) is not of the
        class interface `interface`, in torch's words (None: it is)."""
        if isinstance(source, InterfaceType):
            have, shown = self.ctx.interfaces[source.name], f"interface {source.name}"
        else:
            have, shown = self.ctx.class_named(source.name).cls, f"class {source.name}"
        for name, declared in interface_methods(self.ctx.interfaces[interface.name]).items():
            member = inspect.getattr_static(have, name, None)
            if not inspect.isfunction(member):
                return f"{shown} does not have method '{name}' required by interface {interface.name}"
            wanted, wanted_return = self.ctx.method_types(declared)
            given, given_return = self.ctx.method_types(member)
            fits = len(wanted) == len(given) and all(assignable(w, g) for w, g in zip(wanted, given)) and (
                wanted_return is None or given_return is None or assignable(given_return, wanted_return))
            if not fits:
                return (f"Method on {shown} '{name}' (1) is not compatible with interface {interface.name} "
                        f"method '{name}' (2)")
        return None

    def to_interface(self, value: Value, target: InterfaceType) -> Value:
        """`value` (an object or another interface's value) as a value of the interface `target`."""
        problem = self.interface_problem(value.type, target)
        if problem is not None:
            raise self.error(problem)
        return self.emit1("prim::Refine", [value], target)

    def interface_call(self, obj: Value, name: str, args: list, kwargs: dict, node):
        """obj.name(...) on a class interface's value: the method of the object's class, picked by
        its class among the script classes known to implement the interface."""
        interface = self.ctx.interfaces[obj.type.name]
        declared = interface_methods(interface).get(name)
        if declared is None:
            raise self.error(f"'__torch__.{obj.type.name}' object has no attribute or method '{name}'.", node)
        if is_module_interface(interface):
            return self.module_method_call(obj, declared, args, kwargs, node)
        returns = self.ctx.method_types(declared)[1] or TensorType()
        from scriptc.jit.api import SCRIPTED_CLASSES

        for cls in list(SCRIPTED_CLASSES):  # every class scripted so far may be behind the interface
            self.ctx.script_class(cls, self)
        candidates = [record for record in list(self.ctx.classes.values())
                      if self.interface_problem(ObjectType(record.name), obj.type) is None]
        args = [self.as_value(a, node) for a in args]
        kwargs = {k: self.as_value(v, node) for k, v in kwargs.items()}
        return self.dispatch(obj, name, candidates, 0, args, kwargs, returns, node)

    def module_method_call(self, obj: Value, declared, args: list, kwargs: dict, node) -> Value:
        """A module interface's method called on the module a value of it holds, its arguments
        typed by the interface's declaration."""
        wanted, returns = self.ctx.method_types(declared)
        try:
            bound = inspect.signature(declared).bind(None, *args, **kwargs)
        except TypeError as exc:
            raise self.error(f"{declared.__name__}() {exc}", node) from None
        bound.apply_defaults()
        values = []
        for (parameter, value), expected in zip(list(bound.arguments.items())[1:], wanted):
            value = self.as_value(value, node)
            values.append(self.coerce(value, expected, node, f"{declared.__name__}(): Expected a value of type "
                                      f"'{expected}' for argument '{parameter}' but instead found type '{value.type}'."))
        name = self.ctx.register_ignored(method_caller(declared, obj.type.name))
        return self.emit1("prim::Call", [obj] + values, returns or TensorType(), {"function": name})

    def dispatch(self, obj: Value, name: str, candidates: list, position: int, args: list, kwargs: dict,
                 returns, node) -> Value:
        if position == len(candidates):
            self.raises(f"RuntimeError: no script class known when compiling implements interface "
                        f"{obj.type.name} for this object")
            return self.emit1("prim::Uninitialized", [], returns)
        record = candidates[position]
        kind = ObjectType(record.name)
        test = self.emit1("prim::isinstance", [obj], Bool, {"types": [str(kind)]})
        branch = self.emit("prim::If", [test], [])
        with self.inside(branch.add_block()):
            refined = self.emit1("prim::Refine", [obj], kind)
            taken = self.as_value(self.object_method(refined, name, args, kwargs, node), node)
            taken = self.coerce(taken, returns, node, f"{record.name}.{name} returns {taken.type}, not {returns}")
        with self.inside(branch.add_block()):
            other = self.dispatch(obj, name, candidates, position + 1, args, kwargs, returns, node)
        branch.blocks[0].add_return(taken)
        branch.blocks[1].add_return(other)
        return branch.add_output(unify(taken.type, other.type) or returns)
