"""An unpickler that builds data and never runs code: the interpreter behind scriptc.load.

It reads the binary pickle opcodes (protocols 2 to 5, without out-of-band buffers) itself
rather than trusting pickle.Unpickler: a global is looked up in an explicit allow-list (never
imported), only allowed callables are called, and only dicts, lists, sets and allowed classes
are filled in. Anything else is a pickle.UnpicklingError that names what was refused.
"""

from __future__ import annotations

import pickle
import struct
from collections import Counter, OrderedDict
from pickle import UnpicklingError
from typing import Callable

__all__ = ["WeightsUnpickler", "BLOCKED_MODULES"]

# Modules whose globals get torch's "is blocked" message: the classic ways to run a command.
BLOCKED_MODULES = ("sys", "os", "posix", "nt")
_PYTHON2_MODULES = {"__builtin__": "builtins", "copy_reg": "copyreg"}
_DICT_TYPES = (dict, OrderedDict, Counter)
# Reads longer than this are first checked against what the file holds, so a corrupt length
# cannot make us allocate more than the file implies.
_LARGE_READ = 1 << 20


class _Stop(Exception):
    """Raised by the STOP opcode: the pickle's value is complete."""

    def __init__(self, value):
        self.value = value


class WeightsUnpickler:
    """Unpickle one object from `file` using only `allowed` globals ('module.name' -> object).

    persistent_load(pid) resolves BINPERSID references (torch's storages); `encoding` decodes
    protocol-2 byte strings ('bytes' keeps them as bytes)."""

    def __init__(self, file, allowed: dict, persistent_load: Callable, encoding: str = "utf-8"):
        self.file = file
        self.allowed = allowed
        self.allowed_ids = {id(obj) for obj in allowed.values()}
        self.persistent_load = persistent_load
        self.encoding = encoding
        self.memo: dict = {}
        self.stack: list = []
        self.metastack: list = []

    # --- driver --------------------------------------------------------------------------------
    def load(self):
        """The unpickled object; UnpicklingError for anything refused or malformed."""
        read = self.file.read
        handlers = _HANDLERS
        try:
            while True:
                code = read(1)
                if not code:
                    raise UnpicklingError("pickle data was truncated")
                handler = handlers.get(code[0])
                if handler is None:
                    raise UnpicklingError(f"Unsupported operand {code[0]} ({code!r})")
                handler(self)
        except _Stop as stop:
            return stop.value
        except IndexError:
            raise UnpicklingError("malformed pickle: the stack ran out of values") from None

    def read(self, n: int) -> bytes:
        if n < 0 or (n > _LARGE_READ and n > self._bytes_left()):
            raise UnpicklingError("pickle data was truncated")  # or corrupt: it claims more than the file holds
        data = self.file.read(n)
        if len(data) != n:
            raise UnpicklingError("pickle data was truncated")
        return data

    def _bytes_left(self) -> int:
        here = self.file.tell()
        end = self.file.seek(0, 2)
        self.file.seek(here)
        return end - here

    def readline(self) -> bytes:
        line = self.file.readline()
        if not line.endswith(b"\n"):
            raise UnpicklingError("pickle data was truncated")
        return line[:-1]

    def pop_mark(self) -> list:
        items = self.stack
        if not self.metastack:
            raise UnpicklingError("could not find MARK")
        self.stack = self.metastack.pop()
        return items

    # --- globals and calls -----------------------------------------------------------------------
    def find_global(self, module: str, name: str):
        module = _PYTHON2_MODULES.get(module, module)
        full_path = f"{module}.{name}"
        if module in BLOCKED_MODULES:
            raise UnpicklingError(f"Trying to load unsupported GLOBAL {full_path} whose module {module} is blocked.")
        if full_path not in self.allowed:
            shown = full_path[len("builtins."):] if module == "builtins" else full_path
            raise UnpicklingError(
                f"Unsupported global: GLOBAL {shown} was not an allowed global by default. Please use "
                f"`scriptc.serialization.add_safe_globals([{shown}])` or the "
                f"`scriptc.serialization.safe_globals([{shown}])` context manager to allowlist this global if you "
                "trust this class/function.")
        return self.allowed[full_path]

    def call(self, func, args):
        if id(func) not in self.allowed_ids:
            raise UnpicklingError(f"Trying to call reduce for unrecognized function {func!r}")
        if type(args) is not tuple:
            raise UnpicklingError(f"arguments to {func!r} must be a tuple, got {type(args).__name__}")
        try:
            return func(*args)
        except UnpicklingError:
            raise
        except Exception as error:
            raise UnpicklingError(f"rebuilding {_name_of(func)} failed: {error}") from error

    def new_object(self, cls, args):
        from scriptc.tensors import Tensor

        if id(cls) not in self.allowed_ids or not isinstance(cls, type):
            raise UnpicklingError(f"Can only create new object for classes allowlisted via `add_safe_globals` but "
                                  f"got {cls!r}")
        if issubclass(cls, Tensor):
            return self.call(cls, args)
        try:
            return cls.__new__(cls, *args)
        except Exception as error:
            raise UnpicklingError(f"creating {_name_of(cls)} failed: {error}") from error

    def build(self, inst, state) -> None:
        if type(inst) in _DICT_TYPES:
            if state:
                inst.__dict__.update(state)
            return
        if id(type(inst)) not in self.allowed_ids:
            raise UnpicklingError(f"Can only build OrderedDict or types allowlisted via `add_safe_globals`, but got "
                                  f"{type(inst)}")
        try:
            if hasattr(inst, "__setstate__"):
                inst.__setstate__(state)
                return
            dict_state, slots_state = state if isinstance(state, tuple) and len(state) == 2 else (state, None)
            if dict_state:
                inst.__dict__.update(dict_state)
            for key, value in (slots_state or {}).items():
                setattr(inst, key, value)
        except Exception as error:
            raise UnpicklingError(f"setting the state of {type(inst).__name__} failed: {error}") from error


