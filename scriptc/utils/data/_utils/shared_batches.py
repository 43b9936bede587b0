"""Batches in shared memory: how a worker's batch reaches the main process without a copy.

A worker collates into *blocks*: shared-memory mappings it owns, one per message. A batch of
tensors collate wrote travels as a flat header (WorkerBlocks._pack_flat); any other message is a
pickle in which every tensor is a small reference (block, offset, shape, strides, dtype). A
block's descriptor travels once, with the first message that uses it. The main process maps each
block once and builds the batch's tensors as views of it (zero-copy). When the last view of a
block dies, the main process hands the block back to its worker (with the next task), which
writes a later batch into the same, already-mapped memory: in steady state a batch costs no
allocation, no page faults and no system call for its memory. Blocks beyond what the worker
needs are retired (unmapped on both sides). The memory itself is an anonymous memory file, so
nothing can be left behind in /dev/shm.
"""

from __future__ import annotations

import ctypes
import io
import math
import mmap
import os
import pickle
import struct
import sys
import threading
import weakref

import numpy as np

from scriptc.multiprocessing.shared_memory import SharedMapping, allocate, byte_offset, map_descriptor, shared_storage
from scriptc.ops import bfloat16 as _bfloat16
from scriptc.tensors import Tensor, from_numpy
from scriptc.tensors.core import wrap
from scriptc.types import from_numpy_dtype

__all__ = ["WorkerBlocks", "RowGatherer", "ReceivedBlocks", "SpareBlocks"]

_PAGE = mmap.PAGESIZE
_ALIGNMENT = 64  # where each array of a message starts in its block: a cache line
_SPARE_BYTES = 64 << 20  # the most shared memory a DataLoader keeps between iterators (SpareBlocks)


