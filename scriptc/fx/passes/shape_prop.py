"""torch.fx.passes.shape_prop: run a GraphModule on example inputs and record each node's tensor metadata."""

from __future__ import annotations

from typing import Any, NamedTuple

from scriptc.fx.interpreter import Interpreter
from scriptc.fx.node import Node, map_aggregate

__all__ = ["TensorMetadata", "ShapeProp", "extract_tensor_metadata"]


class TensorMetadata(NamedTuple):
    """What ShapeProp stores in node.meta['tensor_meta'] for a tensor value."""
    shape: Any
    dtype: Any
    requires_grad: bool
    stride: tuple[int, ...]
    memory_format: Any
    is_quantized: bool
    qparams: dict[str, Any]


def extract_tensor_metadata(result) -> TensorMetadata:
    import scriptc
    memory_format = None
    for candidate in (scriptc.contiguous_format, scriptc.channels_last, scriptc.channels_last_3d):
        if result.is_contiguous(memory_format=candidate):
            memory_format = candidate
            break
    return TensorMetadata(result.shape, result.dtype, result.requires_grad, tuple(result.stride()), memory_format,
                          False, {})


class ShapeProp(Interpreter):
    """`ShapeProp(gm).propagate(*inputs)` runs gm and sets, on every node producing tensors,
    node.meta['tensor_meta'] (a TensorMetadata, or a structure of them) and node.meta['type']."""

    def run_node(self, n: Node) -> Any:
        import scriptc
        result = super().run_node(n)
        found_tensor = [False]

        def extract(value):
            if isinstance(value, scriptc.Tensor):
                found_tensor[0] = True
                return extract_tensor_metadata(value)
            return value
        meta = map_aggregate(result, extract)
        if found_tensor[0]:
            n.meta["tensor_meta"] = meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args) -> Any:
        """Run the module on args, recording metadata; returns its result."""
        return super().run(*args)
