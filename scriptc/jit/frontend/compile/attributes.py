"""Attribute access (`a.b`) on every kind of value, and the tensor properties and methods whose
lowering is not a plain op-table call (size, item, tolist, to, T, mT, grad, ...)."""

from __future__ import annotations

import dataclasses

from scriptc import ops
from scriptc.ir.graph import Value
from scriptc.types import (
    DTYPES_BY_NAME,
    Bool,
    Complex,
    DeviceT,
    DType,
    EnumType,
    Float,
    Int,
    ListType,
    NamedTupleType,
    NoneType,
    ObjectType,
    OptionalType,
    Scalar,
    Str,
    TensorType,
)

from .. import ast
from .modules import MODULE_ITERATORS, is_module_dict
from .types import members
from .values import (
    ClassRef,
    MethodRef,
    ModuleChoice,
    ModuleDictMethod,
    PythonNamespace,
    SugaredModule,
    SugaredTuple,
)

_CONVERSIONS = {"float": "float32", "double": "float64", "half": "float16", "long": "int64", "int": "int32",
                "short": "int16", "bool": "bool", "byte": "uint8", "char": "int8"}
# x.<name>(other): the op called with other's size
_AS_OTHERS_SIZE = {"view_as": "view", "reshape_as": "reshape", "expand_as": "expand"}


