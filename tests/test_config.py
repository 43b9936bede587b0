"""The script grammar's LALR tables live in SCRIPTC_CACHE_DIR beside the kernels, under the same switch.
(The IR's text is read by a hand-written parser: no tables.)"""

import importlib

import pytest

import scriptc as torch

GRAMMARS = {"script-grammar": importlib.import_module("scriptc.jit.frontend.parser")}


def double(x):
    return x * 2


def forget_parsers():
    for module in GRAMMARS.values():
        module._parser.cache_clear()


def build_the_parser():
    forget_parsers()
    assert torch.jit.script(double)(torch.ones(2)).tolist() == [2.0, 2.0]


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("SCRIPTC_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("SCRIPTC_CACHE", raising=False)
    yield tmp_path
    forget_parsers()


def test_parser_tables_are_written_once_and_read_back(cache_dir):
    build_the_parser()
    tables = {name: cache_dir / f"{name}.lark-tables" for name in GRAMMARS}
    assert all(path.stat().st_size > 0 for path in tables.values())
    written = {name: path.stat().st_mtime_ns for name, path in tables.items()}
    build_the_parser()
    assert {name: path.stat().st_mtime_ns for name, path in tables.items()} == written


def test_corrupt_parser_tables_are_rebuilt(cache_dir):
    for name in GRAMMARS:
        (cache_dir / f"{name}.lark-tables").write_bytes(b"not a table")
    build_the_parser()
    assert all((cache_dir / f"{name}.lark-tables").read_bytes() != b"not a table" for name in GRAMMARS)


def test_cache_switched_off_writes_no_tables(cache_dir, monkeypatch):
    monkeypatch.setenv("SCRIPTC_CACHE", "0")
    build_the_parser()
    assert list(cache_dir.iterdir()) == []


def test_unwritable_cache_dir_still_parses(cache_dir, monkeypatch):
    blocker = cache_dir / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("SCRIPTC_CACHE_DIR", str(blocker / "cache"))
    build_the_parser()