def _name_of(obj) -> str:
    return getattr(obj, "__qualname__", None) or repr(obj)


# --- one function per opcode ---------------------------------------------------------------------

def _proto(u):
    version = u.read(1)[0]
    if version > pickle.HIGHEST_PROTOCOL:
        raise UnpicklingError(f"unsupported pickle protocol: {version}")


def _frame(u):
    u.read(8)  # a length hint (protocol 4); the opcodes follow inline


def _stop(u):
    raise _Stop(u.stack.pop())


def _global(u):
    module = u.readline().decode("utf-8")
    name = u.readline().decode("utf-8")
    u.stack.append(u.find_global(module, name))


def _stack_global(u):
    name, module = u.stack.pop(), u.stack.pop()
    if type(module) is not str or type(name) is not str:
        raise UnpicklingError("STACK_GLOBAL requires str")
    u.stack.append(u.find_global(module, name))


def _reduce(u):
    args = u.stack.pop()
    u.stack[-1] = u.call(u.stack[-1], args)


def _newobj(u):
    args = u.stack.pop()
    u.stack[-1] = u.new_object(u.stack[-1], args)


def _build(u):
    state = u.stack.pop()
    u.build(u.stack[-1], state)


def _binpersid(u):
    pid = u.stack.pop()
    if type(pid) is not tuple or not pid or pid[0] not in ("storage", b"storage"):
        raise UnpicklingError(f"Only persistent_load of storage is allowed, but got {pid!r:.80}")
    u.stack.append(u.persistent_load(pid))


def _mark(u):
    u.metastack.append(u.stack)
    u.stack = []


def _pop(u):
    if u.stack:
        u.stack.pop()
    else:
        u.pop_mark()


def _pop_mark(u):
    u.pop_mark()


def _dup(u):
    u.stack.append(u.stack[-1])


def _container_of(u, kind: type, opcode: str):
    target = u.stack[-1]
    if type(target) is not kind:
        raise UnpicklingError(f"Can only {opcode} to {kind.__name__}, but got {type(target)}")
    return target


def _append(u):
    item = u.stack.pop()
    _container_of(u, list, "APPEND").append(item)


def _appends(u):
    items = u.pop_mark()
    _container_of(u, list, "APPENDS").extend(items)


def _dict_target(u, opcode: str):
    target = u.stack[-1]
    if type(target) not in _DICT_TYPES:
        raise UnpicklingError(f"Can only {opcode} for dict, collections.OrderedDict, collections.Counter, but got "
                              f"{type(target)}")
    return target


def _setitem(u):
    value, key = u.stack.pop(), u.stack.pop()
    _dict_target(u, "SETITEM")[key] = value


def _setitems(u):
    items = u.pop_mark()
    target = _dict_target(u, "SETITEMS")
    if len(items) % 2:
        raise UnpicklingError("SETITEMS needs key-value pairs")
    for i in range(0, len(items), 2):
        target[items[i]] = items[i + 1]


def _additems(u):
    items = u.pop_mark()
    _container_of(u, set, "ADDITEMS").update(items)


def _tuple(u):
    items = tuple(u.pop_mark())  # pop_mark replaces u.stack: take the items before appending
    u.stack.append(items)


def _tuple_of(n: int):
    def handler(u):
        if len(u.stack) < n:
            raise UnpicklingError("malformed pickle: the stack ran out of values")
        items = tuple(u.stack[len(u.stack) - n:])
        del u.stack[len(u.stack) - n:]
        u.stack.append(items)
    return handler


def _list(u):
    items = u.pop_mark()
    u.stack.append(items)


