"""The lowering of a FusionGroup: its head (a product or convolution), then the kernel the recorded
call ran, launched with its sizes and strides in registers."""

from __future__ import annotations

from scriptc import ops
from scriptc.native import program as native

from ..groups import GroupStep
from ..program_values import NotNative, Builder, copied, dense, value_of, TensorValue, tensor_of
from ..transposed_lowering import conv_transpose
from .kernels import _product, conv2d, frozen_weights, linear_product


def lower_group(builder: Builder, node, args, recorded, step: GroupStep):
    """A FusionGroup: its head, then the kernel the recorded call ran, its launch in registers."""
    concrete = [recorded[v] for v in node.inputs]
    found = step.variant_for(concrete)
    if found is None:
        raise NotNative("a group that ran no kernel")
    variant, shape = found
    spec = variant.spec
    if spec.notes.get("then") is not None or any(
            variant.scalar_dtypes.get(i) is not None and i not in dict(variant.fixed_reads) for i in spec.used_inputs):
        raise NotNative("a group whose kernel the program cannot launch")
    syms = list(args)
    if variant.head is not None:
        sources = [syms[p] if p is not None else value_of(builder, c, [], None) for p, c in variant.head_sources]
        if variant.head.name == "matmul":
            a, b = (dense(builder, sources[i], concrete[p] if p is not None else None)
                    for i, (p, _) in enumerate(variant.head_sources[:2]))
            epilogue = _linear_epilogue(node, syms, a, b)
            if epilogue is not None:
                return [linear_product(builder, a, *epilogue)]  # (the group's whole work: no kernel after)
            syms.append(_product(builder, a, b))
        elif variant.head.name in ("conv2d", "conv_transpose2d"):
            bounds = spec.head_bounds if variant.head_is_result else None
            x_value = recorded[node.inputs[variant.head_sources[0][0]]]
            if variant.head.name == "conv2d":  # (into a planned cat's result where its output is the group's)
                into = builder.destinations.get(id(node)) if variant.head_is_result else None
                syms.append(conv2d(builder, sources, x_value, bounds, into))
            else:
                syms.append(conv_transpose(builder, sources, x_value, bounds))
            if variant.head_is_result:
                return [syms[-1]]  # (the products applied the group's ReLU or clamp as they stored)
        else:
            raise NotNative(f"a {variant.head.name} head")
    rank = len(shape)
    iteration: list[int | None] = [None] * rank
    fixed = dict(variant.fixed_reads)
    for i, check in variant.checks:
        if check is None:
            continue
        dtype, ndim, ones = check
        t = tensor_of(syms[i])
        if t.dtype != dtype or t.rank != ndim:
            raise NotNative("a group input of another dtype or rank than its kernel's")
        if t.strides and t.strides[-1] != native.ONE and ndim - 1 not in ones:  # (a 0-d view has none)
            t = syms[i] = copied(builder, t)  # (the kernels read a row's elements one after another)
        offset = rank - ndim
        for k in range(ndim):
            if k in ones:
                builder.equal(t.dims[k], native.ONE)
            elif iteration[offset + k] is None:
                iteration[offset + k] = t.dims[k]
            else:
                builder.equal(t.dims[k], iteration[offset + k])
    iteration = [native.ONE if d is None else d for d in iteration]
    merge = spec.notes.get("merge")
    # (the kernel's inputs only: the head's image may be a view only the head reads, padded_planes.py)
    if merge is not None and any(isinstance(syms[i], TensorValue) and syms[i].strides is not None
                                 for i, _ in variant.checks):
        raise NotNative("a reduction over merged dims of a strided view")
    tail = spec.tail

    def merged(dims: list[int]) -> list[int]:
        if merge is None:
            return list(dims)
        return dims[:merge[0]] + [builder.product(dims[merge[0]:merge[1] + 1])] + dims[merge[1] + 1:]

    kernel_dims = merged(iteration)
    tensors = [i for i, inp in enumerate(spec.inputs) if inp.kind == "tensor"]
    # Views (chunks of a product's result) are read in place, by rows with their strides.
    flat = variant.flat and not any(isinstance(syms[i], TensorValue) and syms[i].strides is not None
                                    for i in spec.used_inputs)
    kernel = variant.kernel if flat else variant.strided_kernel()
    meta = builder.block(1 if flat else spec.rank * (1 + len(tensors)))
    count = builder.product(iteration)
    if flat:
        total = count
    else:
        builder.copy_into(meta, kernel_dims, builder.shape)
        used = set(spec.used_inputs)
        for n, i in enumerate(tensors):
            first = meta + spec.rank * (n + 1)
            if i not in used:
                continue  # (an input only the head reads: its strides stay 0, unread)
            t = syms[i]
            dims = merged([native.ONE] * (rank - t.rank) + t.dims)
            dims_block = builder.block(len(dims))
            builder.copy_into(dims_block, dims, builder.shape)
            own = -1
            if t.strides is not None:
                own = builder.block(len(dims))
                builder.copy_into(own, [native.ONE] * (rank - t.rank) + t.strides, builder.shape)
            builder.shape.append(("STRIDES", first, spec.rank, meta, dims_block, len(dims), own))
        spanned = tail.dim if tail is not None and tail.form in (ops.REDUCE, ops.NORMALIZE) else None
        total = builder.product([kernel_dims[d] for d in range(spec.rank - 1) if d != spanned])
    reduces = tail is not None and tail.form == ops.REDUCE
    out_dims = list(iteration)
    if reduces:
        reduced = range(merge[0], merge[1] + 1) if merge else [tail.dim]
        if tail.role.combine in ("max", "min"):
            for d in reduced:
                builder.nonzero(iteration[d])  # an empty amax/amin raises, from the steps
        out_dims = [native.ONE if d in reduced else n for d, n in enumerate(iteration)
                    if tail.keepdim or d not in reduced]
    outputs = [builder.alloc(dtype, out_dims) for dtype in variant.out_dtypes]
    ptrs = builder.block(len(spec.inputs) + len(outputs))
    for i in range(len(spec.inputs)):
        if i in fixed:
            value = fixed[i]
            builder.template[ptrs + i] = value.ctypes.data
            builder.keep.append(value)
        elif i in spec.used_inputs:
            builder.compute.append(("MOV", ptrs + i, tensor_of(syms[i]).pointer))
    for j, out in enumerate(outputs):
        builder.compute.append(("MOV", ptrs + len(spec.inputs) + j, out.pointer))
    function = builder.const(kernel.address)
    builder.compute.append(("SPLIT", function, total, ptrs, meta, count))
    return outputs


