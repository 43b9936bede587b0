"""A `scriptc serve` process for the tests: started on a free loopback port, stopped with SIGTERM."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Running:
    """`scriptc serve ARCHIVE... EXTRA...`, once it answers /v2/health/ready; `output` holds what it
    printed (stdout and stderr) once stopped."""

    def __init__(self, archives, *extra):
        archives = archives if isinstance(archives, (list, tuple)) else [archives]
        self.port = free_port()
        self.url = f"127.0.0.1:{self.port}"
        self.output = ""
        # A file, not a pipe: a server whose access log filled a pipe no one reads would block.
        self._log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([sys.executable, "-m", "scriptc", "serve", *map(str, archives), "--port",
                                      str(self.port), *extra], stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                urllib.request.urlopen(f"http://{self.url}/v2/health/ready", timeout=1)
                return
            except (urllib.error.URLError, ConnectionError, OSError):
                if self.proc.poll() is not None:
                    raise RuntimeError(self._read_log()) from None
                time.sleep(0.1)
        self.proc.kill()
        raise RuntimeError(f"server did not start: {self._read_log()}")

    def stop(self) -> int:
        """SIGTERM, and its exit status once it has drained (killed, and -9, if it has not in 60 s)."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self.output = self._read_log()
        return self.proc.returncode

    def _read_log(self) -> str:
        self._log.seek(0)
        return self._log.read().decode(errors="replace")


def run_threads(target, arguments, timeout: float = 120) -> None:
    """target(*args) on a thread for each args in `arguments`, all at once; AssertionError if one has
    not returned within `timeout` seconds (every request in the tests has a timeout of its own)."""
    threads = [threading.Thread(target=target, args=args, daemon=True) for args in arguments]
    for t in threads:
        t.start()
    deadline = time.time() + timeout
    for t in threads:
        t.join(max(0.0, deadline - time.time()))
    assert not any(t.is_alive() for t in threads), "a client thread still runs"


def post(url, body: bytes, headers=None):
    request = urllib.request.Request(url, data=body, headers=headers or {}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


