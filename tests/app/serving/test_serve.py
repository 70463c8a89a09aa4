"""`serve` as a real process on 127.0.0.1, called with the `openai` client, litellm and httpx:
answers, streaming, models, health, bad requests, the token, the spend cap, SIGTERM draining,
the writer lock, and the serve run in the log (docs/serving.md)."""

from __future__ import annotations

import json
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from app import api
from app.cli import main
from app.harness.workspace.writer_lock import WriterLock

ROOT = Path(__file__).resolve().parents[3]
TOKEN = "test-serve-token"
READY = re.compile(r"serving (\S+) at (http://\S+)/v1 .*run (serve-\d+)\)")


class Served:
    def __init__(self, proc: subprocess.Popen, name: str, url: str, run_id: str) -> None:
        self.proc, self.name, self.url, self.run_id = proc, name, url, run_id

    def client(self, token: str = TOKEN) -> openai.OpenAI:
        return openai.OpenAI(base_url=f"{self.url}/v1", api_key=token, max_retries=0)

    def stop(self) -> tuple[int, str, str]:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        out, err = self.proc.communicate(timeout=60)
        return self.proc.returncode, out, err


def init_ws(root: Path) -> Path:
    assert main(["init", str(root), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    return root


def start(ws: Path, *args: str) -> Served:
    proc = subprocess.Popen(
        [sys.executable, "main.py", "serve", "-w", str(ws), "--port", "0", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()  # blocks until the ready line (or EOF when it failed)
    found = READY.search(line)
    if found is None:
        proc.kill()
        raise AssertionError(f"serve did not start: {line!r} {proc.communicate()[1]}")
    return Served(proc, found.group(1), found.group(2), found.group(3))


def questions(ws: Path) -> list[dict]:
    lines = (ws / "questions" / "questions.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def ask(q: dict) -> dict:
    return {
        "messages": [{"role": "user", "content": q["question"]}],
        "extra_body": {"skill_trainer": {"task_type": q["task_type"]}},
    }


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, Path]]:
    ws = init_ws(tmp_path_factory.mktemp("serve") / "ws")
    server = start(ws, "--token", TOKEN, "--name", "trained")
    yield server, ws
    server.stop()


def test_an_openai_client_gets_the_agents_answer_and_the_skills_it_used(served):
    server, ws = served
    q = questions(ws)[0]
    reply = server.client().chat.completions.create(model="trained", **ask(q))
    content = reply.choices[0].message.content
    assert content is not None and "ANSWER:" in content
    assert reply.choices[0].finish_reason == "stop"
    extra = (reply.model_extra or {})["skill_trainer"]
    assert extra["run_id"] == server.run_id
    assert extra["skills_opened"] == [f"{q['task_type']}.md"]  # inline: the task type's skill
    assert extra["answer"] == content.split("ANSWER:")[-1].strip()
    assert reply.usage is not None and reply.usage.total_tokens > 0


def test_streaming_sends_the_same_answer_in_openai_chunks(served):
    server, ws = served
    q = questions(ws)[1]
    whole = server.client().chat.completions.create(model="trained", **ask(q))
    stream = server.client().chat.completions.create(
        model="trained", stream=True, stream_options={"include_usage": True}, **ask(q)
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole.choices[0].message.content
    finish = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert [c.choices[0].finish_reason for c in finish] == ["stop"]
    assert (finish[0].model_extra or {})["skill_trainer"]["run_id"] == server.run_id
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens > 0


def test_litellm_calls_the_served_agent_as_an_openai_model(served):
    from app.providers.litellm_provider import load_litellm

    server, ws = served
    q = questions(ws)[2]
    litellm = load_litellm()
    reply = litellm.completion(
        model=f"openai/{server.name}",
        api_base=f"{server.url}/v1",
        api_key=TOKEN,
        messages=[{"role": "user", "content": q["question"]}],
        num_retries=0,
    )
    assert "ANSWER:" in reply.choices[0].message.content


def test_models_and_health(served):
    server, ws = served
    types = sorted({q["task_type"] for q in questions(ws)})
    listed = [m.id for m in server.client().models.list()]
    assert listed == ["trained"] + [f"trained/{t}" for t in types]  # the plain name first
    health = httpx.get(f"{server.url}/healthz")  # open without the token
    assert health.status_code == 200 and health.json()["model"] == "trained"


def test_the_token_is_required(served):
    server, _ = served
    with pytest.raises(openai.AuthenticationError) as caught:
        server.client(token="wrong").models.list()
    assert caught.value.status_code == 401
    assert "bearer token" in caught.value.message


@pytest.mark.parametrize(
    "body, status, says",
    [
        ({"model": "trained"}, 400, "messages: Field required"),
        ({"model": "trained", "messages": []}, 400, "messages: List should have at least 1"),
        (
            {"model": "trained", "messages": [{"role": "assistant", "content": "hi"}]},
            400,
            "the last message must be the user's task",
        ),
        (
            {"model": "trained", "messages": [{"role": "user", "content": "x"}], "n": 2},
            400,
            "n: the served agent gives one answer per request",
        ),
        (
            {"model": "gpt-4o", "messages": [{"role": "user", "content": "x"}]},
            404,
            "model 'gpt-4o' is not served here",
        ),
        (
            {"model": "trained", "messages": [{"role": "user", "content": "x" * 40_000}]},
            400,
            "longer than 32000 characters",
        ),
    ],
)
def test_a_bad_request_is_one_clear_openai_error(served, body, status, says):
    server, _ = served
    reply = httpx.post(
        f"{server.url}/v1/chat/completions",
        json=body,
        headers={"Authorization": f"Bearer {TOKEN}"},
    )
    assert reply.status_code == status
    error = reply.json()["error"]
    assert says in error["message"] and "\n" not in error["message"]
    assert set(error) == {"message", "type", "param", "code"}


def test_a_body_that_is_not_json_is_a_400(served):
    server, _ = served
    reply = httpx.post(
        f"{server.url}/v1/chat/completions",
        content=b"{not json",
        headers={"Authorization": f"Bearer {TOKEN}", "content-type": "application/json"},
    )
    assert reply.status_code == 400 and "not JSON" in reply.json()["error"]["message"]


def post(server: Served, body: object, **headers: str) -> httpx.Response:
    return httpx.post(
        f"{server.url}/v1/chat/completions",
        json=body,
        headers={"Authorization": f"Bearer {TOKEN}", **headers},
        timeout=60,
    )


def test_a_plain_openai_request_gets_its_task_types_skill_and_says_which(served):
    """No task type named: the skills' descriptions route it (not the untrained default)."""
    server, ws = served
    q = next(q for q in questions(ws) if q["task_type"] == "ledger")
    raw = server.client().chat.completions.with_raw_response.create(
        model="trained", messages=[{"role": "user", "content": q["question"]}]
    )
    extra = (raw.parse().model_extra or {})["skill_trainer"]
    assert (extra["task_type"], extra["skill"], extra["routed_by"]) == (
        "ledger",
        "ledger.md",
        "description",
    )
    assert extra["skills_opened"] == ["ledger.md"]
    assert raw.headers["x-skill-trainer-skill"] == "ledger.md"
    assert raw.headers["x-skill-trainer-task-type"] == "ledger"


def test_the_model_id_names_the_task_type_exactly(served):
    server, ws = served
    q = next(q for q in questions(ws) if q["task_type"] == "ledger")
    message = [{"role": "user", "content": q["question"]}]
    reply = post(server, {"model": "trained/dates", "messages": message})
    assert reply.status_code == 200, reply.text
    assert reply.json()["skill_trainer"]["task_type"] == "dates"  # the id wins over the words
    assert reply.json()["skill_trainer"]["routed_by"] == "model"
    assert reply.headers["x-skill-trainer-skill"] == "dates.md"
    stream = post(server, {"model": "trained/dates", "messages": message, "stream": True})
    assert stream.headers["x-skill-trainer-skill"] == "dates.md"
    unknown = post(server, {"model": "trained/nope", "messages": message})
    assert unknown.status_code == 404
    assert unknown.json()["error"]["code"] == "model_not_found"
    assert "'nope' is not a task type of this workspace" in unknown.json()["error"]["message"]


@pytest.mark.parametrize(
    "task, says",
    [
        ("Hello, how are you today?", "no task type's skill description shares a word"),
        ("Is this a ledger or a dates question?", "fits dates and ledger equally"),
    ],
)
def test_a_request_no_task_type_fits_is_refused_not_answered_untrained(served, task, says):
    server, _ = served
    reply = post(server, {"model": "trained", "messages": [{"role": "user", "content": task}]})
    assert reply.status_code == 400, reply.text
    error = reply.json()["error"]
    assert error["code"] == "task_type_not_found" and says in error["message"]
    assert "'trained/<task type>'" in error["message"] and "ledger" in error["message"]


def test_an_unknown_task_type_field_is_refused(served):
    server, _ = served
    body = {
        "model": "trained",
        "messages": [{"role": "user", "content": "What is the total?"}],
        "skill_trainer": {"task_type": "nope"},
    }
    reply = post(server, body)
    assert reply.status_code == 400
    assert reply.json()["error"]["param"] == "skill_trainer.task_type"


@pytest.mark.parametrize(
    "content, kind",
    [
        (b'{"model": "trained"}', "text/plain"),
        (b"model=trained", "application/x-www-form-urlencoded"),
        (b"--x\r\n", "multipart/form-data; boundary=x"),
        (b'{"model": "trained"}', ""),
    ],
)
def test_a_body_that_is_not_declared_json_is_a_415(served, content, kind):
    """A page on another origin can send these without a CORS preflight: never answered."""
    server, _ = served
    headers = {"Authorization": f"Bearer {TOKEN}"}
    if kind:
        headers["content-type"] = kind
    reply = httpx.post(f"{server.url}/v1/chat/completions", content=content, headers=headers)
    assert reply.status_code == 415
    assert reply.json()["error"]["code"] == "unsupported_media_type"


@pytest.mark.parametrize("path", ["/", "/healthz", "/v1/models"])
def test_a_host_other_than_the_loopback_one_is_refused(served, path):
    """DNS rebinding: a page of evil.example that resolves to 127.0.0.1 sends its own Host."""
    server, _ = served
    port = server.url.rsplit(":", 1)[1]
    headers = {"Authorization": f"Bearer {TOKEN}"}
    for host in ("evil.example", f"evil.example:{port}", "127.0.0.1:1", "localhost"):
        reply = httpx.get(f"{server.url}{path}?token={TOKEN}", headers={**headers, "host": host})
        assert reply.status_code == 421, (host, reply.status_code)
        assert reply.json()["error"]["code"] == "misdirected_request"
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LOCALHOST:{port}"):
        reply = httpx.get(f"{server.url}{path}?token={TOKEN}", headers={**headers, "host": host})
        assert reply.status_code == 200, (host, reply.status_code)


def test_a_deeply_nested_body_is_a_clean_400(served):
    server, _ = served
    for depth in (40, 100_000):  # under and over the JSON parser's own recursion limit
        content = b'{"model": "trained", "messages": [], "x": ' + b"[" * depth + b"]" * depth + b"}"
        reply = httpx.post(
            f"{server.url}/v1/chat/completions",
            content=content,
            headers={"Authorization": f"Bearer {TOKEN}", "content-type": "application/json"},
        )
        assert reply.status_code == 400, reply.text[:200]
        assert "nested deeper than 32 levels" in reply.json()["error"]["message"]
    assert server.proc.poll() is None


def peak_rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    found = re.search(r"VmHWM:\s+(\d+) kB", status)  # the high-water mark of resident memory
    assert found is not None
    return int(found.group(1)) / 1024


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads RSS from /proc")
def test_a_chunked_body_over_the_cap_is_refused_while_it_streams_in(served):
    """No Content-Length to refuse it by: the body is counted as it arrives, never held."""
    server, _ = served
    before = peak_rss_mb(server.proc.pid)

    def chunks() -> Iterator[bytes]:
        for _ in range(80):
            yield b" " * 1_000_000

    reply = httpx.post(
        f"{server.url}/v1/chat/completions",
        content=chunks(),
        headers={"Authorization": f"Bearer {TOKEN}", "content-type": "application/json"},
        timeout=60,
    )
    assert reply.status_code == 413 and reply.json()["error"]["code"] == "too_large"
    assert peak_rss_mb(server.proc.pid) - before < 30  # held whole, 80 MB would show


def test_the_openai_client_raises_its_own_error_on_a_bad_request(served):
    server, _ = served
    with pytest.raises(openai.NotFoundError) as caught:
        server.client().chat.completions.create(
            model="other", messages=[{"role": "user", "content": "x"}]
        )
    assert caught.value.status_code == 404


def test_requests_are_a_serve_run_in_the_log_and_the_report(served):
    server, ws = served
    q = questions(ws)[3]
    reply = server.client().chat.completions.create(model="trained", **ask(q))
    request_id = (reply.model_extra or {})["skill_trainer"]["request_id"]
    row = None
    deadline = time.monotonic() + 10
    while row is None and time.monotonic() < deadline:  # written within a flush interval
        time.sleep(0.2)
        conn = sqlite3.connect(ws / "harness.db")
        try:
            row = conn.execute(
                "SELECT answer, correct, prediction, steps_json FROM predictions "
                "WHERE run_id = ? AND question_id = ?",
                (server.run_id, request_id),
            ).fetchone()
            calls = conn.execute(
                "SELECT COUNT(*) FROM llm_calls WHERE run_id = ?", (server.run_id,)
            ).fetchone()[0]
        finally:
            conn.close()
    assert row is not None
    answer, correct, prediction, steps_json = row
    assert (answer, correct) == (None, None)  # a request has no reference answer: unchecked
    steps = json.loads(steps_json)
    assert steps[0] == {
        "type": "request",
        "task": q["question"],
        "task_type": q["task_type"],
        "context_chars": 0,
    }
    assert steps[-1]["type"] == "verdict" and steps[-1]["checked"] is False
    assert prediction == (reply.model_extra or {})["skill_trainer"]["answer"]
    assert calls >= 1
    runs = {r["run_id"]: r for r in api.report(ws).summary["runs"]}
    assert runs[server.run_id]["kind"] == "serve"
    assert runs[server.run_id]["status"] == "running"


def test_train_is_refused_while_serve_holds_the_workspace(served, capsys):
    server, ws = served
    assert main(["train", "-w", str(ws), "--set", "epochs=1", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "another process is writing this workspace" in err and "`serve`" in err


def test_serve_is_refused_while_another_writer_holds_the_workspace(tmp_path):
    ws = init_ws(tmp_path / "ws")
    with WriterLock(ws, "train"):
        done = subprocess.run(
            [sys.executable, "main.py", "serve", "-w", str(ws), "--port", "0"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 2
    assert "`train`" in done.stderr and "serve logs every request" in done.stderr
    assert "Traceback" not in done.stderr


def test_binding_beyond_loopback_needs_a_token(tmp_path, capsys):
    ws = init_ws(tmp_path / "ws")
    assert main(["serve", "-w", str(ws), "--host", "0.0.0.0", "--port", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "--host 0.0.0.0: binding beyond loopback needs --token" in err[-1]
    assert not (ws / "writer.lock").exists() or (ws / "writer.lock").read_text() == ""


def test_the_spend_cap_ends_in_a_clean_402_and_the_server_stays_up(tmp_path):
    ws = init_ws(tmp_path / "ws")
    server = start(ws, "--set", "max_cost_usd=0.0003")  # about two simulated calls
    try:
        client = server.client()
        statuses = []
        for q in questions(ws)[:6]:
            try:
                client.chat.completions.create(model=server.name, **ask(q))
                statuses.append(200)
            except openai.APIStatusError as e:
                statuses.append(e.status_code)
                assert e.code == "budget_exceeded" and "spend cap reached" in e.message
        assert statuses[0] == 200 and statuses[-1] == 402, statuses
        assert httpx.get(f"{server.url}/healthz").status_code == 200
    finally:
        code, out, err = server.stop()
    assert code == 0, err
    assert "refused by the spend cap" in out and "0 refused" not in out


def test_sigterm_drains_requests_in_flight_then_stops(tmp_path):
    ws = init_ws(tmp_path / "ws")
    # each request lasts 4 s, so on a loaded machine all three are still in flight together
    # (at 0.7 s the first could finish before the third started, and the wait never ended)
    server = start(ws, "--set", "sim_latency_ms=4000")
    replies: list[str] = []

    def call(q: dict) -> None:
        reply = server.client().chat.completions.create(model=server.name, **ask(q))
        replies.append(reply.choices[0].message.content or "")

    threads = [threading.Thread(target=call, args=(q,)) for q in questions(ws)[:3]]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    while httpx.get(f"{server.url}/healthz").json()["in_flight"] < 3:  # all inside the loop
        assert time.monotonic() < deadline
        time.sleep(0.05)
    code, out, err = server.stop()
    for t in threads:
        t.join(timeout=30)
    assert code == 0, err
    assert len(replies) == 3 and all("ANSWER:" in r for r in replies)
    assert "stopped by SIGTERM" in out and "answered 3 requests" in out
    assert "Traceback" not in err
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{server.url}/healthz")
    conn = sqlite3.connect(ws / "harness.db")
    try:
        status, summary = conn.execute(
            "SELECT status, summary_json FROM _runs WHERE run_id = ?", (server.run_id,)
        ).fetchone()
        n = conn.execute(
            "SELECT COUNT(*) FROM predictions WHERE run_id = ?", (server.run_id,)
        ).fetchone()[0]
    finally:
        conn.close()
    assert (status, n) == ("done", 3)
    assert json.loads(summary)["stopped_by"] == "SIGTERM"
    assert (ws / "writer.lock").read_text() == ""  # released
    savings = {f.name: f for f in api.savings(ws).figures}  # the latest serve run, from its rows
    assert savings["answered"].value == 3
    assert savings["accuracy"].value is None and "no reference answers" in savings["accuracy"].basis


def test_a_killed_serve_leaves_a_running_run_naming_its_pid_and_a_free_lock(tmp_path):
    """What a later writer needs to mark the run as dead: the lock is free (the kernel drops a
    flock with its process) while the run says `running` and names the pid that ran it."""
    ws = init_ws(tmp_path / "ws")
    server = start(ws)
    server.proc.kill()
    server.proc.communicate(timeout=30)
    conn = sqlite3.connect(ws / "harness.db")
    try:
        status, provenance = conn.execute(
            "SELECT status, provenance_json FROM _runs WHERE run_id = ?", (server.run_id,)
        ).fetchone()
    finally:
        conn.close()
    assert status == "running" and json.loads(provenance)["pid"] == server.proc.pid
    with WriterLock(ws, "train"):  # taken at once: nothing to wait for
        pass


# ------------------------------------------------------------------ the request parser alone


def test_the_last_user_message_is_the_task_and_earlier_turns_its_context():
    from app.harness.serving.chat import parse_request

    body = {
        "model": "m",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is"},
                    {"type": "text", "text": "the total?"},
                ],
            },
        ],
        "temperature": 0.7,  # accepted, ignored
    }
    parsed = parse_request(json.dumps(body).encode())
    assert parsed.task == "What is\nthe total?"
    assert parsed.context == "system: Be brief."
    assert parsed.task_type is None and not parsed.stream  # not named: the router decides
    body["skill_trainer"] = {"task_type": "ledger", "context": "FACT: 7"}
    parsed = parse_request(json.dumps(body).encode())
    assert (parsed.task_type, parsed.context) == ("ledger", "FACT: 7")


@pytest.mark.parametrize(
    "body, says",
    [
        (b"[]", "body: Input should be a valid dictionary"),
        (
            b'{"model": "m", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]}',
            "only text parts are understood",
        ),
        (
            b'{"model": "m", "messages": [{"role": "user", "content": "x"}], '
            b'"skill_trainer": {"secret": 1}}',
            "skill_trainer.secret: Extra inputs are not permitted",
        ),
        (b"x" * 1_000_001, "request body larger than 1000000 bytes"),
    ],
)
def test_the_parser_refuses_with_one_line_naming_the_field(body, says):
    from app.harness.serving.chat import ChatRequestError, parse_request

    with pytest.raises(ChatRequestError) as caught:
        parse_request(body)
    assert says in str(caught.value) and "\n" not in str(caught.value)
