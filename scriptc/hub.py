"""torch.hub: the hub cache directory, downloading files into it, and loading checkpoints by URL
(from the cache when the file is already there, so a machine without network uses what it has).

Entry points published in a repository's hubconf.py load with `load(dir, name, source="local")`;
from GitHub (source="github") the repository is downloaded as a zip archive first, which fails as
torch's does without network (urllib.error.URLError).
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import shutil
import sys
import tempfile
import uuid
import warnings
import zipfile
from typing import Any
from urllib.parse import urlparse
from urllib.request import Request, urlopen

__all__ = ["get_dir", "set_dir", "download_url_to_file", "load_state_dict_from_url", "load", "list", "help", "tqdm"]

ENV_TORCH_HOME = "TORCH_HOME"
ENV_XDG_CACHE_HOME = "XDG_CACHE_HOME"
DEFAULT_CACHE_DIR = "~/.cache"
HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")
READ_DATA_CHUNK = 128 * 1024
MODULE_HUBCONF = "hubconf.py"
_hub_dir: list = [None]

try:
    from tqdm.auto import tqdm
except ImportError:
    class tqdm:  # noqa: N801 - torch.hub.tqdm's name
        """A minimal progress display (torch's stand-in when the tqdm package is not installed):
        percent done, or bytes so far when the total is unknown, on stderr."""

        def __init__(self, total=None, disable: bool = False, unit=None, *args, **kwargs):
            self.total, self.disable, self.n = total, disable, 0

        def update(self, n: int) -> None:
            if self.disable:
                return
            self.n += n
            if self.total is None:
                sys.stderr.write(f"\r{self.n:.1f} bytes")
            else:
                sys.stderr.write(f"\r{100 * self.n / float(self.total):.1f}%")
            sys.stderr.flush()

        def set_description(self, *args, **kwargs) -> None:
            """Accepted for tqdm's interface; this display has no description."""

        def write(self, s: str) -> None:
            sys.stderr.write(f"{s}\n")

        def close(self) -> None:
            self.disable = True

        def __enter__(self):
            return self

        def __exit__(self, *exc) -> None:
            if not self.disable:
                sys.stderr.write("\n")


def _get_torch_home() -> str:
    return os.path.expanduser(os.getenv(ENV_TORCH_HOME, os.path.join(os.getenv(ENV_XDG_CACHE_HOME, DEFAULT_CACHE_DIR),
                                                                      "torch")))


def get_dir() -> str:
    """The hub cache directory: what set_dir set, else $TORCH_HOME/hub (TORCH_HOME defaults to
    $XDG_CACHE_HOME/torch, i.e. ~/.cache/torch)."""
    if os.getenv("TORCH_HUB"):
        warnings.warn("TORCH_HUB is deprecated, please use env TORCH_HOME instead", stacklevel=2)
    if _hub_dir[0] is not None:
        return _hub_dir[0]
    return os.path.join(_get_torch_home(), "hub")


def set_dir(d: str | os.PathLike) -> None:
    """Use `d` as the hub cache directory from now on."""
    _hub_dir[0] = os.path.expanduser(d)


def download_url_to_file(url: str, dst: str, hash_prefix: str | None = None, progress: bool = True) -> None:
    """Download `url` to the file `dst` (through a temporary file beside it, so a broken download
    never replaces a good file). With hash_prefix, the file's SHA-256 must start with it
    (RuntimeError otherwise). Without network urllib's URLError propagates, as in torch."""
    dst = os.path.expanduser(dst)
    for _ in range(tempfile.TMP_MAX):
        partial = dst + "." + uuid.uuid4().hex + ".partial"
        try:
            f = open(partial, "x+b")  # noqa: SIM115 - closed in the finally below
        except FileExistsError:
            continue
        break
    else:
        raise FileExistsError(errno.EEXIST, "No usable temporary file name found")
    try:
        with urlopen(Request(url, headers={"User-Agent": "torch.hub"})) as response:
            lengths = response.info().get_all("Content-Length")
            size = int(lengths[0]) if lengths else None
            sha256 = hashlib.sha256() if hash_prefix is not None else None
            with tqdm(total=size, disable=not progress, unit="B", unit_scale=True, unit_divisor=1024) as bar:
                while chunk := response.read(READ_DATA_CHUNK):
                    f.write(chunk)
                    if sha256 is not None:
                        sha256.update(chunk)
                    bar.update(len(chunk))
            f.close()
            if sha256 is not None:
                digest = sha256.hexdigest()
                if digest[:len(hash_prefix)] != hash_prefix:
                    raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got "{digest}")')
        shutil.move(f.name, dst)
    finally:
        f.close()
        if os.path.exists(f.name):
            os.remove(f.name)


def load_state_dict_from_url(url: str, model_dir: str | None = None, map_location=None, progress: bool = True,
                             check_hash: bool = False, file_name: str | None = None,
                             weights_only: bool = False) -> dict[str, Any]:
    """The object saved at `url` (a state_dict, usually), through the cache: the file is
    `model_dir` (default get_dir()/checkpoints) / `file_name` (default the URL's file name), and
    is downloaded only when missing. check_hash checks the download against the hex digits after
    the last "-" of the file name (resnet18-f37072fd.pth), as torch does. A zip holding one file
    (the pre-1.6 format) is extracted first."""
    from scriptc.serialization import load as load_file

    if os.getenv("TORCH_MODEL_ZOO"):
        warnings.warn("TORCH_MODEL_ZOO is deprecated, please use env TORCH_HOME instead", stacklevel=2)
    model_dir = os.path.join(get_dir(), "checkpoints") if model_dir is None else model_dir
    os.makedirs(model_dir, exist_ok=True)
    filename = file_name if file_name is not None else os.path.basename(urlparse(url).path)
    cached_file = os.path.join(model_dir, filename)
    if not os.path.exists(cached_file):
        sys.stdout.write(f'Downloading: "{url}" to {cached_file}\n')
        match = HASH_REGEX.search(filename) if check_hash else None
        download_url_to_file(url, cached_file, match.group(1) if match else None, progress=progress)
    if zipfile.is_zipfile(cached_file):
        with zipfile.ZipFile(cached_file) as archive:
            members = archive.infolist()
            if len(members) == 1 and not members[0].is_dir():
                warnings.warn("Falling back to the old format < 1.6. This support will be deprecated in favor of "
                              "default zipfile format introduced in 1.6. Please redo torch.save() to save it in the "
                              "new zipfile format.", FutureWarning, stacklevel=2)
                cached_file = _extract_one(archive, members[0], model_dir)
    return load_file(cached_file, map_location=map_location, weights_only=weights_only)


