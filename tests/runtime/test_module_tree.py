"""The archive's module tree (scriptc/runtime/module_tree.py; manifest field "modules", format 2): each
submodule's class name, which stored tensors are its parameters and which its buffers, and (format 3)
the methods it stores of its own; archives of format 1 load without the tree, of format 2 without the
methods."""

import dataclasses
import io
import json
import zipfile

import pytest

import scriptc as torch
from scriptc import nn
from scriptc.errors import ArchiveError
from scriptc.runtime.archive import read_archive
from scriptc.runtime.module_tree import ModuleEntry


def _saved() -> bytes:
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU(), nn.Flatten(), nn.Linear(8, 3))
    buffer = io.BytesIO()
    torch.jit.save(torch.jit.script(model), buffer)
    return buffer.getvalue()


def _with_manifest(data: bytes, edit) -> io.BytesIO:
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zf:
        for info in source.infolist():
            content = source.read(info)
            if info.filename == "manifest.json":
                content = json.dumps(edit(json.loads(content))).encode()
            zf.writestr(info, content)
    out.seek(0)
    return out


def test_the_tree_lists_each_module_with_its_parameters_and_buffers_in_order():
    archive = read_archive(io.BytesIO(_saved()))
    forward = ("forward",)
    assert [dataclasses.replace(entry, signatures={}) for entry in archive.modules] == [
        ModuleEntry("", "Sequential", (), ()),
        ModuleEntry("0", "Conv2d", ("weight", "bias"), (), forward),
        ModuleEntry("1", "BatchNorm2d", ("weight", "bias"), ("running_mean", "running_var", "num_batches_tracked"),
                    forward),
        ModuleEntry("2", "ReLU", (), (), forward),
        ModuleEntry("3", "Flatten", (), (), forward),
        ModuleEntry("4", "Linear", ("weight", "bias"), (), forward),
    ]
    assert str(archive.module_methods("4")[0]["forward"].inputs[0].type) == "Module"
    assert archive.module_signatures("4")["forward"]["inputs"] == [{"name": "input", "type": "Tensor"}]


def test_an_archive_of_format_1_without_the_tree_still_loads():
    def old(manifest):
        del manifest["modules"]
        return {**manifest, "format_version": 1}

    archive = read_archive(_with_manifest(_saved(), old))
    assert archive.modules is None
    assert "1.running_mean" in archive.weights


def _entry(index, **change):
    def edit(manifest):
        manifest["modules"][index] = {**manifest["modules"][index], **change}
        return manifest
    return edit


@pytest.mark.parametrize("edit, message", [
    (lambda m: {**m, "modules": {}}, "non-empty list"),
    (_entry(0, path="0"), "root module"),
    (_entry(2, path="9.x"), "before its parent"),
    (_entry(1, parameters=["weight", "nope"]), "'0.nope' is not a tensor"),
    (_entry(2, buffers=["running_mean", "running_mean"]), "listed twice"),
    (_entry(1, parameters="weight"), "list of attribute names"),
    (_entry(1, original_name=3), "original_name"),
    (_entry(1, extra=1), "needs exactly"),
    (_entry(1, methods=["forward", "forward"]), "distinct names"),
    (_entry(1, methods=["forward", "backward"]), "modules/0/backward.ir is missing"),
    (_entry(0, methods=["forward"], functions=[]), "root module's methods"),
    (_entry(1, signatures={"backward": {}}), "signatures must map some of its methods"),
])
def test_a_bad_tree_is_an_archive_error(edit, message):
    with pytest.raises(ArchiveError, match=message):
        read_archive(_with_manifest(_saved(), edit))


def test_an_archive_of_format_2_without_submodule_methods_loads_and_says_so_when_one_is_called():
    def old(manifest):
        for entry in manifest["modules"]:
            entry.pop("methods", None), entry.pop("functions", None), entry.pop("signatures", None)
        return {**manifest, "format_version": 2}

    loaded = torch.jit.load(_with_manifest(_saved(), old))
    assert read_archive(_with_manifest(_saved(), old)).module_methods("4") == ({}, {})
    with pytest.raises(RuntimeError, match="the archive stores no methods of submodule '4'"):
        getattr(loaded, "4")(torch.randn(2, 8))
    assert loaded(torch.randn(2, 1, 4, 4)).shape == (2, 3)


def test_a_submodule_graph_that_reads_a_missing_attribute_is_an_archive_error():
    data = _saved()
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zf:
        for info in source.infolist():
            content = source.read(info)
            if info.filename == "modules/4/forward.ir":
                content = content.replace(b'name="weight"', b'name="nothing"')
            zf.writestr(info, content)
    out.seek(0)
    archive = read_archive(out)  # (a submodule's methods are read when first called)
    with pytest.raises(ArchiveError, match="nothing"):
        archive.module_methods("4")