class WorkerBlocks:
    """A worker's blocks: `array()` lends collate a shared array, `pack()` turns a message into
    bytes plus the descriptors of blocks the main process has not seen, `release()` takes
    back blocks the main process is done with.

    The arrays of one message are carved one after another from one block, sized for the
    largest message so far: a batch is one block, one mapping lease and one release in the
    main process, however many tensors it has."""

    def __init__(self, prefetch_factor: int, inherited: list[SharedMapping] = ()):
        self.prefetch_factor = prefetch_factor
        # inherited: blocks the main process maps already (spares of an earlier iterator, inherited
        # through fork), numbered from 0 as ReceivedBlocks numbers them
        self.mappings: dict[int, SharedMapping] = dict(enumerate(inherited))
        self.flats: dict[int, np.ndarray] = {block: mapping.array() for block, mapping in self.mappings.items()}
        self.ids_by_mapping: dict[int, int] = {id(mapping): block for block, mapping in self.mappings.items()}
        self.idle: list[int] = list(self.mappings)  # taken last-in first-out: the block freed last is likeliest in cache
        self.unsent: set[int] = set()  # blocks whose descriptor the main process has not been sent
        self.session: list[int] = []  # blocks handed out while making the current message, the last one filling
        self.filled = 0  # bytes of the last session block in use
        self.message_bytes = 0  # bytes the current message's arrays take (aligned)
        self.largest_message = _PAGE
        self.lent: dict[int, tuple] = {}  # id(array) -> (array, offset): the current message's arrays
        self.retired: list[int] = []  # blocks to tell the main process to unmap
        self.next_id = len(self.mappings)

    def array(self, shape: tuple, dtype) -> np.ndarray:
        """An uninitialized C-contiguous array in a block, for the message being made."""
        dtype = np.dtype(dtype)
        nbytes = -(-math.prod(shape) * dtype.itemsize // _ALIGNMENT) * _ALIGNMENT
        if not self.session or self.filled + nbytes > len(self.mappings[self.session[-1]]):
            self.session.append(self._take(max(nbytes, self.largest_message)))
            self.filled = 0
        start, self.filled = self.filled, self.filled + nbytes
        self.message_bytes += nbytes
        array = np.ndarray(shape, dtype, buffer=self.flats[self.session[-1]], offset=start)
        self.lent[id(array)] = (array, start)
        return array

    def whole_message(self, nbytes: int) -> int:
        """The address of a block for a message of nbytes that its maker writes itself
        (RowGatherer), the only block of its session: no array is lent."""
        block = self._take(max(nbytes, self.largest_message))
        self.session.append(block)
        self.message_bytes = self.filled = nbytes
        return self.mappings[block].address

    def _take(self, nbytes: int) -> int:
        """The idle block freed last if it fits (reused: mapped on both sides already), else a new one."""
        while self.idle:
            block = self.idle.pop()
            # The arrays lent on a block hold its flat array: more than our dict's reference and the
            # call's means worker code kept an array of an earlier batch, which reusing the block
            # would overwrite. A block too small was sized before a bigger message came: it will
            # not fit again.
            if len(self.mappings[block]) >= nbytes and sys.getrefcount(self.flats[block]) <= 2:
                return block
            self._retire(block)
        block, self.next_id = self.next_id, self.next_id + 1
        mapping = allocate(-(-max(nbytes, 1) // _PAGE) * _PAGE)
        self.mappings[block] = mapping
        self.flats[block] = mapping.array()
        self.ids_by_mapping[id(mapping)] = block
        self.unsent.add(block)
        return block

    def pack(self, message) -> tuple[bytes, list[int]]:
        """(payload, descriptors): message pickled with its tensors as block references; the
        descriptors are those of blocks the main process has not been sent yet."""
        flat = self._pack_flat(message)
        if flat is not None:
            return flat
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

    def _pack_flat(self, message) -> tuple[bytes, list[int]] | None:
        """The payload of a ("data", task, batch) message whose batch is a list or tuple of plain
        tensors that collate wrote into one block (default_collate of tuple samples): a fixed
        header, then each tensor's offset, shape and dtype, with no pickling on either side.
        None for any other message."""
        if message[0] != "data" or len(self.session) != 1 or type(message[2]) not in (list, tuple):
            return None
        places = []
        for tensor in message[2]:
            lent = self.lent.get(id(tensor._data)) if type(tensor) is Tensor and not tensor.requires_grad else None
            if lent is None or lent[0] is not tensor._data:
                return None
            places.append(_place(lent[1], lent[0].shape, lent[0].dtype))
        return self.flat_message(message[1], type(message[2]) is tuple, len(places), b"".join(places))

    def flat_message(self, task: int, is_tuple: bool, count: int, places: bytes) -> tuple[bytes, list[int]]:
        """(payload, descriptors) of a flat message: a batch of `count` tensors, all in the one
        block of this session, at `places` (_place's, joined); the session ends."""
        block, retired = self.session[0], self.retired
        new = block in self.unsent
        head = _FLAT_HEAD.pack(_FLAT, task, block, 0 if new else -1, len(self.mappings[block]), is_tuple, count,
                               len(retired))
        if retired:
            payload = b"".join([head, struct.pack(f"<{len(retired)}q", *retired), places])
            self.retired = []
        else:
            payload = head + places
        self._end_session((block,))
        if not new:
            return payload, []
        self.unsent.discard(block)
        return payload, [self.mappings[block].fd]

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
        if self.message_bytes > self.largest_message:
            self.largest_message = -(-self.message_bytes // _PAGE) * _PAGE
        if len(self.session) > len(used):  # (the blocks a message uses are blocks of its session)
            self.idle.extend(b for b in self.session if b not in used)
        self.session, self.filled, self.message_bytes = [], 0, 0
        if self.lent:
            self.lent.clear()

    def release(self, blocks: list[int]) -> None:
        """The main process dropped its last views of these blocks: reuse them, keeping as many
        idle as the prefetched messages can use and retiring the rest."""
        self.idle.extend(blocks)
        while len(self.idle) > self.prefetch_factor + 1:
            self._retire(self.idle.pop(0))

    def _retire(self, block: int) -> None:
        mapping = self.mappings.pop(block)
        del self.ids_by_mapping[id(mapping)], self.flats[block]
        self.unsent.discard(block)
        self.retired.append(block)


class RowGatherer:
    """A worker's way to make a batch of a dataset whose default-collated batch is each tensor's
    rows gathered (TensorDataset._row_arrays): one take per tensor straight into one block, and
    the flat message written from the batch's length, with no tensors, collate or pickling on
    the worker's side. What reaches the main process is what the general path sends."""

    def __init__(self, dataset, arrays: list, blocks: WorkerBlocks):
        self.dataset, self.arrays, self.blocks = dataset, arrays, blocks
        # Consecutive rows of C-contiguous arrays are one memmove per array: (address, row bytes) each
        # (the row's size, not strides[0], which numpy leaves arbitrary for a first dim of 1)
        self.sources = ([(array.ctypes.data, array.itemsize * math.prod(array.shape[1:])) for array in arrays]
                        if all(array.flags.c_contiguous and array.ndim for array in arrays) else None)
        self.length = len(arrays[0]) if arrays else 0
        self.layouts: dict[int, tuple] = {}  # batch length -> (each array's out shape and offset, bytes, places)

    @classmethod
    def for_fetcher(cls, fetcher, blocks: WorkerBlocks) -> "RowGatherer | None":
        """The gatherer for a fetcher whose batches are default-collated rows, else None."""
        dataset = getattr(fetcher, "dataset", None)
        if getattr(fetcher, "collated_batch", None) is None or not hasattr(dataset, "_row_arrays"):
            return None
        arrays = dataset._row_arrays()
        return None if arrays is None else cls(dataset, arrays, blocks)

    def message(self, task: int, index) -> tuple[bytes, list[int]] | None:
        """(payload, descriptors) of the batch at index, or None when index is not a list of
        plain integers (the general path then fetches it). IndexError as indexing would."""
        if (type(index) is range and self.sources is not None and index.step == 1
                and 0 <= index.start <= index.stop <= self.length):
            return self._rows_message(task, index.start, index.stop)
        positions = self.dataset._row_positions(index)
        if positions is None:
            return None
        outs, nbytes, places = self.layouts.get(len(positions)) or self._layout(len(positions))
        flat = self.blocks.array((nbytes,), np.uint8)  # the message's first array: at the start of its block
        try:
            for array, (shape, offset) in zip(self.arrays, outs):
                # positions are in range; "wrap" maps negatives as Python does, without the copy "raise" makes
                array.take(positions, axis=0, out=np.ndarray(shape, array.dtype, buffer=flat, offset=offset),
                           mode="wrap")
        except BaseException:
            self.blocks._end_session(())
            raise
        del flat
        return self.blocks.flat_message(task, False, len(outs), places)

    def _rows_message(self, task: int, start: int, stop: int) -> tuple[bytes, list[int]]:
        """The message of rows start..stop-1 (a SequentialSampler's batch): each array's rows are
        one block of memory, copied with one memmove (no positions, arrays or views made)."""
        outs, nbytes, places = self.layouts.get(stop - start) or self._layout(stop - start)
        address = self.blocks.whole_message(nbytes)
        for (source, row_bytes), (_, offset) in zip(self.sources, outs):
            ctypes.memmove(address + offset, source + start * row_bytes, (stop - start) * row_bytes)
        return self.blocks.flat_message(task, False, len(outs), places)

    def _layout(self, rows: int) -> tuple:
        outs, places, nbytes = [], [], 0
        for array in self.arrays:
            shape = (rows,) + array.shape[1:]
            outs.append((shape, nbytes))
            places.append(_place(nbytes, shape, array.dtype))
            nbytes += -(-math.prod(shape) * array.itemsize // _ALIGNMENT) * _ALIGNMENT
        if len(self.layouts) > 64:  # batches of ever new lengths: start over rather than grow
            self.layouts.clear()
        layout = self.layouts[rows] = (outs, max(nbytes, 1), b"".join(places))
        return layout


class ReceivedBlocks:
    """The main process's side of one worker's blocks: their mappings, and which are free to give
    back. A block carries one message at a time (the worker reuses it only once it is given
    back), so it has at most one live lease: the flat array the tensors of that message are
    views of. When the lease dies the block is free.

    `spares` (a SpareBlocks, for workers started by fork) keeps the blocks still mapped when the
    worker is done, for the next iterator's workers: they inherit the mappings, so a new epoch's
    batches need no new memory, descriptors or mappings. `inherited` are the spares this
    worker starts with (WorkerBlocks numbers them alike)."""

    def __init__(self, spares: "SpareBlocks | None" = None, inherited: list[SharedMapping] = ()):
        self.spares = spares
        self.mappings: dict[int, SharedMapping] = dict(enumerate(inherited))
        # block -> a memoryview of its mapping: a lease made from it costs a fifth of one made
        # through the mapping's array interface
        self.buffers: dict[int, memoryview] = {}
        self.watched: dict[int, tuple] = {}  # id(weakref to a lease) -> (that weakref, its block)
        self.freed: list[int] = []
        self.closed = False
        self.lock = threading.Lock()  # leases die (and release) in whatever thread drops them

    def unpack(self, payload: bytes, fds: list[int]):
        """The message in a payload from WorkerBlocks.pack, its tensors views of the blocks."""
        if payload[:1] == _FLAT:
            return self._unpack_flat(payload, fds)
        unpickler = _BatchUnpickler(io.BytesIO(payload), self, fds)
        try:
            message, retired = unpickler.load()
        finally:
            if len(unpickler.mapped) < len(fds):
                for i in set(range(len(fds))) - unpickler.mapped:
                    os.close(fds[i])
        self._forget(retired)
        return message

    def _unpack_flat(self, payload: bytes, fds: list[int]) -> tuple:
        """The ("data", task, batch) message of a payload from WorkerBlocks._pack_flat."""
        _, task, block, fd_index, capacity, is_tuple, count, retired = _FLAT_HEAD.unpack_from(payload)
        start = _FLAT_HEAD.size + 8 * retired
        if retired:
            self._forget(struct.unpack_from(f"<{retired}q", payload, _FLAT_HEAD.size))
        if fd_index >= 0:
            self.mappings[block] = map_descriptor(fds[fd_index], capacity, keep_fd=False)
        lease, version_counter = self._lease(block), [0]
        tensors = []
        for offset, shape, dtype in _parsed_places(payload[start:], count):
            tensor = wrap(np.ndarray(shape, dtype, buffer=lease, offset=offset))
            tensor._vc = version_counter
            tensors.append(tensor)
        return "data", task, tuple(tensors) if is_tuple else tensors

    def _forget(self, retired) -> None:
        """Drop the mappings of blocks the worker retired (idle on both sides): they unmap now."""
        with self.lock:
            for block in retired:
                self._unmap(block)

    def _lease(self, block: int) -> np.ndarray:
        """A new lease on a block: one flat array over it per message, the base of that message's
        tensors on the block. Its death (every such tensor's and view's) releases the block."""
        buffer = self.buffers.get(block)
        if buffer is None:
            buffer = self.buffers[block] = memoryview(self.mappings[block].array())
        lease = np.frombuffer(buffer, np.uint8)  # (whose base is no array: the views made on it keep it as theirs)
        watch = weakref.ref(lease, self._lease_died)
        self.watched[id(watch)] = (watch, block)
        return lease

    def view(self, reference: bytes, fds: list[int], mapped: set, leases: dict) -> Tensor:
        """The tensor a reference from WorkerBlocks.reference names, mapping its block if new."""
        block, fd_index, capacity, offset, flags, dtype, shape, strides = _decode_reference(reference)
        leased = leases.get(block)
        if leased is None:
            if fd_index >= 0 and fd_index not in mapped:
                mapped.add(fd_index)
                self.mappings[block] = map_descriptor(fds[fd_index], capacity, keep_fd=False)
            leased = leases[block] = (self._lease(block), [0])  # the tensors on one block share a version counter
        tensor = from_numpy(np.ndarray(shape, dtype, buffer=leased[0], offset=offset, strides=strides))
        tensor._vc = leased[1]
        if flags & _PARAMETER:
            from scriptc.nn import Parameter
            return Parameter(tensor, bool(flags & _REQUIRES_GRAD))
        if flags & _REQUIRES_GRAD:
            tensor.requires_grad = True
        return tensor

    def _lease_died(self, watch: weakref.ref) -> None:
        with self.lock:
            _, block = self.watched.pop(id(watch))
            if self.closed:
                self._spare(self._unmap(block))
            else:
                self.freed.append(block)

    def _spare(self, mapping: SharedMapping) -> None:
        if self.spares is not None:
            self.spares.keep(mapping)

    def take_freed(self) -> list[int]:
        """Blocks released since the last call, to hand back to the worker."""
        if not self.freed:
            return []
        with self.lock:
            blocks, self.freed = self.freed, []
        return blocks

    def close(self) -> None:
        """Give up every block no batch uses (to the spares, else unmapped); the rest go as their
        last leases die. (A mapping unmaps when its last reference goes: ours, here, the spares',
        or the buffer of a dying lease.)"""
        with self.lock:
            self.closed = True
            leased = {block for _, block in self.watched.values()}
            for block in [b for b in self.mappings if b not in leased]:
                self._spare(self._unmap(block))
            self.freed = []

    def _unmap(self, block: int) -> SharedMapping:
        """Forget a block (its mapping unmaps once nothing else holds it); returns its mapping."""
        self.buffers.pop(block, None)
        return self.mappings.pop(block)


class SpareBlocks:
    """A DataLoader's blocks kept between iterators (ReceivedBlocks), at most `limit` of them and
    _SPARE_BYTES in all (memory an idle loader holds): memory the next epoch's forked workers
    write their batches into again."""

    def __init__(self):
        self.mappings: list[SharedMapping] = []
        self.limit = self.nbytes = 0

    def keep(self, mapping: SharedMapping) -> None:
        if len(self.mappings) < self.limit and self.nbytes + len(mapping) <= _SPARE_BYTES:
            self.mappings.append(mapping)
            self.nbytes += len(mapping)

    def hand_out(self, workers: int, limit: int) -> list[list[SharedMapping]]:
        """Every spare, dealt out to `workers` workers in turn; from now on keep up to `limit`."""
        spares, self.mappings, self.limit, self.nbytes = self.mappings, [], limit, 0
        return [spares[k::workers] for k in range(workers)]


# --- the pickling of a message ----------------------------------------------------------------

_REQUIRES_GRAD, _PARAMETER = 1, 2
_REFERENCE_HEAD = struct.Struct("<qqqqBBH")  # block, fd index, capacity, offset, flags, ndim, dtype code length
# A flat message (WorkerBlocks._pack_flat) starts with _FLAT, which no pickle does: then task, block,
# fd index, capacity, whether the batch is a tuple, its length and the number of retired blocks, the
# retired blocks, and per tensor its offset, ndim and dtype code length, shape and dtype code.
_FLAT = b"F"
_FLAT_HEAD = struct.Struct("<cqqqqBHH")
_PLACE = struct.Struct("<qBB")


def _place(offset: int, shape: tuple, dtype: np.dtype) -> bytes:
    """An array's part of a flat message: its offset in the block, ndim, shape and dtype code."""
    key = (offset, shape, dtype)
    place = _PLACES.get(key)
    if place is None:
        if len(_PLACES) > 4096:  # batches of ever new shapes: start over rather than grow
            _PLACES.clear()
        code = _dtype_code(dtype)
        place = _PLACES[key] = _PLACE.pack(offset, len(shape), len(code)) + struct.pack(f"<{len(shape)}q", *shape) + code
    return place


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
    return block, fd_index, capacity, offset, flags, _dtype_of(code), dims[:ndim], dims[ndim:]


def _parsed_places(places: bytes, count: int) -> tuple:
    """((offset, shape, dtype) per array) of the places of a flat message (_place's, joined)."""
    parsed = _PARSED_PLACES.get(places)
    if parsed is None:
        parsed, position = [], 0
        for _ in range(count):
            offset, ndim, code_length = _PLACE.unpack_from(places, position)
            position += _PLACE.size + 8 * ndim
            shape = struct.unpack_from(f"<{ndim}q", places, position - 8 * ndim)
            dtype = _dtype_of(places[position:position + code_length])
            from_numpy_dtype(dtype)  # (a dtype tensors cannot have raises here, as from_numpy would)
            if dtype == _bfloat16.STORAGE:
                _bfloat16.SEEN[0] = True
            position += code_length
            parsed.append((offset, shape, dtype))
        if len(_PARSED_PLACES) > 4096:  # batches of ever new shapes: start over rather than grow
            _PARSED_PLACES.clear()
        parsed = _PARSED_PLACES[places] = tuple(parsed)
    return parsed


def _dtype_of(code: bytes) -> np.dtype:
    """The dtype _dtype_code wrote as code."""
    dtype = _DTYPES.get(code)
    if dtype is None:
        dtype = _DTYPES[code] = pickle.loads(code) if code[:1] == pickle.PROTO else np.dtype(code.decode())
    return dtype


_DTYPE_CODES: dict[np.dtype, bytes] = {}
_PLACES: dict[tuple, bytes] = {}  # (offset, shape, dtype) -> its part of a flat message
_DTYPES: dict[bytes, np.dtype] = {}
_PARSED_PLACES: dict[bytes, tuple] = {}  # the places of a flat message -> _parsed_places' answer


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

