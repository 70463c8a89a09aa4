"""`ingest`: traces into the harness log (redacted, content-addressed, one transaction per
file), as trajectories the TUI opens, and `--to-benchmark` into a store benchmark that `init`
takes (docs/ingest.md)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from app import api
from app.cli import main
from app.errors import UserError
from app.harness.workspace.store import load_benchmark
from app.secrets import process_secrets

DATA = Path(__file__).parents[1] / "data" / "traces"


@pytest.fixture(scope="module")
def base_ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ingest") / "ws"
    assert main(["init", "-w", str(root), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    return root


@pytest.fixture
def ws(base_ws: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "ws"
    shutil.copytree(base_ws, copy)
    return copy


def rows(ws: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(ws / "harness.db") as conn:
        return conn.execute(sql).fetchall()


def test_ingest_every_fixture_then_again_adds_nothing(ws: Path) -> None:
    files = sorted(p for p in DATA.iterdir() if p.name != "langfuse_list_page.json")
    first = [api.ingest(ws, f) for f in files]
    assert sum(r.new for r in first) == 12
    assert {s for r in first for s in r.by_source} == {
        "otlp",
        "openinference",
        "phoenix",
        "langfuse",
        "langsmith",
        "inspect",
        "chat-json",
    }
    again = [api.ingest(ws, f) for f in files]
    assert [r.new for r in again] == [0] * len(files)
    assert [r.already for r in again] == [r.traces for r in first]
    assert rows(ws, "SELECT COUNT(*) FROM ingested_traces") == [(12,)]
    # each trace is a trajectory of its file's run, which the TUI's Runs screen lists
    assert rows(ws, "SELECT COUNT(*) FROM predictions WHERE run_id LIKE 'ingest-%'") == [(12,)]
    assert rows(ws, "SELECT COUNT(*) FROM _runs WHERE kind = 'ingest'") == [(len(files),)]
    failed = rows(ws, "SELECT source, failed FROM ingested_traces WHERE failed = 1")
    assert failed == [("openinference", 1)]


def test_trajectory_events_use_the_trajectory_screen_shapes(ws: Path) -> None:
    api.ingest(ws, DATA / "otlp_genai.json")
    (steps_json,) = rows(ws, "SELECT steps_json FROM predictions WHERE run_id LIKE 'ingest-%'")[0]
    events = json.loads(steps_json)
    assert [e["type"] for e in events] == ["system", "user", "model", "tool", "model"]
    assert events[2]["tool_calls"][0]["name"] == "get_balance"
    assert events[3]["status"] == "ok" and "42.10" in events[3]["output"]


def test_a_bad_record_stores_nothing_of_its_file_and_keeps_what_was_there(
    ws: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    api.ingest(ws, DATA / "chat.jsonl")
    before = rows(ws, "SELECT trace_id FROM ingested_traces ORDER BY trace_id")
    bad = tmp_path / "bad.jsonl"
    good = (DATA / "otlp_genai_deprecated.jsonl").read_text()
    bad.write_text(good + '{"resourceSpans": [\n')
    assert main(["ingest", "-w", str(ws), "--file", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{bad}:4: truncated record" in err[0]
    assert rows(ws, "SELECT trace_id FROM ingested_traces ORDER BY trace_id") == before
    assert rows(ws, "SELECT COUNT(*) FROM _runs WHERE kind = 'ingest'") == [(1,)]


def test_secrets_are_redacted_before_storage_and_ids(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-test-9f8e7d6c5b4a39281706f5e4d3c2b1a0"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    process_secrets.cache_clear()
    try:
        path = tmp_path / "leaky.jsonl"
        convo = {"role": "user", "content": f"my key is {secret}, and https://bob:hunter2@x.io/"}
        path.write_text(json.dumps({"messages": [convo, {"role": "assistant", "content": "ok"}]}))
        api.ingest(ws, path)
    finally:
        monkeypatch.delenv("OPENAI_API_KEY")
        process_secrets.cache_clear()
    raw = b"".join(p.read_bytes() for p in ws.glob("harness.db*"))
    assert secret.encode() not in raw and b"hunter2" not in raw
    (task,) = rows(ws, "SELECT task FROM ingested_traces")[0]
    assert "my key is" in task


def test_sample_keeps_whole_families_and_is_seeded(tmp_path: Path) -> None:
    path = tmp_path / "many.jsonl"
    lines = [
        {
            "conversation_id": f"c{i % 40}",
            "messages": [
                {"role": "user", "content": f"q{i}"},
                {"role": "assistant", "content": "a"},
            ],
        }
        for i in range(120)
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines))

    def families(seed: int, name: str) -> set[str]:
        store = tmp_path / f"store-{name}"
        api.ingest(
            tmp_path / "nowhere",
            path,
            sample=0.5,
            seed=seed,
            to_benchmark=name,
            store=store,
            reference="final",
        )
        bench = load_benchmark(store / "questions" / name)
        sizes = {q.family: 0 for q in bench.questions}
        for q in bench.questions:
            sizes[q.family] += 1
        assert set(sizes.values()) == {3}  # three traces per family: all in, or all out
        return set(sizes)

    first, again, other = families(3, "a"), families(3, "b"), families(4, "c")
    assert first == again and first != other
    assert 10 <= len(first) <= 30  # about half of the 40 families


def test_to_benchmark_then_init(
    ws: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The end-to-end path up to `init` (training needs a simulated model that answers any
    benchmark, which this branch does not have)."""
    store = tmp_path / "store"
    export = tmp_path / "mixed_feedback.jsonl"
    convos = [
        {
            "id": "a",
            "conversation_id": "s1",
            "messages": [
                {"role": "user", "content": "Spell cat backwards"},
                {"role": "assistant", "content": "tac"},
            ],
        },
        {
            "id": "b",
            "conversation_id": "s1",
            "messages": [
                {"role": "user", "content": "Spell dog backwards"},
                {"role": "assistant", "content": "god"},
            ],
        },
        {"id": "c", "messages": [{"role": "assistant", "content": "no task here"}]},
    ]
    export.write_text("\n".join(json.dumps(c) for c in convos) + "\n")
    args = ["ingest", "-w", str(ws), "--file", str(export), "--store", str(store)]
    assert main([*args, "--to-benchmark", "judged"]) == 0  # no reference: judged questions
    out = capsys.readouterr().out
    assert "3 traces -> 0 with reference, 2 judged, 1 dropped (1 no user task)" in out
    assert main([*args, "--to-benchmark", "mine", "--reference", "final"]) == 0
    out = capsys.readouterr().out
    assert "3 traces -> 2 with reference, 0 judged, 1 dropped (1 no user task), 1 families" in out
    bench = load_benchmark(store / "questions" / "mine")
    assert {q.answer for q in bench.questions} == {"tac", "god"}
    assert len({q.family for q in bench.questions}) == 1  # one session: one family
    # the feedback formats give references without --reference final
    assert (
        main(
            [
                "ingest",
                "-w",
                str(ws),
                "--file",
                str(DATA / "langsmith_runs.jsonl"),
                "--store",
                str(store),
                "--to-benchmark",
                "smith",
            ]
        )
        == 0
    )
    (q,) = load_benchmark(store / "questions" / "smith").questions
    assert (q.question, q.answer) == ("What is 17 * 3?", "51")
    assert q.context == 'calculator({"expression": "17*3"}) -> 51'
    assert (
        main(
            [
                "init",
                "-w",
                str(tmp_path / "trained"),
                "--seed",
                "sim-starter",
                "--questions",
                "mine",
                "--store",
                str(store),
            ]
        )
        == 0
    )
    assert (tmp_path / "trained" / "questions" / "questions.jsonl").is_file()


