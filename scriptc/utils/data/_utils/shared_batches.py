"""Batches in shared memory: how a worker's batch reaches the main process without a copy.

A worker collates into *blocks*: shared-memory mappings it owns. A batch message is a pickle in
which every tensor is a small reference (block, offset, shape, strides, dtype); a block's
descriptor travels once, with the first message that uses it. The main process maps each
block once and builds the batch's tensors as views of it (zero-copy). When the last view of a
block dies, the main process hands the block back to its worker (with the next task), which
writes a later batch into the same, already-mapped memory: in steady state a batch costs no
allocation, no page faults and no system call for its memory. Blocks beyond what the worker
needs are retired (unmapped on both sides). The memory itself is an anonymous memory file, so
nothing can be left behind in /dev/shm.
"""

from __future__ import annotations

import io
import math
import mmap
import os
import pickle
import struct
import sys
import threading
import weakref
from collections import deque

import numpy as np

from scriptc.multiprocessing.shared_memory import SharedMapping, allocate, byte_offset, map_descriptor, shared_storage
from scriptc.tensors import Tensor, from_numpy

__all__ = ["WorkerBlocks", "ReceivedBlocks"]

_PAGE = mmap.PAGESIZE


class WorkerBlocks:
    """A worker's blocks: `array()` lends collate a shared array, `pack()` turns a message into
    bytes plus the descriptors of blocks the main process has not seen, `release()` takes
    back blocks the main process is done with."""

    def __init__(self, prefetch_factor: int):
        self.prefetch_factor = prefetch_factor
        self.mappings: dict[int, SharedMapping] = {}
        self.ids_by_mapping: dict[int, int] = {}
        self.idle: list[int] = []
        self.unsent: set[int] = set()  # blocks whose descriptor the main process has not been sent
        self.session: list[int] = []  # blocks handed out while making the current message
        self.retired: list[int] = []  # blocks to tell the main process to unmap
        self.most_per_message = 1
        self.next_id = 0

    def array(self, shape: tuple, dtype) -> np.ndarray:
        """An uninitialized C-contiguous array in a block, for the message being made."""
        dtype = np.dtype(dtype)
        nbytes = math.prod(shape) * dtype.itemsize
        block = self._take(nbytes)
        self.session.append(block)
        return np.ndarray(shape, dtype, buffer=self.mappings[block].array())

    def _take(self, nbytes: int) -> int:
        """The smallest idle block that fits (reused: mapped on both sides already), else a new one."""
        fitting = sorted((len(self.mappings[b]), b) for b in self.idle if len(self.mappings[b]) >= nbytes)
        for _, block in fitting:
            self.idle.remove(block)
            # numpy arrays hold their mapping: more than our dict's reference and the call's means
            # worker code kept an array of an earlier batch, which reusing the block would overwrite
            if sys.getrefcount(self.mappings[block]) <= 2:
                return block
            self._retire(block)
        block, self.next_id = self.next_id, self.next_id + 1
        mapping = allocate(-(-max(nbytes, 1) // _PAGE) * _PAGE)
        self.mappings[block] = mapping
        self.ids_by_mapping[id(mapping)] = block
        self.unsent.add(block)
        return block

    def pack(self, message) -> tuple[bytes, list[int]]:
        """(payload, descriptors): message pickled with its tensors as block references; the
        descriptors are those of blocks the main process has not been sent yet."""
        body = io.BytesIO()
        pickler = _BatchPickler(body, self)
        try:
            pickler.dump((message, self.retired))
        except BaseException:
            self._end_session(())
            raise
        self.unsent.difference_update(pickler.used)
        self.retired = []
        self._end_session(pickler.used)
        return body.getvalue(), pickler.fds

    def reference(self, tensor: Tensor, used: dict, fds: list) -> bytes:
        """The reference to `tensor` in a message: a view of a block written in this session (or a
        copy made into one now); `used` and `fds` collect the blocks and new descriptors."""
        if tensor.requires_grad and tensor.grad_fn is not None:
            raise RuntimeError("Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd "
                               "does not support crossing process boundaries.  If you just want to transfer the data, "
                               "call detach() on the tensor before serializing (e.g., putting it on the queue).")
        array = tensor._data
        mapping = shared_storage(array)
        block = self.ids_by_mapping.get(id(mapping)) if mapping is not None else None
        if block is None or block not in self.session:
            copied = self.array(array.shape, array.dtype)  # a tensor collate did not write: copy it in
            copied[...] = array
            array, block = copied, self.session[-1]
            mapping = self.mappings[block]
        if block not in used:
            used[block] = len(fds) if block in self.unsent else -1
            if block in self.unsent:
                fds.append(mapping.fd)
        flags = (_REQUIRES_GRAD if tensor.requires_grad else 0) | (_PARAMETER if type(tensor) is not Tensor else 0)
        return _encode_reference(block, used[block], len(mapping), byte_offset(array, mapping), flags, array)

    def _end_session(self, used) -> None:
        self.most_per_message = max(self.most_per_message, len(used))
        self.idle.extend(b for b in self.session if b not in used)
        self.session = []

    def release(self, blocks: list[int]) -> None:
        """The main process dropped its last views of these blocks: reuse them, keeping as many
        idle as the prefetched messages can use and retiring the rest."""
        self.idle.extend(blocks)
        keep = (self.prefetch_factor + 1) * self.most_per_message
        while len(self.idle) > keep:
            self._retire(self.idle.pop(0))

    def _retire(self, block: int) -> None:
        mapping = self.mappings.pop(block)
        del self.ids_by_mapping[id(mapping)]
        self.unsent.discard(block)
        self.retired.append(block)


class ReceivedBlocks:
    """The main process's side of one worker's blocks: their mappings, how many live leases
    (batches still using them) each has, and which are free to give back."""

    def __init__(self):
        self.mappings: dict[int, SharedMapping] = {}
        self.live_leases: dict[int, int] = {}
        self.watched: dict[int, tuple] = {}  # id(weakref to a lease) -> (that weakref, its block)
        self.freed: deque = deque()
        self.closed = False
        self.lock = threading.RLock()  # leases die (and release) in whatever thread drops them

    def unpack(self, payload: bytes, fds: list[int]):
        """The message in a payload from WorkerBlocks.pack, its tensors views of the blocks."""
        unpickler = _BatchUnpickler(io.BytesIO(payload), self, fds)
        try:
            message, retired = unpickler.load()
        finally:
            for i in set(range(len(fds))) - unpickler.mapped:
                os.close(fds[i])
        with self.lock:
            for block in retired:  # idle on both sides: unmapped when we drop the mapping
                del self.mappings[block], self.live_leases[block]
        return message

    def view(self, reference: bytes, fds: list[int], mapped: set, leases: dict) -> Tensor:
        """The tensor a reference from WorkerBlocks.reference names, mapping its block if new."""
        block, fd_index, capacity, offset, flags, dtype, shape, strides = _decode_reference(reference)
        if fd_index >= 0 and fd_index not in mapped:
            mapped.add(fd_index)
            self.mappings[block] = map_descriptor(fds[fd_index], capacity, keep_fd=False)
            self.live_leases[block] = 0
        if block not in leases:
            # One flat array per block per message is the base of that message's tensors on the
            # block: its death (every such tensor's and view's) is the signal to release the block.
            lease = self.mappings[block].array()
            leases[block] = (lease, [0])  # the tensors on one block share a version counter
            with self.lock:
                self.live_leases[block] += 1
                watch = weakref.ref(lease, self._lease_died)
                self.watched[id(watch)] = (watch, block)
        lease, version_counter = leases[block]
        tensor = from_numpy(np.ndarray(shape, dtype, buffer=lease, offset=offset, strides=strides))
        tensor._vc = version_counter
        if flags & _PARAMETER:
            from scriptc.nn import Parameter
            return Parameter(tensor, bool(flags & _REQUIRES_GRAD))
        tensor.requires_grad = bool(flags & _REQUIRES_GRAD)
        return tensor

    def _lease_died(self, watch: weakref.ref) -> None:
        with self.lock:
            _, block = self.watched.pop(id(watch))
        self._release(block)

    def _release(self, block: int) -> None:
        with self.lock:
            self.live_leases[block] -= 1
            if self.live_leases[block]:
                return
            if self.closed:
                del self.mappings[block], self.live_leases[block]
            else:
                self.freed.append(block)

    def take_freed(self) -> list[int]:
        """Blocks released since the last call, to hand back to the worker."""
        with self.lock:
            blocks = list(self.freed)
            self.freed.clear()
        return blocks

    def close(self) -> None:
        """Unmap every block no batch uses; the rest unmap as their last leases die. (A mapping
        unmaps when its last reference goes: ours, here, or the buffer of a dying lease.)"""
        with self.lock:
            self.closed = True
            for block in [b for b, count in self.live_leases.items() if count == 0]:
                del self.mappings[block], self.live_leases[block]
            self.freed.clear()


# --- the pickling of a message ----------------------------------------------------------------

_REQUIRES_GRAD, _PARAMETER = 1, 2
_REFERENCE_HEAD = struct.Struct("<qqqqBBH")  # block, fd index, capacity, offset, flags, ndim, dtype code length


def _encode_reference(block: int, fd_index: int, capacity: int, offset: int, flags: int, array: np.ndarray) -> bytes:
    """A tensor reference as one bytes object (a tuple would cost a persistent_id call per field):
    the head, then shape and strides, then the dtype's code."""
    ndim, code = array.ndim, _dtype_code(array.dtype)
    return (_REFERENCE_HEAD.pack(block, fd_index, capacity, offset, flags, ndim, len(code))
            + struct.pack(f"<{2 * ndim}q", *array.shape, *array.strides) + code)


def _dtype_code(dtype: np.dtype) -> bytes:
    """Bytes that _decode_reference turns back into this dtype: its type string ('<f4'), or a
    pickle of it when the type string loses something (bfloat16's structured dtype is '|V2')."""
    code = _DTYPE_CODES.get(dtype)
    if code is None:
        code = _DTYPE_CODES[dtype] = dtype.str.encode() if np.dtype(dtype.str) == dtype else pickle.dumps(dtype)
    return code


def _decode_reference(reference: bytes) -> tuple:
    block, fd_index, capacity, offset, flags, ndim, code_length = _REFERENCE_HEAD.unpack_from(reference)
    dims = struct.unpack_from(f"<{2 * ndim}q", reference, _REFERENCE_HEAD.size)
    code = reference[_REFERENCE_HEAD.size + 16 * ndim:]
    dtype = _DTYPES.get(code)
    if dtype is None:
        dtype = _DTYPES[code] = pickle.loads(code) if code[:1] == pickle.PROTO else np.dtype(code.decode())
    return block, fd_index, capacity, offset, flags, dtype, dims[:ndim], dims[ndim:]


_DTYPE_CODES: dict[np.dtype, bytes] = {}
_DTYPES: dict[bytes, np.dtype] = {}


class _BatchPickler(pickle.Pickler):
    """Pickles a message with every Tensor as a reference into the worker's blocks."""

    def __init__(self, file, blocks: WorkerBlocks):
        super().__init__(file, pickle.HIGHEST_PROTOCOL)
        self.blocks = blocks
        self.used: dict[int, int] = {}  # block -> its index in fds, or -1 when the main process has it
        self.fds: list[int] = []

    def persistent_id(self, obj):
        if isinstance(obj, Tensor):
            return self.blocks.reference(obj, self.used, self.fds)
        return None


class _BatchUnpickler(pickle.Unpickler):
    """Unpickles a message from _BatchPickler, making its tensors views of mapped blocks."""

    def __init__(self, file, blocks: ReceivedBlocks, fds: list[int]):
        super().__init__(file)
        self.blocks = blocks
        self.fds = fds
        self.mapped: set[int] = set()  # indices of fds mapped (and closed) already
        self.leases: dict[int, tuple] = {}

    def persistent_load(self, reference: bytes) -> Tensor:
        return self.blocks.view(reference, self.fds, self.mapped, self.leases)