def _extract_one(archive: zipfile.ZipFile, member: zipfile.ZipInfo, directory: str) -> str:
    """Extract one member, refusing a path that leaves `directory` (zip slip)."""
    target = os.path.realpath(os.path.join(directory, member.filename))
    if os.path.commonpath([os.path.realpath(directory), target]) != os.path.realpath(directory):
        raise ValueError(f"Unsafe path in zip archive: {member.filename}")
    archive.extract(member, directory)
    return target


def _parse_repo(github: str) -> tuple[str, str, str]:
    """(owner, name, ref) of "owner/name[:ref]"; without a ref, "main" (or "master" when GitHub has no
    main branch, or without network whichever of the two the cache holds)."""
    from urllib.error import HTTPError, URLError

    repo, _, ref = github.partition(":")
    owner, _, name = repo.partition("/")
    if ref:
        return owner, name, ref
    try:
        with urlopen(f"https://github.com/{owner}/{name}/tree/main/"):
            return owner, name, "main"
    except HTTPError as exc:
        if exc.code == 404:
            return owner, name, "master"
        raise
    except URLError as exc:
        for candidate in ("main", "master"):
            if os.path.exists(os.path.join(get_dir(), f"{owner}_{name}_{candidate}")):
                return owner, name, candidate
        raise RuntimeError("It looks like there is no internet connection and the repo could not be found in the "
                           f"cache ({get_dir()})") from exc


def _repo_dir(github: str, force_reload: bool, verbose: bool) -> str:
    """The cached checkout of a GitHub repository, downloaded (as GitHub's zip of `ref`) when missing."""
    owner, name, ref = _parse_repo(github)
    hub_dir = get_dir()
    os.makedirs(hub_dir, exist_ok=True)
    repo_dir = os.path.join(hub_dir, f"{owner}_{name}_{ref.replace('/', '_')}")
    if os.path.exists(repo_dir) and not force_reload:
        if verbose:
            sys.stdout.write(f"Using cache found in {repo_dir}\n")
        return repo_dir
    archive_path = os.path.join(hub_dir, ref.replace("/", "_") + ".zip")
    url = f"https://github.com/{owner}/{name}/zipball/{ref}"
    sys.stdout.write(f'Downloading: "{url}" to {archive_path}\n')
    download_url_to_file(url, archive_path, progress=False)
    with zipfile.ZipFile(archive_path) as archive:
        top = archive.infolist()[0].filename.split("/")[0]
        for member in archive.infolist():
            _extract_one(archive, member, hub_dir)
    os.remove(archive_path)
    shutil.rmtree(repo_dir, ignore_errors=True)
    shutil.move(os.path.join(hub_dir, top), repo_dir)
    return repo_dir


def _hubconf(repo_dir: str):
    """The repository's hubconf.py as a module, after checking its `dependencies` are importable."""
    import importlib.util

    path = os.path.join(repo_dir, MODULE_HUBCONF)
    sys.path.insert(0, repo_dir)
    try:
        spec = importlib.util.spec_from_file_location("hubconf", path)
        if spec is None or not os.path.exists(path):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(repo_dir)
    missing = [package for package in getattr(module, "dependencies", []) if importlib.util.find_spec(package) is None]
    if missing:
        raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")
    return module


def _entry(module, model):
    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name")
    function = getattr(module, model, None)
    if function is None or not callable(function):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return function


def _source_dir(repo_or_dir: str, source: str, force_reload: bool, verbose: bool) -> str:
    source = source.lower()
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    return _repo_dir(repo_or_dir, force_reload, verbose) if source == "github" else repo_or_dir


def list(github: str, force_reload: bool = False, skip_validation: bool = False, trust_repo=None,  # noqa: A001
         verbose: bool = True, source: str = "github") -> list:
    """The entry points (public callables) a repository's hubconf.py publishes."""
    module = _hubconf(_source_dir(github, source, force_reload, verbose))
    return [name for name in dir(module) if callable(getattr(module, name)) and not name.startswith("_")]


def help(github: str, model: str, force_reload: bool = False, skip_validation: bool = False,  # noqa: A001
         trust_repo=None, source: str = "github") -> str:
    """The docstring of entry point `model` of a repository's hubconf.py."""
    return _entry(_hubconf(_source_dir(github, source, force_reload, True)), model).__doc__


def load(repo_or_dir: str, model: str, *args, source: str = "github", trust_repo=None, force_reload: bool = False,
         verbose: bool = True, skip_validation: bool = False, **kwargs):
    """Call entry point `model` of the hubconf.py in a GitHub repository ("owner/name[:ref]",
    downloaded into get_dir() once and then used from there) or a local directory
    (source="local"), with `args` and `kwargs`; returns what it returns (usually a model)."""
    return _entry(_hubconf(_source_dir(repo_or_dir, source, force_reload, verbose)), model)(*args, **kwargs)