def test_error_traces_never_become_questions(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="1 error trace"):
        api.ingest(
            tmp_path / "nowhere",
            DATA / "openinference_otlp.jsonl",
            to_benchmark="x",
            store=tmp_path / "s",
            reference="final",
        )
    assert not (tmp_path / "s" / "questions" / "x").exists()


def test_not_a_workspace_without_to_benchmark_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="not a workspace"):
        api.ingest(tmp_path / "nowhere", DATA / "chat.jsonl")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"file": 3}, "file: expected an export file's path"),
        ({"source": "jaeger"}, "--source 'jaeger': one of auto, otlp"),
        ({"sample": 0}, r"--sample 0: a rate in \(0, 1\]"),
        ({"reference": "best"}, "--reference 'best': feedback or final"),
        ({"to_benchmark": "x"}, "--to-benchmark needs --store DIR"),
        ({"to_benchmark": "../x", "store": "s"}, "a benchmark name is 1-64 letters"),
    ],
)
def test_bad_arguments_are_refused_in_one_line(ws: Path, kwargs: dict, message: str) -> None:
    call = {"file": DATA / "chat.jsonl", **kwargs}
    with pytest.raises(UserError, match=message) as refused:
        api.ingest(ws, **call)
    assert "\n" not in str(refused.value)
    assert rows(ws, "SELECT COUNT(*) FROM ingested_traces") == [(0,)]


def test_a_task_without_an_answer_is_marked_abandoned(ws: Path, tmp_path: Path) -> None:
    path = tmp_path / "left.jsonl"
    path.write_text(json.dumps({"messages": [{"role": "user", "content": "hello?"}]}) + "\n")
    api.ingest(ws, path)
    (trace_json,) = rows(ws, "SELECT trace_json FROM ingested_traces")[0]
    assert json.loads(trace_json)["feedback"] == [{"kind": "abandoned"}]


VERBS = (
    "refund",
    "cancel",
    "ship",
    "track",
    "price",
    "split",
    "merge",
    "hold",
    "bill",
    "audit",
    "quote",
    "return",
)


