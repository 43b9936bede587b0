"""A `scriptc serve` process for the tests: started on a free loopback port, stopped with SIGTERM."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
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
        self.proc = subprocess.Popen([sys.executable, "-m", "scriptc", "serve", *map(str, archives), "--port",
                                      str(self.port), *extra], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                urllib.request.urlopen(f"http://{self.url}/v2/health/ready", timeout=1)
                return
            except (urllib.error.URLError, ConnectionError, OSError):
                if self.proc.poll() is not None:
                    raise RuntimeError(self.proc.stdout.read().decode()) from None
                time.sleep(0.1)
        raise RuntimeError("server did not start")

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        self.output = self.proc.communicate(timeout=60)[0].decode()
        return self.proc.returncode


def post(url, body: bytes, headers=None):
    request = urllib.request.Request(url, data=body, headers=headers or {}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