class Attributes:
    """expr_Attribute and tensor methods."""

    def expr_Attribute(self, node: ast.Attribute, expected):
        base = self.expr(node.value)
        self.at(node)
        return self.attribute(base, node.attr, node)

    def attribute(self, base, name: str, node):
        if isinstance(base, PythonNamespace):
            return self.namespace_attribute(base, name, node)
        if isinstance(base, ModuleChoice):
            return dataclasses.replace(base, method=name)
        if isinstance(base, SugaredModule):
            if name in ("keys", "values", "items") and is_module_dict(base.module) or name in MODULE_ITERATORS:
                return ModuleDictMethod(base, name)
            return self.module_attribute(base, name, node)
        if isinstance(base, ClassRef):
            return self.class_attribute(base, name, node)
        if isinstance(base, SugaredTuple) and name in base.names:
            return base.items[base.names.index(name)]
        if not isinstance(base, Value):
            raise self.error(f"'{self.describe(base)}' has no attribute '{name}' in scripted code", node)
        t = base.type
        if isinstance(t, TensorType):
            return self.tensor_attribute(base, name, node)
        if isinstance(t, ObjectType):
            return self.object_attribute(base, name, node)
        if isinstance(t, NamedTupleType) and name in t.fields:
            return self.tuple_field(base, name, node)
        if isinstance(t, EnumType):
            return self.enum_property(base, name, node)
        if t == DeviceT and name in ("type", "index"):
            return self.emit1(f"{name}.device", [base], Str if name == "type" else OptionalType(Int))
        if t == Complex and name in ("real", "imag"):
            return self.emit1(f"{name}.complex", [base], Float)
        return MethodRef(base, name)

    # --- tensors -------------------------------------------------------------------------------------
    def tensor_attribute(self, x: Value, name: str, node):
        if name == "shape":
            return self.emit1("size.all", [x], ListType(Int))
        if name == "dtype":
            return self.emit1("dtype", [x], DType)
        if name == "device":
            return self.emit1("device.tensor", [x], DeviceT)
        if name == "ndim":
            return self.emit1("dim", [x], Int)
        if name == "layout":  # (torch.strided, an int in script: scripted code sees dense tensors only)
            return self.const(0)
        if name in ("requires_grad", "is_cuda", "is_cpu", "is_leaf", "retains_grad"):
            return self.emit1(f"{name}.tensor", [x], Bool)
        if name == "grad":
            return self.emit1("grad.tensor", [x], OptionalType(TensorType()))
        if name == "data":
            return self.emit_op(ops.OPS["detach"], [x], node)
        if name == "T":
            dims = self.emit1("reversed_dims.tensor", [x], ListType(Int))
            return self.call_op("permute", [x, dims], {}, node, method=True)
        if name == "mT":
            return self.call_op("transpose", [x, self.const(-2), self.const(-1)], {}, node, method=True)
        if name in ("H", "mH"):
            transposed = self.tensor_attribute(x, "T" if name == "H" else "mT", node)
            return self.call_op("conj", [transposed], {}, node, method=True) if ops.overloads("conj") else \
                transposed
        if name in ("real", "imag"):
            return self.call_op(name, [x], {}, node)
        if name in ("itemsize", "nbytes"):
            return self.emit1("element_size.tensor" if name == "itemsize" else "nbytes.tensor", [x], Int)
        if name in _NEVER:  # kinds of tensor scripted code never holds
            return self.const(False)
        return MethodRef(x, name)

    def tensor_method(self, x: Value, name: str, args: list, kwargs: dict, node, expected=None):
        if name == "size":
            if not args and not kwargs:
                return self.emit1("size.all", [x], ListType(Int))
            dim = self.as_value(args[0] if args else kwargs["dim"], node)
            return self.emit1("size", [x, dim], Int)
        if name == "stride" and not args and not kwargs:
            return self.emit1("stride.all", [x], ListType(Int))
        if name in ("dim", "ndimension") and not args:
            return self.emit1("dim", [x], Int)
        if name in ("numel", "nelement") and not args:
            return self.emit1("numel", [x], Int)
        if name == "item" and not args:
            return self.emit1("item", [x], Scalar)
        if name == "tolist" and not args:
            if expected is None:
                raise self.error("Expected type hint for result of tolist() (annotate it: "
                                 "y: List[List[int]] = x.tolist())", node)
            held = [m for m in members(expected) if m != NoneType]  # p: Optional[List[int]]; p = x.tolist()
            declared = held[0] if len(held) == 1 else expected
            dims, element = 0, declared
            while isinstance(element, ListType):
                dims, element = dims + 1, element.elem
            kind = {Int: "int", Float: "float", Bool: "bool", Complex: "complex"}.get(element)
            if kind is None:
                raise self.error(f"{element} is not one of the supported element types for tolist: int, float, "
                                 "complex, bool", node)
            return self.emit1("tolist.tensor", [x, self.const(dims), self.const(kind)], declared)
        if name in _CONVERSIONS and not args and not kwargs:
            return self.emit_op(ops.OPS["to.dtype"], [x, self.const(DTYPES_BY_NAME[_CONVERSIONS[name]])], node)
        if name == "to":
            return self.tensor_to(x, args, kwargs, node)
        if name == "type" and not args and not kwargs:  # torch's script reads it as x.to(): x itself, not a str
            return x
        if name == "type" and len(args) == 1 and not kwargs:  # x.type(torch.int32): a conversion
            dtype = self.as_value(args[0], node)
            if dtype.type == DType:
                return self.emit_op(ops.OPS["to.dtype"], [x, dtype], node)
        if name in _AS_OTHERS_SIZE and len(args) == 1 and not kwargs:  # x.view_as(y): x.view(y.size())
            other = self.as_value(args[0], node)
            if not isinstance(other.type, TensorType):
                raise self.error(f"{name}() expects a Tensor, but got {other.type}", node)
            size = self.emit1("size.all", [other], ListType(Int))
            return self.call_op(_AS_OTHERS_SIZE[name], [x, size], {}, node, method=True)
        if name == "type_as":
            other = self.as_value(args[0], node)
            return self.emit_op(ops.OPS["to.dtype"], [x, self.emit1("dtype", [other], DType)], node)
        if name == "detach" and not args:
            return self.emit_op(ops.OPS["detach"], [x], node)
        if name == "cpu" and not args:
            return x
        if name == "contiguous" and not args:
            return self.emit_op(ops.OPS["contiguous"], [x], node)
        if name in ("cuda",):
            raise self.error("Tensor.cuda() is not supported in scripted code", node)
        if f"{name}.tensor" in ops.OPS:  # a tensor predicate or size of the table (x.is_complex())
            return self.python_op(f"{name}.tensor", [x] + list(args), kwargs, node)
        return self.call_op(name, [x] + list(args), kwargs, node, method=True)

    def tensor_to(self, x: Value, args: list, kwargs: dict, node) -> Value:
        """x.to(dtype) / .to(device) / .to(device, dtype) / .to(other): only the dtype changes data here."""
        target = None
        for value in list(args) + [kwargs.get("dtype"), kwargs.get("other")]:
            if value is None:
                continue
            value = self.as_value(value, node)
            if value.type == DType:
                target = value
            elif value.type == Int:  # a ScalarType number (x.to(6)): TorchScript's dtypes are ints
                target = self.emit1("dtype.int", [value], DType)
            elif isinstance(value.type, TensorType):
                target = self.emit1("dtype", [value], DType)
            elif value.type not in (DeviceT, Str, Bool, OptionalType(DType)):
                raise self.error(f"Tensor.to() does not take a {value.type}", node)
        if target is None:
            return x
        return self.emit_op(ops.OPS["to.dtype"], [x, target], node)


_NEVER = frozenset(("is_sparse", "is_quantized", "is_meta", "is_mkldnn", "is_nested", "is_xpu", "is_mps",
                    "is_vulkan", "is_ipu", "is_xla", "is_sparse_csr", "is_maia", "is_mtia"))
