"""Which task type a served request is (app/harness/serving/routing.py), and what the served
agent then says it used (docs/serving.md#routing). The router alone, without a server."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from app.cli import main
from app.harness.rollouts.agent_prompts import AgentPrompts
from app.harness.rollouts.session import Session
from app.harness.serving.agent import ServedAgent
from app.harness.serving.routing import Router, RoutingError
from app.harness.workspace.config import load_config
from core.types import Question


def prompts(skills: dict[str, str], sidecar: str = "") -> AgentPrompts:
    files = dict(skills)
    if sidecar:
        files["_skills.json"] = sidecar
    return AgentPrompts(system="s", tool_docs={}, skills=files, user_template="$question")


def question(qid: str, task_type: str, tools: tuple[str, ...] | None = None) -> Question:
    return Question(question_id=qid, task_type=task_type, question="q", answer="a", tools=tools)


SKILLS = {
    "dates.md": "# Dates cases\nUse the due date.",
    "ledger.md": "# Ledger cases\nAdd the figures.",
    "default-strategy.md": "# Default strategy\n",
}


def test_the_task_is_routed_by_the_words_only_its_descriptions_hold():
    router = Router.build("m", prompts(SKILLS), [])
    # "cases", "instructions" and "tasks" are in every description: they decide nothing
    assert router.route("m", None, "On which date is the invoice due?").task_type == "dates"
    route = router.route("m", None, "[ledger] Case 7. What is the total?")
    assert (route.task_type, route.skill, route.routed_by) == ("ledger", "ledger.md", "description")
    with pytest.raises(RoutingError, match="shares a word") as caught:
        router.route("m", None, "Please help with these cases and tasks")
    assert caught.value.status == 400 and caught.value.code == "task_type_not_found"


def test_a_task_type_without_a_skill_of_its_own_is_routed_by_its_name():
    router = Router.build("m", prompts(SKILLS), [question("p1", "price_code")])
    route = router.route("m", None, "[pricing] Case 4. What is the price code?")
    assert (route.task_type, route.skill) == ("price_code", "default-strategy.md")


def test_a_trained_description_routes_by_its_own_words():
    sidecar = '{"ledger.md": {"description": "Use for sums of client figures and totals."}}'
    router = Router.build("m", prompts(SKILLS, sidecar), [])
    assert router.route("m", None, "Sum the client figures, please").task_type == "ledger"


def test_the_model_id_and_the_field_route_exactly_and_name_unknown_types():
    router = Router.build("m", prompts(SKILLS), [question("p1", "pricing")])
    assert router.model_ids() == ["m", "m/dates", "m/ledger", "m/pricing"]
    assert router.route("m/ledger", "dates", "due date?").routed_by == "model"
    assert router.route("m", "dates", "total?").task_type == "dates"
    with pytest.raises(RoutingError, match="'x' is not a task type") as caught:
        router.route("m/x", None, "q")
    assert (caught.value.status, caught.value.param) == (404, "model")
    with pytest.raises(RoutingError) as caught:
        router.route("other", None, "q")
    assert caught.value.code == "model_not_found"


def test_a_task_type_without_a_skill_of_its_own_names_only_a_file_that_exists():
    with_default = Router.build("m", prompts(SKILLS), [question("p1", "pricing")])
    assert with_default.route("m/pricing", None, "q").skill == "default-strategy.md"
    seed = {k: v for k, v in SKILLS.items() if k != "default-strategy.md"}
    without = Router.build("m", prompts(seed), [question("p1", "pricing")])
    assert without.route("m/pricing", None, "q").skill == ""


def test_a_routed_task_type_offers_the_tools_its_questions_declare():
    qs = [
        question("a1", "repo", ("read_file",)),
        question("a2", "repo", ("run_tests", "read_file")),
        question("b1", "notes"),  # no list: the default tools
        question("c1", "calc", ()),
    ]
    router = Router.build("m", prompts(SKILLS), qs, default_tools=["notes_server"])
    assert router.route("m/repo", None, "q").tools == ("read_file", "run_tests")
    assert router.route("m/notes", None, "q").tools == ("notes_server",)
    assert router.route("m/calc", None, "q").tools == ()
    assert router.route("m/ledger", None, "q").tools is None  # no questions: the defaults


@pytest.fixture(scope="module")
def starter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("routing") / "ws"
    assert main(["init", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    return ws


def test_every_sim_basic_question_as_plain_text_routes_to_its_own_task_type(starter: Path):
    with Session(starter, load_config(None)) as session:
        qs = session.benchmark.questions
        router = Router.build("m", session.agent_prompts(), qs)
    routed = [router.route("m", None, q.question).task_type for q in qs]
    assert len(qs) > 400 and routed == [q.task_type for q in qs]


def test_inline_mode_never_reports_a_skill_file_the_version_lacks(starter: Path):
    with Session(starter, load_config(None)) as session:
        loaded = session.agent_prompts()
        kept = {k: v for k, v in loaded.skills.items() if k not in ("ledger.md", SKILL_DEFAULT)}
        agent = ServedAgent(
            name="m",
            run_id="serve-1",
            provider=session.providers["agent"],
            prompts=replace(loaded, skills=kept),
            settings=session.agent_settings,
            log=session.log,
            recorder=session.recorder,
            limiter=anyio.CapacityLimiter(1),
        )
        served = anyio.run(agent.answer, "[ledger] What is the total of 1, 2?", "ledger", "")
    assert served.skills_opened == ()


SKILL_DEFAULT = "default-strategy.md"


def test_a_served_request_gets_its_task_types_declared_tools(tmp_path: Path):
    """sim-tools declares no default tools: each question lists its own. A request routed to
    `repair` is offered repair's tools, and the agent calls them (docs/serving.md#routing).
    The server runs in this process (api.serve_async), to spare a process start."""
    import json
    import sqlite3

    import httpx

    from app import api
    from tests.app.serving.test_serve import questions

    ws = tmp_path / "ws"
    assert main(["init", str(ws), "--seed", "sim-tools-starter", "--questions", "sim-tools"]) == 0
    sim = {k: "sim/tools" for k in ("agent_model", "evolver_model", "judge_model")}
    q = next(q for q in questions(ws) if q["task_type"] == "repair")
    replies: list[httpx.Response] = []

    async def main_task() -> api.ServeOutcome:
        stop = anyio.Event()
        ready: list[api.ServeReady] = []

        async def client() -> None:
            while not ready:
                await anyio.sleep(0.02)
            body = {
                "model": ready[0].name,
                "messages": [{"role": "user", "content": q["question"]}],
            }
            async with httpx.AsyncClient(timeout=60) as http:
                replies.append(await http.post(f"{ready[0].url}/v1/chat/completions", json=body))
            stop.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(client)
            return await api.serve_async(
                ws,
                overrides={**sim, "sim_units_per_type": 96},
                port=0,
                on_ready=ready.append,
                stop=stop,
            )

    outcome = anyio.run(main_task)
    assert replies[0].status_code == 200, replies[0].text
    assert replies[0].json()["skill_trainer"]["task_type"] == "repair"
    with sqlite3.connect(ws / "harness.db") as conn:
        (steps,) = conn.execute(
            "SELECT steps_json FROM predictions WHERE run_id = ?", (outcome.run_id,)
        ).fetchone()
    called = {c["name"] for s in json.loads(steps) for c in s.get("tool_calls") or []}
    assert called and called <= set(q["tools"]), called