def _near_duplicates(path: Path) -> None:
    """60 conversations, five per task template (a verb), each with its own order number and
    quoted customer name, and no session ids: families come from the normalised task."""
    lines = [
        {
            "id": f"t{i}",
            "messages": [
                {"role": "user", "content": f"Please {VERBS[i % 12]} order {1000 + i} for 'c{i}'"},
                {"role": "assistant", "content": f"done: {1000 + i}"},
            ],
        }
        for i in range(60)
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_near_duplicate_tasks_never_straddle_pools(tmp_path: Path) -> None:
    from app.harness.rollouts.pools import split_pools

    export = tmp_path / "dups.jsonl"
    _near_duplicates(export)
    result = api.ingest(
        tmp_path / "nowhere", export, to_benchmark="dups", store=tmp_path / "s", reference="final"
    )
    assert result.families == 12 and result.benchmark is not None
    bench = load_benchmark(tmp_path / "s" / "questions" / "dups")
    pools = split_pools(bench.questions, bench.split, bench.seed)
    pool_of: dict[str, set[str]] = {}
    for name in ("diagnosis", "validation", "test"):
        for q in getattr(pools, name):
            pool_of.setdefault(q.family, set()).add(name)
    assert len(pool_of) == 12 and all(len(p) == 1 for p in pool_of.values())
    assert {n for p in pool_of.values() for n in p} == {"diagnosis", "validation", "test"}


def test_ingested_benchmark_trains_on_the_oracle(tmp_path: Path, capsys) -> None:
    """Fixtures -> ingest --to-benchmark -> init -> train, on `sim/oracle` (a simulated model
    that answers any benchmark), when this tree has it."""
    pytest.importorskip("app.providers.sim.oracle")
    store, export = tmp_path / "s", tmp_path / "dups.jsonl"
    _near_duplicates(export)
    api.ingest(tmp_path / "x", export, to_benchmark="dups", store=store, reference="final")
    ws = tmp_path / "ws"
    init = ["init", "-w", str(ws), "--seed", "sim-starter", "--questions", "dups"]
    assert main([*init, "--store", str(store)]) == 0
    models = [f'{role}_model="sim/oracle"' for role in ("agent", "evolver", "judge")]
    sets = [arg for m in models for arg in ("--set", m)]
    assert main(["train", "-w", str(ws), "--set", "epochs=1", "--no-progress", *sets]) == 0
    assert "test accuracy: baseline" in capsys.readouterr().out


def test_the_same_traces_in_other_bytes_are_recognised_by_content(ws: Path, tmp_path: Path) -> None:
    first = api.ingest(ws, DATA / "chat.jsonl")
    again = api.ingest(ws, DATA / "chat.jsonl")  # same bytes: its recorded summary, no parsing
    assert (again.new, again.already, again.run_id) == (0, 2, first.run_id)
    copy = tmp_path / "copy.jsonl"
    copy.write_text((DATA / "chat.jsonl").read_text() + "\n\n")  # other bytes, same traces
    other = api.ingest(ws, copy)
    assert (other.new, other.already) == (0, 2) and other.run_id != first.run_id
    assert rows(ws, "SELECT COUNT(*) FROM ingested_traces") == [(2,)]


def test_without_a_reference_a_trace_is_judged_where_the_rubric_checker_exists(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from app.harness.ingest import benchmark
    from app.harness.ingest.parse import traces
    from core.traces import ReferenceMode, family_key

    (trace, _), *_ = traces(DATA / "chat.jsonl")
    plan = benchmark.BenchmarkPlan(ReferenceMode.FEEDBACK, "ingested")
    monkeypatch.setattr(benchmark, "rubric_available", lambda: False)
    plan.add(trace, "t1", family_key(trace))
    assert plan.questions == [] and plan.judged == 0  # a store without it: dropped, with why
    assert list(plan.dropped) == [
        "no reference (no edit, target or good score); this store has no rubric checker "
        "for judged questions"
    ]
    monkeypatch.undo()
    assert benchmark.rubric_available()  # this tree has the rubric checker
    plan.add(trace, "t1", family_key(trace))
    (row,) = plan.questions
    assert (row["checker"], row["checker_args"]) == ("rubric", {"rubric": benchmark.DEFAULT_RUBRIC})
    assert plan.judged == 1 and row["answer"] == "tac"


def test_ingested_trajectories_are_the_questions_of_the_benchmark_they_made(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """ingest --to-benchmark -> init from it -> ingest again: the trajectories answer the
    workspace's own questions under its versions, so `diagnose` reads them (it stops here
    only because the simulated world cannot answer a user benchmark)."""
    store, ws = tmp_path / "store", tmp_path / "ws"
    export = DATA / "inspect_log.json"
    api.ingest(ws, export, to_benchmark="insp", store=store)
    init = ["init", "-w", str(ws), "--seed", "sim-starter", "--questions", "insp"]
    assert main([*init, "--store", str(store)]) == 0
    run_id = api.ingest(ws, export).run_id
    bench_ids = {q.question_id for q in load_benchmark(store / "questions" / "insp").questions}
    got = rows(
        ws,
        f"SELECT question_id, correct, skills_version FROM predictions WHERE run_id = '{run_id}'",
    )
    assert {r[0] for r in got} == bench_ids
    assert sorted((r[1], r[2]) for r in got) == [(0, "v1"), (1, "v1")]  # scored C and I
    capsys.readouterr()
    assert main(["diagnose", "-w", str(ws), run_id]) == 2
    assert "this simulated world knows 0 of the 2 questions" in capsys.readouterr().err