def _dict(u):
    items = u.pop_mark()
    if len(items) % 2:
        raise UnpicklingError("DICT needs key-value pairs")
    u.stack.append({items[i]: items[i + 1] for i in range(0, len(items), 2)})


def _frozenset(u):
    items = frozenset(u.pop_mark())
    u.stack.append(items)


def _constant(value):
    def handler(u):
        u.stack.append(value)
    return handler


def _fresh(factory):
    def handler(u):
        u.stack.append(factory())
    return handler


def _unpacked(fmt: str):
    size = struct.calcsize(fmt)

    def handler(u):
        u.stack.append(struct.unpack(fmt, u.read(size))[0])
    return handler


def _long(length_fmt: str):
    size = struct.calcsize(length_fmt)

    def handler(u):
        n = struct.unpack(length_fmt, u.read(size))[0]
        u.stack.append(pickle.decode_long(u.read(n)))
    return handler


def _sized(length_fmt: str, convert):
    size = struct.calcsize(length_fmt)

    def handler(u):
        n = struct.unpack(length_fmt, u.read(size))[0]
        u.stack.append(convert(u, u.read(n)))
    return handler


def _text(u, data: bytes) -> str:
    return str(data, "utf-8", "surrogatepass")


def _byte_string(u, data: bytes):
    return data if u.encoding == "bytes" else data.decode(u.encoding, "strict")


def _raw_bytes(u, data: bytes) -> bytes:
    return data


def _bytearray(u, data: bytes) -> bytearray:
    return bytearray(data)


def _put(index_fmt: str):
    size = struct.calcsize(index_fmt)

    def handler(u):
        u.memo[struct.unpack(index_fmt, u.read(size))[0]] = u.stack[-1]
    return handler


def _memoize(u):
    u.memo[len(u.memo)] = u.stack[-1]


def _get(index_fmt: str):
    size = struct.calcsize(index_fmt)

    def handler(u):
        index = struct.unpack(index_fmt, u.read(size))[0]
        try:
            u.stack.append(u.memo[index])
        except KeyError:
            raise UnpicklingError(f"Memo value not found at index {index}") from None
    return handler


_HANDLERS = {op[0]: handler for op, handler in [
    (pickle.PROTO, _proto), (pickle.FRAME, _frame), (pickle.STOP, _stop),
    (pickle.GLOBAL, _global), (pickle.STACK_GLOBAL, _stack_global), (pickle.REDUCE, _reduce),
    (pickle.NEWOBJ, _newobj), (pickle.BUILD, _build), (pickle.BINPERSID, _binpersid),
    (pickle.MARK, _mark), (pickle.POP, _pop), (pickle.POP_MARK, _pop_mark), (pickle.DUP, _dup),
    (pickle.APPEND, _append), (pickle.APPENDS, _appends), (pickle.SETITEM, _setitem), (pickle.SETITEMS, _setitems),
    (pickle.ADDITEMS, _additems), (pickle.TUPLE, _tuple), (pickle.TUPLE1, _tuple_of(1)),
    (pickle.TUPLE2, _tuple_of(2)), (pickle.TUPLE3, _tuple_of(3)), (pickle.LIST, _list), (pickle.DICT, _dict),
    (pickle.FROZENSET, _frozenset),
    (pickle.NONE, _constant(None)), (pickle.NEWTRUE, _constant(True)), (pickle.NEWFALSE, _constant(False)),
    (pickle.EMPTY_TUPLE, _constant(())), (pickle.EMPTY_LIST, _fresh(list)), (pickle.EMPTY_DICT, _fresh(dict)),
    (pickle.EMPTY_SET, _fresh(set)),
    (pickle.BININT, _unpacked("<i")), (pickle.BININT1, _unpacked("<B")), (pickle.BININT2, _unpacked("<H")),
    (pickle.BINFLOAT, _unpacked(">d")), (pickle.LONG1, _long("<B")), (pickle.LONG4, _long("<i")),
    (pickle.BINUNICODE, _sized("<I", _text)), (pickle.SHORT_BINUNICODE, _sized("<B", _text)),
    (pickle.BINUNICODE8, _sized("<Q", _text)), (pickle.SHORT_BINSTRING, _sized("<B", _byte_string)),
    (pickle.BINSTRING, _sized("<i", _byte_string)), (pickle.SHORT_BINBYTES, _sized("<B", _raw_bytes)),
    (pickle.BINBYTES, _sized("<I", _raw_bytes)), (pickle.BINBYTES8, _sized("<Q", _raw_bytes)),
    (pickle.BYTEARRAY8, _sized("<Q", _bytearray)),
    (pickle.BINPUT, _put("<B")), (pickle.LONG_BINPUT, _put("<I")), (pickle.MEMOIZE, _memoize),
    (pickle.BINGET, _get("<B")), (pickle.LONG_BINGET, _get("<I")),
]}
