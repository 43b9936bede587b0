"""Pickling tensors between processes through shared memory, as torch.multiprocessing does.

Registered with multiprocessing's ForkingPickler, which Queue, SimpleQueue, Pipe and the
arguments of a spawned Process go through: a tensor is moved into shared memory (in place,
so the sender keeps using the shared copy) and travels as a duplicate of its memory file's
descriptor plus its layout; the receiver maps the same memory. Tensors on one storage stay
views of one mapping on the other side.
"""

from __future__ import annotations

from multiprocessing import reduction

import numpy as np

from scriptc.multiprocessing.shared_memory import byte_offset, map_descriptor, move_to_shared_memory, shared_storage

__all__ = ["reduce_tensor", "rebuild_tensor", "init_reductions"]


def reduce_tensor(tensor):
    """The pickle reduction of a Tensor or Parameter sent to another process."""
    if tensor.requires_grad and tensor.grad_fn is not None:
        raise RuntimeError("Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd does "
                           "not support crossing process boundaries.  If you just want to transfer the data, call "
                           "detach() on the tensor before serializing (e.g., putting it on the queue).")
    move_to_shared_memory([tensor], need_fd=True)
    array = tensor._data
    mapping = shared_storage(array)
    layout = (array.dtype, array.shape, array.strides, byte_offset(array, mapping))
    return rebuild_tensor, (type(tensor), reduction.DupFd(mapping.fd), len(mapping), layout, tensor.requires_grad)


def rebuild_tensor(cls, fd_holder, nbytes: int, layout: tuple, requires_grad: bool):
    """The receiving side of reduce_tensor: a tensor on the sender's shared memory."""
    from scriptc.tensors import Tensor, from_numpy

    mapping = map_descriptor(fd_holder.detach(), nbytes)
    dtype, shape, strides, offset = layout
    t = from_numpy(np.ndarray(shape, dtype, buffer=mapping.array(), offset=offset, strides=strides))
    t._vc = mapping.version_counter
    if cls is Tensor:
        t.requires_grad = requires_grad
        return t
    return cls(t, requires_grad)


def init_reductions() -> None:
    """Register the tensor reductions with multiprocessing (done when scriptc.multiprocessing loads)."""
    from scriptc.nn.module import Parameter
    from scriptc.tensors import Tensor

    for cls in (Tensor, Parameter):
        reduction.register(cls, reduce_tensor)
