"""Serving: requests/s and p50/p99 latency of the 784-512-512-10 MLP archive at 1, 8 and 64 concurrent
clients (batch 1 requests, one keep-alive connection each, driven by one asyncio client), with
dynamic batching on (--max-batch 32) and off (--max-batch 1); tensors as JSON numbers, and as the
binary tensor data extension that tritonclient.http sends by default.

Both servers run side by side and are driven in turn, ROUNDS times per row; each row shows the run
with the median throughput. Throughput on this shared 2-core machine drifts by tens of percent over
minutes, so a ratio of two runs taken a minute apart says more about the drift than the server.

Target (issue: serving): at 64 clients, batching gives >= 3x the throughput of unbatched serving, and
p99 latency stays under 50 ms.

    python benchmarks/serve.py --baseline DIR   # this tree's server against the one in DIR (a checkout
                                                # of an earlier commit), at 64 clients, runs interleaved
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import numpy as np

import scriptc

DURATION = float(os.environ.get("SCRIPTC_BENCH_SECONDS", "2"))
ROUNDS = int(os.environ.get("SCRIPTC_BENCH_ROUNDS", "3"))


def start(path, *extra, tree: str | None = None):
    """A `scriptc serve` process (of the scriptc in source tree `tree`, when given) and its port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, PYTHONPATH=tree) if tree else None
    proc = subprocess.Popen([sys.executable, "-m", "scriptc", "serve", path, "--port", str(port), *extra],
                            env=env, cwd=tree, stdout=subprocess.DEVNULL)
    for _ in range(600):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/health/ready", timeout=1)
            return proc, port
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("server did not start")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _client(port: int, request: bytes, stop: float, latencies: list, errors: list) -> None:
    """One client on one keep-alive connection (as load generators and tritonclient's pool use):
    request, read the whole answer, repeat. asyncio, so 64 clients cost the machine one thread
    instead of 64 threads fighting over the GIL (their waits would count as server latency)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        while time.time() < stop:
            started = time.perf_counter()
            writer.write(request)
            status = await reader.readline()
            length = 0
            while (line := await reader.readline()) not in (b"\r\n", b""):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            await reader.readexactly(length)
            if status.split()[1:2] != [b"200"]:
                errors.append(status)
            else:
                latencies.append(time.perf_counter() - started)
    finally:
        writer.close()


def infer_request(binary: bool) -> bytes:
    """One batch-1 request: JSON numbers, or (tritonclient.http's default) the binary tensor data
    extension for the input and the outputs."""
    x = np.random.rand(784).astype(np.float32)
    if not binary:
        body = json.dumps({"inputs": [{"name": "input", "shape": [1, 784], "datatype": "FP32",
                                       "data": x.tolist()}]}).encode()
        extra = b""
    else:
        head = json.dumps({"inputs": [{"name": "input", "shape": [1, 784], "datatype": "FP32",
                                       "parameters": {"binary_data_size": x.nbytes}}],
                           "parameters": {"binary_data_output": True}}).encode()
        body = head + x.tobytes()
        extra = b"Inference-Header-Content-Length: " + str(len(head)).encode() + b"\r\n"
    return (b"POST /v2/models/mlp/infer HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" + extra +
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


def load_test(port: int, clients: int, binary: bool = False):
    request = infer_request(binary)
    latencies, errors = [], []
    stop = time.time() + DURATION

    async def run_all():
        results = await asyncio.gather(*[_client(port, request, stop, latencies, errors) for _ in range(clients)],
                                       return_exceptions=True)
        errors.extend(r for r in results if isinstance(r, Exception))
    asyncio.run(run_all())
    lat = np.array(latencies) * 1e3
    return len(latencies) / DURATION, np.percentile(lat, 50), np.percentile(lat, 99), len(errors)


def measure(proc, port: int, clients: int, binary: bool) -> tuple:
    """req/s, p50 and p99 ms, errors, and server and client CPU ms per request, of one run."""
    server_cpu, client_cpu = cpu_seconds(proc.pid), time.process_time()
    rps, p50, p99, errors = load_test(port, clients, binary)
    served = max(rps * DURATION, 1)
    return (rps, p50, p99, errors, (cpu_seconds(proc.pid) - server_cpu) / served * 1e3,
            (time.process_time() - client_cpu) / served * 1e3)


def mlp_archive() -> str:
    path = os.path.join(tempfile.mkdtemp(prefix="scriptc-serve-bench-"), "mlp.sc")
    mlp = scriptc.nn.Sequential(scriptc.nn.Linear(784, 512), scriptc.nn.ReLU(), scriptc.nn.Linear(512, 512),
                                scriptc.nn.ReLU(), scriptc.nn.Linear(512, 10)).eval()
    scriptc.jit.trace(mlp, scriptc.randn(2, 784)).save(path)
    return path


def compare(baseline: str, clients: int = 64) -> None:
    """This tree's server against the one in source tree `baseline` (a checkout of an earlier
    commit), both batching, side by side and driven in turn: a ratio that the machine's drift over
    minutes does not decide. Each row: the median-throughput run of ROUNDS, with the spread of the
    runs' req/s (min-max) as the noise to read the ratio against."""
    path = mlp_archive()
    batching = ["--max-batch", "32", "--batch-delay-ms", "2"]
    servers = {"baseline": start(path, *batching, tree=os.path.abspath(baseline)), "this tree": start(path, *batching)}
    print(f"Serving the MLP archive at {clients} clients, batching on: this tree against {baseline} "
          f"(each row: the median-throughput run of {ROUNDS}, {DURATION:.0f} s each, the two taken in turn)")
    print(f"{'data':<8}{'server':<11}{'req/s':>8}{'(min-max)':>15}{'p50 ms':>9}{'p99 ms':>9}{'errors':>8}"
          f"{'server CPU':>12}")
    try:
        for data in ("JSON", "binary"):
            runs = {label: [] for label in servers}
            for _ in range(ROUNDS):
                for label, (proc, port) in servers.items():
                    runs[label].append(measure(proc, port, clients, data == "binary"))
            medians = {}
            for label in servers:
                ordered = sorted(runs[label])
                rps, p50, p99, errors, server_ms, _ = medians[label] = ordered[len(ordered) // 2]
                spread = f"{ordered[0][0]:.0f}-{ordered[-1][0]:.0f}"
                print(f"{data:<8}{label:<11}{rps:>8.0f}{spread:>15}{p50:>9.2f}{p99:>9.2f}{errors:>8}{server_ms:>12.2f}")
            ratio = medians["this tree"][0] / medians["baseline"][0]
            print(f"{data:<8}{'ratio':<11}{ratio:>8.2f}x req/s, p99 {medians['this tree'][2] / medians['baseline'][2]:.2f}x")
    finally:
        for proc, _ in servers.values():
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--baseline":
        compare(sys.argv[2])
        return
    path = mlp_archive()
    print(f"Serving the MLP archive (batch-1 requests; each row: the median-throughput run of {ROUNDS}, "
          f"{DURATION:.0f} s each, batching off and on taken in turn)")
    print(f"{'data':<8}{'batching':<10}{'clients':>8}{'req/s':>10}{'p50 ms':>9}{'p99 ms':>9}{'errors':>8}"
          f"{'server CPU':>12}{'client CPU':>12}   (CPU: ms per request, both processes share this machine)")
    servers = {label: start(path, *extra) for label, extra in
               (("off", ["--max-batch", "1"]), ("on", ["--max-batch", "32", "--batch-delay-ms", "2"]))}
    results = {}
    try:
        for data in ("JSON", "binary"):
            for clients in (1, 8, 64):
                runs = {label: [] for label in servers}
                for _ in range(ROUNDS):
                    for label, (proc, port) in servers.items():
                        runs[label].append(measure(proc, port, clients, data == "binary"))
                for label in servers:
                    rps, p50, p99, errors, server_ms, client_ms = sorted(runs[label])[len(runs[label]) // 2]
                    results[(data, label, clients)] = (rps, p99)
                    print(f"{data:<8}{label:<10}{clients:>8}{rps:>10.0f}{p50:>9.2f}{p99:>9.2f}{errors:>8}"
                          f"{server_ms:>12.2f}{client_ms:>12.2f}")
    finally:
        for proc, _ in servers.values():
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
    print()
    for data in ("JSON", "binary"):
        speedup = results[(data, "on", 64)][0] / results[(data, "off", 64)][0]
        print(f"{data:<7} at 64 clients: batching gives {speedup:.2f}x the throughput (target >= 3x); "
              f"p99 {results[(data, 'on', 64)][1]:.1f} ms (target < 50 ms)")


if __name__ == "__main__":
    main()
