"""PyTorch's checkpoint zip: `<name>/data.pkl` plus one `<name>/data/<key>` record per storage.

Records are stored uncompressed and start on 64-byte boundaries (the local header's extra field
pads them), as torch writes them, so a reader can map a record straight out of the file.
"""

from __future__ import annotations

import io
import mmap as mmap_module
import os
import secrets
import struct
import sys
import zipfile

import numpy as np

from scriptc.serialization.pickler import StorageWriter, TorchPickler

__all__ = ["ZIP_MAGIC", "write_checkpoint", "ZipCheckpoint"]

ZIP_MAGIC = b"PK\x03\x04"
_ALIGNMENT = 64
_FORMAT_VERSION = b"3\n"
_LOCAL_HEADER_SIZE = 30
_ZIP64_EXTRA_SIZE = 20
_PADDING_FIELD = 0x4246  # "FB", the extra-field id torch's writer pads with


def write_checkpoint(obj, file, archive_name: str, pickle_protocol: int) -> None:
    """Write obj to the binary file object `file` in torch's zip format."""
    storages = StorageWriter()
    pickled = io.BytesIO()
    TorchPickler(pickled, pickle_protocol, storages,
                 lambda record: ("storage", record.storage_type, record.key, "cpu", record.numel)).dump(obj)
    with zipfile.ZipFile(file, "w", zipfile.ZIP_STORED) as archive:
        records = [("data.pkl", pickled.getbuffer()), (".format_version", b"1"), (".storage_alignment", b"64"),
                   ("byteorder", sys.byteorder.encode())]
        records += [(f"data/{record.key}", record.data) for record in storages.records]
        records += [("version", _FORMAT_VERSION), (".data/serialization_id", _serialization_id())]
        for name, data in records:
            _write_aligned(archive, f"{archive_name}/{name}", data)


def _serialization_id() -> bytes:
    return str(secrets.randbelow(10 ** 40)).zfill(40).encode()


def _write_aligned(archive: zipfile.ZipFile, name: str, data) -> None:
    view = memoryview(data).cast("B") if not isinstance(data, np.ndarray) else memoryview(data)
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    info.file_size = view.nbytes
    zip64 = view.nbytes * 1.05 > zipfile.ZIP64_LIMIT
    header = _LOCAL_HEADER_SIZE + len(name.encode("utf-8")) + (_ZIP64_EXTRA_SIZE if zip64 else 0) + 4
    padding = -(archive.start_dir + header) % _ALIGNMENT
    info.extra = struct.pack("<HH", _PADDING_FIELD, padding) + b"Z" * padding
    with archive.open(info, "w", force_zip64=zip64) as out:
        out.write(view)


class ZipCheckpoint:
    """A torch zip checkpoint opened for reading: its pickle and its storage records."""

    def __init__(self, file, path: str | None, use_mmap: bool):
        try:
            self.archive = zipfile.ZipFile(file)
        except zipfile.BadZipFile as error:
            raise RuntimeError(f"PytorchStreamReader failed reading zip archive: {error} (the checkpoint is "
                               "truncated or is not a checkpoint)") from None
        pickles = [n for n in self.archive.namelist() if n.endswith("/data.pkl") and n.count("/") == 1]
        if len(pickles) != 1:
            raise RuntimeError("PytorchStreamReader failed locating file data.pkl: file not found (this zip is not "
                               "a torch checkpoint)")
        self.prefix = pickles[0][:-len("data.pkl")]
        self.mapped = self._map(path) if use_mmap else None
        self.swap_bytes = self._byteorder() != sys.byteorder

    def _map(self, path: str):
        with open(path, "rb") as fh:
            return mmap_module.mmap(fh.fileno(), 0, access=mmap_module.ACCESS_COPY)

    def _byteorder(self) -> str:
        name = self.prefix + "byteorder"
        if name not in self.archive.NameToInfo:
            return "little"
        order = self.record("byteorder").decode("ascii", "replace")
        if order not in ("little", "big"):
            raise RuntimeError(f"checkpoint byteorder record says {order!r}; expected 'little' or 'big'")
        return order

    def _info(self, name: str) -> zipfile.ZipInfo:
        try:
            return self.archive.getinfo(self.prefix + name)
        except KeyError:
            raise RuntimeError(f"PytorchStreamReader failed locating file {name}: file not found") from None

    def record(self, name: str) -> bytes:
        """A whole record's bytes (data.pkl, byteorder, ...)."""
        try:
            return self.archive.read(self._info(name))
        except (zipfile.BadZipFile, OSError, EOFError) as error:
            raise RuntimeError(f"PytorchStreamReader failed reading file {name}: {error}") from None

    def storage(self, key: str, dtype: np.dtype, numel: int) -> np.ndarray:
        """The array of storage `key`, checked to hold exactly numel elements of dtype."""
        name = f"data/{key}"
        info = self._info(name)
        nbytes = numel * dtype.itemsize
        if info.file_size != nbytes:
            raise RuntimeError(f"storage record {name} holds {info.file_size} bytes but the checkpoint's pickle "
                               f"describes {nbytes} ({numel} x {dtype}): the file is corrupt")
        if self.mapped is not None:
            array = np.frombuffer(self.mapped, dtype, count=numel, offset=self._data_offset(info))
        else:
            array = np.empty(numel, dtype)
            try:
                with self.archive.open(info) as record:
                    got = record.readinto(memoryview(array).cast("B"))
            except (zipfile.BadZipFile, OSError, EOFError) as error:
                raise RuntimeError(f"PytorchStreamReader failed reading file {name}: {error}") from None
            if got != nbytes:
                raise RuntimeError(f"PytorchStreamReader failed reading file {name}: the record is truncated")
        if self.swap_bytes:
            array.byteswap(inplace=True)
        return array

    def _data_offset(self, info: zipfile.ZipInfo) -> int:
        if info.compress_type != zipfile.ZIP_STORED:
            raise RuntimeError(f"cannot map {info.filename}: the record is compressed")
        header = self.mapped[info.header_offset:info.header_offset + _LOCAL_HEADER_SIZE]
        if len(header) != _LOCAL_HEADER_SIZE or header[:4] != ZIP_MAGIC:
            raise RuntimeError(f"PytorchStreamReader failed reading file {info.filename}: bad local header")
        name_length, extra_length = struct.unpack("<HH", header[26:30])
        start = info.header_offset + _LOCAL_HEADER_SIZE + name_length + extra_length
        if start + info.file_size > len(self.mapped):
            raise RuntimeError(f"PytorchStreamReader failed reading file {info.filename}: the record is truncated")
        return start


def is_zip(file) -> bool:
    """Whether the seekable binary file starts like a zip archive (position kept)."""
    start = file.tell()
    head = file.read(4)
    file.seek(start)
    return head == ZIP_MAGIC


def archive_name_for(f) -> str:
    """The top folder torch names the records under: the file's stem, or 'archive' for a stream."""
    if isinstance(f, (str, os.PathLike)):
        return os.path.splitext(os.path.basename(os.fspath(f)))[0] or "archive"
    return "archive"
