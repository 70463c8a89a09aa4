"""A SIGTERM or SIGHUP to a real-model bench stops its llama server.

The server runs in its own session (so Ctrl-C reaches the bench first, which then stops it);
it used to be stopped only in a `finally`, so a `timeout`, a `kill` or a cancelled CI job left
it running with parent PID 1. Here a stand-in server (a small HTTP server that also starts a
child of its own, as a process group may hold more than one process) is started the way
bench/real_model.py starts llama-cpp-python's, by `real_model.serving()`, in a script that
then waits as if the harness were running; the script gets the signal and the whole server
group must be gone. No model, no llama-cpp-python.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

FAKE_SERVER = """
import json, os, subprocess, sys
from http.server import BaseHTTPRequestHandler, HTTPServer

port = int(sys.argv[sys.argv.index("--port") + 1])
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
with open(os.environ["FAKE_SERVER_CHILD_PID"], "w") as f:
    f.write(str(child.pid))

class Handler(BaseHTTPRequestHandler):
    def _reply(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self._reply({"data": [{"id": "smollm2"}]})

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self._reply({"choices": [{"message": {"content": "hi"}}]})

    def log_message(self, *args):
        pass

HTTPServer(("127.0.0.1", port), Handler).serve_forever()
"""

DRIVER = """
import importlib.util, sys, time
from pathlib import Path

spec = importlib.util.spec_from_file_location("bench_real_model", sys.argv[1])
rm = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rm)
rm.LAUNCHER = Path(sys.argv[2])
rm.OUT = Path(sys.argv[3])
with rm.serving(Path(sys.executable), Path("no-model.gguf"), rm.free_port()) as server:
    print("READY", server.pid, flush=True)
    time.sleep(120)  # the harness would be running here
print("the sleep ended: no signal came", flush=True)
"""


def gone(pid: int) -> bool:
    """No such process, or only its zombie (an orphan's zombie waits for PID 1 to reap it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state == "Z"


def wait_gone(pid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if gone(pid):
            return True
        time.sleep(0.1)
    return gone(pid)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_signal_to_the_bench_stops_the_server_group(tmp_path: Path, sig: signal.Signals) -> None:
    launcher = tmp_path / "fake_server.py"
    launcher.write_text(FAKE_SERVER)
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    child_pid_file = tmp_path / "child.pid"
    env = {**os.environ, "FAKE_SERVER_CHILD_PID": str(child_pid_file), "REAL_MODEL_THREADS": "1"}
    script = subprocess.Popen(
        [sys.executable, str(driver), str(ROOT / "bench" / "real_model.py"), str(launcher)]
        + [str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    server_pid = child_pid = None
    try:
        assert script.stdout is not None
        for line in script.stdout:
            if line.startswith("READY"):
                server_pid = int(line.split()[1])
                break
        assert server_pid is not None, "the script never reported a running server"
        child_pid = int(child_pid_file.read_text())
        assert not gone(server_pid) and not gone(child_pid)

        script.send_signal(sig)
        rest = script.stdout.read()
        code = script.wait(timeout=30)
        assert wait_gone(server_pid, 10), "the server outlived the bench"
        assert wait_gone(child_pid, 10), "a process of the server's group outlived the bench"
        assert code == 128 + sig, rest  # the bench's own exit, after its cleanup
        assert f"{sig.name}: stopping" in rest
        assert "no signal came" not in rest
    finally:
        script.kill()
        script.wait()
        for pid in (server_pid, child_pid):
            if pid is not None and not gone(pid):
                os.kill(pid, signal.SIGKILL)  # a failed run leaves no orphan behind
