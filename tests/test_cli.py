"""The command line: version, export/inspect/run/bench on a real model file, errors without tracebacks."""

import os
import subprocess
import sys
import textwrap

import numpy as np

import scriptc


def cli(*args, check=True):
    return subprocess.run([sys.executable, "-m", "scriptc", *args], capture_output=True, text=True, check=check,
                          timeout=300)


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


def _mlp_archive(tmp_path):
    scriptc.manual_seed(0)
    archive = tmp_path / "mlp.sc"
    model = scriptc.nn.Sequential(scriptc.nn.Linear(4, 8), scriptc.nn.ReLU(), scriptc.nn.Linear(8, 2)).eval()
    scriptc.jit.trace(model, scriptc.randn(3, 4)).save(str(archive))
    return archive


def test_run_checks_its_inputs_against_the_signature_and_casts_on_request(tmp_path):
    archive = _mlp_archive(tmp_path)
    wide = tmp_path / "x64.npy"
    np.save(wide, np.ones((3, 4)))
    result = cli("run", str(archive), "--input", str(wide), check=False)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "input 'input' expects Tensor(float32, [B, 4]), got float64 array of shape [3, 4]" in result.stderr
    assert "--cast" in result.stderr
    out = tmp_path / "y.npy"
    cli("run", str(archive), "--input", str(wide), "--cast", "-o", str(out))
    np.save(tmp_path / "x32.npy", np.ones((3, 4), np.float32))
    cli("run", str(archive), "--input", str(tmp_path / "x32.npy"), "-o", str(tmp_path / "y32.npy"))
    np.testing.assert_array_equal(np.load(out), np.load(tmp_path / "y32.npy"))
    wrong = tmp_path / "wrong.npy"
    np.save(wrong, np.ones((3, 5), np.float32))
    result = cli("run", str(archive), "--input", str(wrong), "--cast", check=False)
    assert result.returncode == 1 and "dim 1 is 5, not 4" in result.stderr and "--cast converts" not in result.stderr


def test_bench_refuses_a_batch_below_one(tmp_path):
    for flag in ("--batch", "--iterations", "--threads"):
        result = cli("bench", str(tmp_path / "any.sc"), flag, "0", check=False)
        assert result.returncode == 2 and "must be at least 1, got 0" in result.stderr


def test_a_closed_pipe_ends_quietly(tmp_path):
    archive = _mlp_archive(tmp_path)
    x = tmp_path / "x.npy"
    np.save(x, np.ones((4, 4), np.float32))
    read, write = os.pipe()
    os.close(read)  # the reader has gone before anything is printed (`| head -0`)
    proc = subprocess.Popen([sys.executable, "-m", "scriptc", "run", str(archive), "--input", str(x)],
                            stdout=write, stderr=subprocess.PIPE)
    os.close(write)
    stderr = proc.communicate(timeout=60)[1].decode()
    assert proc.returncode == 141 and stderr == ""
