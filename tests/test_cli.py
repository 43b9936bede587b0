"""The command line: version, export/inspect/run/bench on a real model file, errors without tracebacks."""

import subprocess
import sys
import textwrap

import numpy as np

import scriptc


def cli(*args, check=True):
    return subprocess.run([sys.executable, "-m", "scriptc", *args], capture_output=True, text=True, check=check)


def test_version():
    assert cli("--version").stdout.strip() == f"scriptc {scriptc.__version__}"


def test_export_inspect_run_bench(tmp_path):
    source = tmp_path / "model.py"
    source.write_text(textwrap.dedent("""
        import scriptc as torch

        def make():
            torch.manual_seed(0)
            return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    """))
    example = tmp_path / "x.npy"
    np.save(example, np.ones((3, 4), np.float32))
    archive = tmp_path / "model.sc"
    assert "wrote" in cli("export", f"{source}:make", "-o", str(archive), "--trace", str(example)).stdout
    info = cli("inspect", str(archive), "--passes").stdout
    assert "fusion groups" in info and "0.weight" in info and "pass" in info
    out = tmp_path / "y.npy"
    cli("run", str(archive), "--input", str(example), "-o", str(out))
    assert np.load(out).shape == (3, 2)
    bench = cli("bench", str(archive), "--batch", "4", "--iterations", "20").stdout
    assert "p50" in bench and "throughput" in bench


def test_errors_go_to_stderr_without_traceback(tmp_path):
    bad = tmp_path / "bad.sc"
    bad.write_bytes(b"nope")
    result = cli("inspect", str(bad), check=False)
    assert result.returncode == 1 and "ArchiveError" in result.stderr and "Traceback" not in result.stderr
    result = cli("--debug", "inspect", str(bad), check=False)
    assert "Traceback" in result.stderr


class _Scripted(scriptc.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = scriptc.nn.Linear(4, 3)

    def forward(self, x):
        return scriptc.softmax(self.fc(x), dim=-1)


def test_inspect_and_bench_a_scripted_archive(tmp_path):
    plain, specialized = tmp_path / "plain.sc", tmp_path / "specialized.sc"
    scriptc.jit.script(_Scripted().eval()).save(str(plain))
    scriptc.jit.script(_Scripted().eval(), example_inputs=[(scriptc.randn(2, 4),)]).save(str(specialized))
    info = cli("inspect", str(specialized)).stdout
    assert "forward: " in info and "forward for (x: float32 [?, 4])" in info and "1 fusion groups" in info
    assert "p50" in cli("bench", str(specialized), "--batch", "3", "--iterations", "5").stdout
    result = cli("bench", str(plain), check=False)  # no shapes to make inputs from: said, not a traceback
    assert result.returncode == 1 and "example_inputs" in result.stderr and "Traceback" not in result.stderr
