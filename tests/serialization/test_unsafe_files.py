"""Loading never runs code from a checkpoint, and a damaged file is a clear error."""

from __future__ import annotations

import io
import os
import pickle
import zipfile

import numpy as np
import pytest

import scriptc
from scriptc.serialization.unpickler import WeightsUnpickler


class _RunsACommand:
    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


class _Evaluates:
    def __reduce__(self):
        return eval, ("__import__('os').getpid()",)


def _records(data: bytes) -> dict:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def _zipped(records: dict) -> io.BytesIO:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in records.items():
            archive.writestr(name, data)
    out.seek(0)
    return out


def _checkpoint_with(payload, protocol: int = 2) -> io.BytesIO:
    """A well-formed torch zip checkpoint whose data.pkl is pickle.dumps(payload)."""
    records = _records(_saved())
    records["archive/data.pkl"] = pickle.dumps(payload, protocol=protocol)
    return _zipped(records)


@pytest.mark.parametrize("weights_only", [True, False])
@pytest.mark.parametrize("protocol", [2, 4])
def test_a_pickle_that_calls_os_system_is_refused_and_not_run(tmp_path, weights_only, protocol):
    marker = tmp_path / "pwned"
    checkpoint = _checkpoint_with({"w": _RunsACommand(str(marker))}, protocol)
    with pytest.raises(pickle.UnpicklingError, match=r"GLOBAL posix\.system whose module posix is blocked"):
        scriptc.load(checkpoint, weights_only=weights_only)
    assert not marker.exists(), "the command ran"


@pytest.mark.parametrize("payload, name", [
    (_Evaluates(), "eval"),
    (scriptc.nn.Linear(2, 2), "scriptc.nn.linear.Linear"),
    (np.dtype("f4").type, "numpy.float32"),
])
def test_globals_outside_the_list_are_named(payload, name):
    with pytest.raises(pickle.UnpicklingError, match=rf"Unsupported global: GLOBAL {name} was not an allowed global"):
        scriptc.load(_checkpoint_with(payload))


def test_weights_only_false_adds_numpy_data_but_no_code():
    values = {"array": np.arange(6.0).reshape(2, 3), "scalar": np.float64(2.5), "int": np.int64(7)}
    with pytest.raises(pickle.UnpicklingError, match="numpy"):
        scriptc.load(_checkpoint_with(values))
    loaded = scriptc.load(_checkpoint_with(values), weights_only=False)
    np.testing.assert_array_equal(loaded["array"], values["array"])
    assert loaded["scalar"] == 2.5 and loaded["int"] == 7
    with pytest.raises(pickle.UnpicklingError, match="builtins.eval|GLOBAL eval"):
        scriptc.load(_checkpoint_with(_Evaluates()), weights_only=False)


class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y


def test_add_safe_globals_and_safe_globals_allow_a_trusted_class():
    checkpoint = pickle.dumps({"p": Point(1, 2)}, protocol=2)

    def load():
        return scriptc.load(_checkpoint_with(pickle.loads(checkpoint)))

    with pytest.raises(pickle.UnpicklingError, match=f"GLOBAL {__name__}.Point"):
        load()
    with scriptc.serialization.safe_globals([Point]):
        assert vars(load()["p"]) == {"x": 1, "y": 2}
    assert Point not in scriptc.serialization.get_safe_globals()
    scriptc.serialization.add_safe_globals([Point])
    try:
        assert load()["p"].y == 2 and Point in scriptc.serialization.get_safe_globals()
    finally:
        scriptc.serialization.clear_safe_globals()
    with pytest.raises(pickle.UnpicklingError):
        load()


def test_the_interpreter_refuses_what_only_code_could_do():
    def unpickle(data: bytes):
        return WeightsUnpickler(io.BytesIO(data), {}, lambda pid: None).load()

    with pytest.raises(pickle.UnpicklingError, match="Unsupported operand"):
        unpickle(b"\x80\x02I1\n.")  # INT, a text-protocol opcode
    with pytest.raises(pickle.UnpicklingError, match="Can only APPEND to list"):
        unpickle(b"\x80\x02}K\x01a.")  # APPEND to a dict
    with pytest.raises(pickle.UnpicklingError, match="Can only build OrderedDict"):
        unpickle(b"\x80\x02]}b.")  # BUILD on a list
    with pytest.raises(pickle.UnpicklingError, match="Memo value not found"):
        unpickle(b"\x80\x02h\x05.")
    with pytest.raises(pickle.UnpicklingError, match="Only persistent_load of storage"):
        unpickle(b"\x80\x02X\x03\x00\x00\x00abcQ.")
    with pytest.raises(pickle.UnpicklingError, match="truncated"):
        unpickle(b"\x80\x02X\xff\xff\x00\x00abc")
    with pytest.raises(pickle.UnpicklingError, match="stack ran out"):
        unpickle(b"\x80\x02.")


def _saved() -> bytes:
    buffer = io.BytesIO()
    scriptc.save({"w": scriptc.arange(100).float(), "b": scriptc.ones(3)}, buffer)
    return buffer.getvalue()


@pytest.mark.parametrize("keep", [0.1, 0.5, 0.9, 0.999])
def test_truncated_zip_checkpoints_raise_a_clear_error(keep):
    data = _saved()
    with pytest.raises(RuntimeError, match="PytorchStreamReader failed reading zip archive.*truncated"):
        scriptc.load(io.BytesIO(data[:int(len(data) * keep)]))


def test_truncated_legacy_checkpoints_and_empty_files():
    buffer = io.BytesIO()
    scriptc.save({"w": scriptc.arange(100).float()}, buffer, _use_new_zipfile_serialization=False)
    data = buffer.getvalue()
    with pytest.raises(RuntimeError, match="legacy checkpoint is truncated"):
        scriptc.load(io.BytesIO(data[:-10]))
    with pytest.raises(pickle.UnpicklingError, match="truncated"):
        scriptc.load(io.BytesIO(data[:40]))
    with pytest.raises(EOFError, match="empty"):
        scriptc.load(io.BytesIO(b""))
    with pytest.raises(RuntimeError, match="Invalid magic number"):
        scriptc.load(io.BytesIO(pickle.dumps(12345)))


def test_corrupt_records_raise_a_clear_error():
    data = bytearray(_saved())
    start = data.find(np.arange(100, dtype=np.float32)[5:9].tobytes())
    data[start] ^= 0xFF
    with pytest.raises(RuntimeError, match="failed reading file data/0: Bad CRC-32"):
        scriptc.load(io.BytesIO(bytes(data)))
    records = _records(_saved())
    records["archive/data/0"] = records["archive/data/0"][:40]
    with pytest.raises(RuntimeError, match="holds 40 bytes but the checkpoint's pickle describes 400"):
        scriptc.load(_zipped(records))
    del records["archive/data.pkl"]
    with pytest.raises(RuntimeError, match="failed locating file data.pkl"):
        scriptc.load(_zipped(records))


def test_a_tensor_reaching_past_its_storage_is_refused():
    from scriptc.serialization.torch_names import Storage, _rebuild_tensor_v2

    storage = Storage(np.zeros(4, np.float32), "cpu")
    with pytest.raises(RuntimeError, match="out of bounds for storage of size 16"):
        _rebuild_tensor_v2(storage, 2, (3,), (1,), False, None)
    with pytest.raises(RuntimeError, match="invalid tensor layout"):
        _rebuild_tensor_v2(storage, 0, (2,), (-1,), False, None)
