"""torch.hub without network: the cache directory, checkpoints loaded from the cache or a file:// URL,
hash checks, download errors as torch raises them, and hubconf entry points from a local directory
or a cached GitHub checkout."""

import os
import urllib.error
import zipfile

import pytest

import scriptc
from scriptc import hub
from scriptc.testing import assert_close


@pytest.fixture
def hub_home(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(hub, "_hub_dir", [None])
    return tmp_path


def test_get_dir_follows_torch_home_and_set_dir(hub_home, monkeypatch):
    assert hub.get_dir() == str(hub_home / "home" / "hub")
    monkeypatch.delenv("TORCH_HOME")
    monkeypatch.setenv("XDG_CACHE_HOME", str(hub_home / "xdg"))
    assert hub.get_dir() == str(hub_home / "xdg" / "torch" / "hub")
    hub.set_dir("~/elsewhere")
    assert hub.get_dir() == os.path.expanduser("~/elsewhere")
    torch = pytest.importorskip("torch")
    assert os.path.basename(torch.hub.get_dir()) == "hub"


def test_load_state_dict_from_the_cache_without_network(hub_home):
    model = scriptc.nn.Linear(3, 2)
    checkpoints = os.path.join(hub.get_dir(), "checkpoints")
    os.makedirs(checkpoints)
    scriptc.save(model.state_dict(), os.path.join(checkpoints, "linear-0123abcd.pth"))
    loaded = hub.load_state_dict_from_url("https://example.invalid/models/linear-0123abcd.pth", weights_only=True)
    assert_close(loaded, model.state_dict())
    other = hub_home / "models"
    other.mkdir()
    scriptc.save({"w": scriptc.ones(2)}, str(other / "renamed.pt"))
    assert_close(hub.load_state_dict_from_url("https://example.invalid/x.pt", model_dir=str(other),
                                              file_name="renamed.pt"), {"w": scriptc.ones(2)})


def test_download_from_a_file_url_with_hash_checks(hub_home):
    source = hub_home / "weights.pt"
    scriptc.save({"b": scriptc.arange(3)}, str(source))
    import hashlib
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    good = f"weights-{digest[:8]}.pt"
    loaded = hub.load_state_dict_from_url(source.as_uri(), check_hash=True, file_name=good, progress=False)
    assert loaded["b"].tolist() == [0, 1, 2]
    with pytest.raises(RuntimeError, match='invalid hash value \\(expected "00000000"'):
        hub.load_state_dict_from_url(source.as_uri(), check_hash=True, file_name="weights-00000000.pt")
    assert not os.path.exists(os.path.join(hub.get_dir(), "checkpoints", "weights-00000000.pt"))
    assert [n for n in os.listdir(os.path.join(hub.get_dir(), "checkpoints")) if n.endswith(".partial")] == []


def test_legacy_single_file_zip_is_extracted(hub_home):
    checkpoints = hub_home / "ck"
    checkpoints.mkdir()
    scriptc.save({"v": scriptc.ones(1)}, str(hub_home / "inner.pt"))
    with zipfile.ZipFile(checkpoints / "old.zip", "w") as archive:
        archive.write(hub_home / "inner.pt", "inner.pt")
    with pytest.warns(FutureWarning, match="old format"):
        loaded = hub.load_state_dict_from_url("https://example.invalid/old.zip", model_dir=str(checkpoints))
    assert loaded["v"].tolist() == [1.0]


def test_download_errors_match_torch(hub_home):
    torch = pytest.importorskip("torch")
    unreachable = "http://127.0.0.1:9/model.pt"  # the discard port: nothing listens
    for lib in (hub, torch.hub):
        with pytest.raises(urllib.error.URLError):
            lib.download_url_to_file(unreachable, str(hub_home / "never.pt"), progress=False)
    assert [name for name in os.listdir(hub_home) if name.startswith("never.pt")] == []  # no partial file left


def test_hubconf_entry_points_from_a_local_directory(hub_home):
    repo = hub_home / "repo"
    repo.mkdir()
    (repo / "helper_layers.py").write_text("import scriptc\n\ndef layer(n):\n    return scriptc.nn.Linear(n, n)\n")
    (repo / "hubconf.py").write_text(
        "dependencies = ['numpy']\nfrom helper_layers import layer\n\n"
        "def tiny(n=2, bias=True):\n    '''A tiny model.'''\n    return layer(n)\n\n_private = 1\n")
    model = hub.load(str(repo), "tiny", 3, source="local")
    assert isinstance(model, scriptc.nn.Linear) and model.in_features == 3
    assert hub.list(str(repo), source="local") == ["layer", "tiny"]
    assert hub.help(str(repo), "tiny", source="local") == "A tiny model."
    with pytest.raises(RuntimeError, match="Cannot find callable missing in hubconf"):
        hub.load(str(repo), "missing", source="local")
    with pytest.raises(ValueError, match='Unknown source: "svn"'):
        hub.load(str(repo), "tiny", source="svn")
    (repo / "hubconf.py").write_text("dependencies = ['no_such_package_here']\n")
    with pytest.raises(RuntimeError, match="Missing dependencies: no_such_package_here"):
        hub.load(str(repo), "tiny", source="local")


def test_github_repositories_load_from_the_cache(hub_home):
    cached = os.path.join(hub.get_dir(), "someone_models_main")
    os.makedirs(cached)
    with open(os.path.join(cached, "hubconf.py"), "w") as f:
        f.write("import scriptc\n\ndef mlp():\n    return scriptc.nn.Sequential(scriptc.nn.Linear(2, 2))\n")
    assert isinstance(hub.load("someone/models:main", "mlp", verbose=False), scriptc.nn.Sequential)


def test_fallback_progress_display(capsys):
    with hub.tqdm(total=200, unit="B") as bar:
        bar.update(50)
        bar.update(50)
    assert capsys.readouterr().err == "\r25.0%\r50.0%\n"
