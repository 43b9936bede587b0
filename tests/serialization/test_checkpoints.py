"""scriptc.save / scriptc.load against torch 2.13: checkpoints move both ways, in the zip and the
legacy formats, with every kind of value a training script saves."""

from __future__ import annotations

import collections
import io
import pathlib
import zipfile

import numpy as np
import pytest

import scriptc
from tests.torch_values import assert_same_values

torch = pytest.importorskip("torch")

DTYPES = ["float32", "float64", "float16", "int8", "int16", "int32", "int64", "uint8", "bool"]


def _values(T, rng):
    """Every kind of value a checkpoint holds, built with torch or scriptc (T)."""
    base = T.from_numpy(rng.standard_normal((4, 6)).astype(np.float32))
    tensors = {name: T.from_numpy((rng.standard_normal(5) * 10).astype(name)) for name in DTYPES}
    return {
        "tensors": tensors,
        "base": base, "row_view": base[1], "strided": base[:, ::2], "transposed": base.t(),
        "flipped": base.flip(0), "expanded": base[0:1].expand(3, 6),
        "scalar": T.from_numpy(np.array(3.5, np.float32)),
        "empty": T.from_numpy(np.zeros((0, 3), np.float32)),
        "parameter": T.nn.Parameter(T.from_numpy(rng.standard_normal(3).astype(np.float32))),
        "frozen": T.nn.Parameter(T.from_numpy(np.ones(2, np.float32)), requires_grad=False),
        "size": T.Size([2, 3]), "dtype": T.float16, "device": T.device("cpu"),
        "nested": collections.OrderedDict(a=[1, 2.5, "three", None, True], b=(4, (5, "six")), c={"d": b"bytes"}),
        "numbers": {1: -2 ** 40, 2: 1e-300, 3: float("inf")},
    }


def _assert_same(ours, theirs):
    assert_same_values(ours, theirs, torch)


@pytest.mark.parametrize("zip_format", [True, False], ids=["zip", "legacy"])
def test_torch_checkpoints_load_in_scriptc(zip_format):
    values = _values(torch, np.random.default_rng(0))
    buffer = io.BytesIO()
    torch.save(values, buffer, _use_new_zipfile_serialization=zip_format)
    buffer.seek(0)
    loaded = scriptc.load(buffer)
    _assert_same(loaded, values)
    loaded["base"][1, 2] = 100.0  # views of one storage still share it
    assert loaded["row_view"][2].item() == 100.0 and loaded["strided"][1, 1].item() == 100.0
    assert loaded["transposed"][2, 1].item() == 100.0
    assert not loaded["strided"].is_contiguous() and loaded["strided"].stride() == (6, 2)


@pytest.mark.parametrize("zip_format", [True, False], ids=["zip", "legacy"])
def test_scriptc_checkpoints_load_in_torch_weights_only(zip_format):
    values = _values(scriptc, np.random.default_rng(1))
    buffer = io.BytesIO()
    scriptc.save(values, buffer, _use_new_zipfile_serialization=zip_format)
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=True)
    _assert_same(values, loaded)
    loaded["base"][1, 2] = 100.0
    assert loaded["row_view"][2].item() == 100.0 and loaded["transposed"][2, 1].item() == 100.0


def test_zip_layout_matches_torch():
    path_buffer = io.BytesIO()
    w = scriptc.ones(3)
    scriptc.save({"w": w, "v": w[1:]}, path_buffer)
    archive = zipfile.ZipFile(path_buffer)
    names = archive.namelist()
    assert names[0] == "archive/data.pkl"
    assert {"archive/version", "archive/byteorder", "archive/.data/serialization_id", "archive/data/0"} <= set(names)
    assert "archive/data/1" not in names, "a view shares its base's storage record"
    assert archive.read("archive/version") == b"3\n" and archive.read("archive/byteorder") == b"little"
    raw = path_buffer.getvalue()
    for info in archive.infolist():
        name_length, extra_length = np.frombuffer(raw[info.header_offset + 26:info.header_offset + 30], "<u2")
        assert (info.header_offset + 30 + name_length + extra_length) % 64 == 0, info.filename


