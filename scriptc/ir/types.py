"""The IR's value types (defined in scriptc.types, the leaf module the op table shares)."""

from scriptc.types import (  # noqa: F401
    AnyTensor,
    Bool,
    DeviceT,
    DictType,
    DType,
    Float,
    Int,
    ListType,
    ModuleType,
    NoneType,
    OptionalType,
    Scalar,
    Str,
    TensorType,
    TupleType,
    Type,
    UnionType,
    is_subtype,
    type_of_constant,
)