def _linear_epilogue(node, syms: list, a: TensorValue, b: TensorValue):
    """(weights, bias, floor) when all a matmul group does is a Linear layer's - a @ W + bias, then
    maybe a ReLU - with W and the bias constants the packed product takes (a's dtype, the bias one
    value per column, the add's alpha 1); else None."""
    weights = frozen_weights(b)
    body = [n for n in node.blocks[0] if n.op != "prim::Constant"]
    if weights is None or a.dtype != weights.dtype or len(node.outputs) != 1 or len(body) not in (2, 3):
        return None
    product, add = body[0], body[1]
    relu = body[2] if len(body) == 3 else None
    params = {id(p): k for k, p in enumerate(node.blocks[0].params)}
    if add.op != "add" or add.inputs[0] is not product.output or id(add.inputs[1]) not in params or \
            _constant(add.inputs[2]) != 1 or (relu is not None and (relu.op != "relu" or relu.inputs[0] is not add.output)):
        return None
    returns = node.blocks[0].returns
    if len(returns) != 1 or returns[0] is not (relu or add).output:
        return None
    bias = syms[params[id(add.inputs[1])]]
    bias = bias.root[1] if isinstance(bias, TensorValue) and bias.root is not None and bias.root[0] == "constant" \
        else None
    if bias is None or bias.dtype != weights.dtype or bias.shape != (weights.shape[1],):
        return None
    return weights, bias, 0.0 if relu is not None else None


def _constant(value):
    node = value.node
    return node.attrs.get("value") if node is not None and node.op == "prim::Constant" else None