def test_state_dicts_and_optimizer_state_round_trip():
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3), torch.nn.Linear(3, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    adam = torch.optim.Adam(model.parameters())
    model(torch.randn(5, 4)).sum().backward()
    optimizer.step()
    adam.step()
    checkpoint = {"model": model.state_dict(), "sgd": optimizer.state_dict(), "adam": adam.state_dict(),
                  "epoch": 3}
    buffer = io.BytesIO()
    torch.save(checkpoint, buffer)
    buffer.seek(0)
    loaded = scriptc.load(buffer)
    _assert_same(loaded, checkpoint)
    again = io.BytesIO()
    scriptc.save(loaded, again)
    again.seek(0)
    back = torch.load(again, weights_only=True)
    model.load_state_dict(back["model"])
    optimizer.load_state_dict(back["sgd"])
    _assert_same(loaded, back)


def test_files_paths_and_mmap(tmp_path):
    values = {"w": scriptc.arange(6).reshape(2, 3).float(), "k": "v"}
    for target in (str(tmp_path / "a.pt"), tmp_path / "b.pt"):
        scriptc.save(values, target)
        _assert_same(scriptc.load(target), torch.load(target))
        assert zipfile.ZipFile(target).namelist()[0] == pathlib.Path(target).stem + "/data.pkl"
    mapped = scriptc.load(tmp_path / "a.pt", mmap=True)
    np.testing.assert_array_equal(mapped["w"].numpy(), values["w"].numpy())
    mapped["w"][0, 0] = 50.0  # copy-on-write: the file is untouched
    assert scriptc.load(tmp_path / "a.pt")["w"][0, 0].item() == 0.0
    with open(tmp_path / "a.pt", "rb") as fh, pytest.raises(ValueError, match="must be a file path"):
        scriptc.load(fh, mmap=True)
    torch.save({"w": torch.ones(2)}, tmp_path / "legacy.pt", _use_new_zipfile_serialization=False)
    with pytest.raises(RuntimeError, match="mmap can only be used with files saved with"):
        scriptc.load(tmp_path / "legacy.pt", mmap=True)


def test_big_endian_records_are_swapped():
    buffer = io.BytesIO()
    scriptc.save({"w": scriptc.tensor([1.0, 2.0])}, buffer)
    with zipfile.ZipFile(buffer) as archive:
        records = {name: archive.read(name) for name in archive.namelist()}
    records["archive/byteorder"] = b"big"
    records["archive/data/0"] = np.array([1.0, 2.0], ">f4").tobytes()
    swapped = io.BytesIO()
    with zipfile.ZipFile(swapped, "w") as archive:
        for name, data in records.items():
            archive.writestr(name, data)
    swapped.seek(0)
    assert scriptc.load(swapped)["w"].tolist() == [1.0, 2.0]


def _cuda_checkpoint() -> io.BytesIO:
    """A checkpoint whose storage says 'cuda:0', as one saved from a GPU."""
    from scriptc.serialization.pickler import StorageWriter, TorchPickler
    from scriptc.serialization.zip_format import _write_aligned

    storages, pickled = StorageWriter(), io.BytesIO()
    TorchPickler(pickled, 2, storages, lambda r: ("storage", r.storage_type, r.key, "cuda:0", r.numel)).dump(
        {"w": scriptc.tensor([1.0, 2.0])})
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        _write_aligned(archive, "archive/data.pkl", pickled.getvalue())
        _write_aligned(archive, "archive/data/0", storages.records[0].data)
    buffer.seek(0)
    return buffer


@pytest.mark.skipif(scriptc.cuda.is_available(), reason="needs a machine without CUDA")
def test_map_location_accepts_gpu_checkpoints():
    with pytest.raises(RuntimeError, match="torch.cuda.is_available\\(\\) is False"):
        scriptc.load(_cuda_checkpoint())
    seen = []
    for location in ("cpu", scriptc.device("cpu"), {"cuda:0": "cpu"},
                     lambda storage, loc: seen.append(loc) or storage.cpu()):
        assert scriptc.load(_cuda_checkpoint(), map_location=location)["w"].tolist() == [1.0, 2.0]
    assert seen == ["cuda:0"]
    with pytest.raises(TypeError, match="map_location returned int"):
        scriptc.load(_cuda_checkpoint(), map_location=lambda storage, loc: 3)


MNIST_NET = '''
class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.dropout2(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output
'''  # pytorch/examples mnist/main.py, verbatim


def _mnist_net(T):
    namespace = {"torch": T, "nn": T.nn, "F": T.nn.functional}
    exec(MNIST_NET, namespace)
    return namespace["Net"]()


def test_a_model_trained_in_torch_gives_torchs_outputs_in_scriptc(tmp_path):
    torch.manual_seed(0)
    model = _mnist_net(torch)
    optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)
    rng = np.random.default_rng(0)
    for _ in range(3):
        x = torch.from_numpy(rng.standard_normal((8, 1, 28, 28)).astype(np.float32))
        target = torch.from_numpy(rng.integers(0, 10, 8))
        optimizer.zero_grad()
        torch.nn.functional.nll_loss(model(x), target).backward()
        optimizer.step()
    torch.save(model.state_dict(), tmp_path / "mnist_cnn.pt")
    ours = _mnist_net(scriptc)
    ours.load_state_dict(scriptc.load(tmp_path / "mnist_cnn.pt"))
    model.eval()
    ours.eval()
    x = rng.standard_normal((4, 1, 28, 28)).astype(np.float32)
    with torch.no_grad():
        expected = model(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(ours(scriptc.from_numpy(x)).detach().numpy(), expected, rtol=1e-4, atol=1e-4)


@pytest.mark.skipif(not hasattr(scriptc, "bfloat16"), reason="bfloat16 arrives with the linalg work")
@pytest.mark.parametrize("zip_format", [True, False], ids=["zip", "legacy"])
def test_bfloat16_both_ways(zip_format):
    values = torch.tensor([1.5, -2.25, 3.0e10, 1e-3, float("inf")]).to(torch.bfloat16)
    buffer = io.BytesIO()
    torch.save({"b": values, "tail": values[2:]}, buffer, _use_new_zipfile_serialization=zip_format)
    buffer.seek(0)
    loaded = scriptc.load(buffer)
    assert loaded["b"].dtype is scriptc.bfloat16
    assert loaded["b"].float().tolist() == values.float().tolist()
    assert loaded["tail"].float().tolist() == values[2:].float().tolist()
    again = io.BytesIO()
    scriptc.save(loaded, again, _use_new_zipfile_serialization=zip_format)
    again.seek(0)
    back = torch.load(again, weights_only=True)
    assert back["b"].dtype == torch.bfloat16 and torch.equal(back["b"], values)
    assert back["tail"].data_ptr() == back["b"].data_ptr() + 4, "the view still shares its storage"


def test_meta_tensors_round_trip_with_torch_without_storage():
    ours = {"w": scriptc.empty(64, 64, device="meta"),
            "p": scriptc.nn.Parameter(scriptc.empty(3, dtype=scriptc.float64, device="meta"))}
    buffer = io.BytesIO()
    scriptc.save(ours, buffer)
    assert len(buffer.getvalue()) < 4096  # (no storage records: a meta tensor has no data)
    buffer.seek(0)
    theirs = torch.load(buffer)
    assert {k: repr(v) for k, v in theirs.items()} == {k: repr(v) for k, v in ours.items()}
    buffer = io.BytesIO()
    torch.save(torch.nn.Linear(2, 3, device="meta").state_dict(), buffer)
    buffer.seek(0)
    loaded = scriptc.load(buffer)
    assert repr(loaded["weight"]) == "tensor(..., device='meta', size=(3, 2))" and loaded["bias"].is_meta
