"""Curated data on the sim (docs/curation.md): trajectory classes and the verifier cascade
of `rank`, the multi-turn files of `export` checked against their consumers (`datasets`;
trl's data utilities when installed), token-weighted mixes and `export verify`."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from app import api
from app.cli import main
from app.errors import UserError
from app.harness.data.export_formats import CURATED_LAYOUTS, CURATION_MANIFEST
from app.harness.data.lineage import KEY_ENV

TASK_TYPES = ["dates", "pricing"]  # cases with context to read: tool calls and faults


@pytest.fixture(scope="module")
def ranked(tmp_path_factory) -> Path:
    ws = tmp_path_factory.mktemp("curation") / "ws"
    assert main(["init", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    api.fork(
        ws,
        branches=4,
        temperature_range=(0.0, 1.0),
        pool="all",
        task_types=TASK_TYPES,
        limit=24,
        rollout_id="c1",
    )
    api.rank(ws, "c1", verifiers=["completed", "checker"], remember=False)
    return ws


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def classes(ws: Path) -> dict[tuple[str, int], str]:
    conn = sqlite3.connect(ws / "harness.db")
    rows = conn.execute(
        "SELECT question_id, branch_index, class FROM trajectory_classes WHERE run_id='c1'"
    )
    return {(q, b): c for q, b, c in rows}


# -- rank ------------------------------------------------------------------------------------------
def test_rank_classes_every_branch(ranked: Path) -> None:
    got = classes(ranked)
    assert len(got) == 24 * 4
    counts = {c: list(got.values()).count(c) for c in set(got.values())}
    # the sim agent reads a case's context without section="full" unless its skill says so:
    # a partial view, then sometimes a lucky pass (recovery) and more often a negative
    assert counts.get("recovery", 0) > 0 and counts.get("pristine", 0) > 0
    assert counts.get("negative", 0) > 0
    conn = sqlite3.connect(ranked / "harness.db")
    correct = dict(
        ((q, b), c)
        for q, b, c in conn.execute(
            "SELECT question_id, branch_index, correct FROM branches WHERE run_id='c1'"
        )
    )
    for key, cls in got.items():
        assert (cls == "negative") == (not correct[key])


def test_cascade_accepts_the_same_branches_for_less(ranked: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    shutil.copytree(ranked, ws)
    conn = sqlite3.connect(ws / "harness.db")
    query = "SELECT question_id, branch_index, objective FROM rankings WHERE run_id='c1'"
    every = set(conn.execute(query))
    result = api.rank(
        ws,
        "c1",
        verifiers=["completed", "checker"],
        remember=False,
        cascade=True,
        verifier_costs={"completed": 2.0, "checker": 0.001},
    )
    assert set(conn.execute(query)) == every
    k = result.cascade
    assert k is not None and k.order == ("checker", "completed")  # cheapest first
    first, second = k.stages
    assert first.entered == 24 * 4 and second.entered == first.passed
    assert first.rejected == first.entered - first.passed
    assert first.cost_basis == "declared"
    assert k.yield_rate == pytest.approx(first.pass_rate * second.pass_rate)
    assert k.cost_per_attempt_s == pytest.approx(0.001 + first.pass_rate * 2.0)
    assert k.cost_spent_s == pytest.approx(first.entered * 0.001 + second.entered * 2.0)
    assert k.cost_ratio is not None and k.cost_ratio < 0.5
    statuses = conn.execute(
        "SELECT status FROM verdicts WHERE run_id='c1' AND verifier='completed'"
    ).fetchall()
    assert sum(1 for (s,) in statuses if s == "skipped") == first.rejected


# -- export ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def exported(ranked: Path, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("curated") / "out"
    api.export(ranked, ["c1"], out=out, include_test=True)
    return out


def test_sft_holds_no_negatives_and_keeps_tool_calls(ranked: Path, exported: Path) -> None:
    cls = classes(ranked)
    sft = read_jsonl(exported / "sft_trl.jsonl")
    assert sft
    for rec in sft:
        src = rec["lineage"]["source"]
        assert cls[(src["question_id"], src["branch_index"])] in ("pristine", "recovery")
        tools = json.loads(rec["tools"])
        messages = rec["messages"]
        assert [m["role"] for m in messages[:2]] == ["system", "user"]
        assert messages[-1]["role"] == "assistant" and "ANSWER:" in messages[-1]["content"]
        calls = [c for m in messages if m["role"] == "assistant" for c in m.get("tool_calls", [])]
        answered = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
        assert answered == [c["id"] for c in calls]
        assert all(isinstance(c["function"]["arguments"], dict) for c in calls)
        assert {c["function"]["name"] for c in calls} <= {t["function"]["name"] for t in tools}
    openai = read_jsonl(exported / "sft_openai_chat.jsonl")
    assert len(openai) == len(sft)
    for rec in openai:
        assert set(rec) == {"messages", "tools"}  # OpenAI refuses unknown keys
        for m in rec["messages"]:
            for c in m.get("tool_calls", []):
                assert c["type"] == "function" and isinstance(c["function"]["arguments"], str)
    assert any(m["role"] == "tool" for rec in openai for m in rec["messages"])


def test_preference_files_label_by_class(ranked: Path, exported: Path) -> None:
    cls = classes(ranked)
    kto = read_jsonl(exported / "kto.jsonl")
    steps = read_jsonl(exported / "stepwise.jsonl")
    assert len(kto) == len(steps) == sum(1 for c in cls.values() if c != "verbose")
    for k, s in zip(kto, steps, strict=True):
        src = k["lineage"]["source"]
        negative = cls[(src["question_id"], src["branch_index"])] == "negative"
        assert k["label"] is not negative
        assert set(k) == {"prompt", "completion", "label", "lineage"}
        assert isinstance(s["prompt"], str) and len(s["completions"]) == len(s["labels"])
        assert all(isinstance(c, str) for c in s["completions"])
        assert all(s["labels"]) is not negative  # a negative is false from its divergence on
        if negative:
            cut = s["labels"].index(False)
            assert not any(s["labels"][cut:])


def test_every_file_loads_in_datasets_unchanged(exported: Path, tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    for name in CURATED_LAYOUTS:
        raw = read_jsonl(exported / name)
        ds = datasets.load_dataset(
            "json",
            data_files=str(exported / name),
            split="train",
            cache_dir=str(tmp_path / "hf-cache"),
        )
        assert set(ds.column_names) == set(raw[0])
        assert [dict(row) for row in ds] == raw, name


def test_trl_reads_the_files(exported: Path) -> None:
    pytest.importorskip("trl", reason="trl is not installed (it is not a dependency)")
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace
    from transformers import PreTrainedTokenizerFast
    from trl.data_utils import apply_chat_template, is_conversational

    template = (
        "{% if tools %}TOOLS {{ tools | tojson }}\n{% endif %}"
        "{% for m in messages %}<{{ m.role }}>{{ m.content }}"
        "{% for c in m.tool_calls or [] %}[call {{ c.function.name }} "
        "{{ c.function.arguments | tojson }}]{% endfor %}</{{ m.role }}>\n{% endfor %}"
        "{% if add_generation_prompt %}<assistant>{% endif %}"
    )
    raw = Tokenizer(WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    raw.pre_tokenizer = Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=raw, chat_template=template)
    sft = read_jsonl(exported / "sft_trl.jsonl")
    kto = read_jsonl(exported / "kto.jsonl")
    assert all(is_conversational(r) for r in sft) and all(is_conversational(r) for r in kto)
    with_calls = next(r for r in sft if any(m.get("tool_calls") for m in r["messages"]))
    text = apply_chat_template(
        {"messages": with_calls["messages"]}, tokenizer, tools=json.loads(with_calls["tools"])
    )["text"]
    assert "TOOLS" in text and "[call read_context" in text and "<tool>" in text
    row = apply_chat_template({k: kto[0][k] for k in ("prompt", "completion", "label")}, tokenizer)
    assert set(row) == {"prompt", "completion", "label"}


# -- mixes -----------------------------------------------------------------------------------------
def test_mix_by_tokens_is_recorded_and_seeded(ranked: Path, tmp_path: Path) -> None:
    a = api.export(ranked, ["c1"], out=tmp_path / "a", mix="pristine=0.65,recovery=0.25", seed=1)
    api.export(ranked, ["c1"], out=tmp_path / "b", mix="pristine=0.65,recovery=0.25", seed=1)
    assert (tmp_path / "a" / "sft_trl.jsonl").read_bytes() == (
        tmp_path / "b" / "sft_trl.jsonl"
    ).read_bytes()
    c = a.curation
    assert c is not None and c.mix_requested is not None and c.mix_realised is not None
    assert c.mix_requested == pytest.approx({"pristine": 0.65 / 0.9, "recovery": 0.25 / 0.9})
    manifest = json.loads((tmp_path / "a" / CURATION_MANIFEST).read_text())
    used = manifest["mix"]["used"]
    assert c.mix_realised["recovery"] == pytest.approx(
        used["recovery"] / (used["pristine"] + used["recovery"]), abs=1e-6
    )
    assert c.sft_records == len(read_jsonl(tmp_path / "a" / "sft_trl.jsonl"))
    assert c.negative_token_share is not None and 0 < c.negative_token_share < 1


def test_export_says_the_mix_shares_given_were_normalised(
    ranked: Path, tmp_path: Path, capsys
) -> None:
    argv = ["export", "-w", str(ranked), "c1", "--out", str(tmp_path / "m")]
    assert main([*argv, "--mix", "pristine=0.65,recovery=0.25"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "mix by tokens" in x)
    assert "(given -> normalised to sum 1 -> realised)" in line, line
    assert "pristine 0.65 -> 72.22% -> " in line and "recovery 0.25 -> 27.78% -> " in line, line
    manifest = json.loads((tmp_path / "m" / CURATION_MANIFEST).read_text())
    assert manifest["mix"]["given"] == {"pristine": 0.65, "recovery": 0.25}


def test_a_mix_that_cannot_be_filled_is_refused_and_writes_nothing(
    ranked: Path, tmp_path: Path
) -> None:
    with pytest.raises(
        UserError, match=r"--mix: class '\w+' cannot fill .*needs \d+, has \d+ \(short \d+\)"
    ):
        api.export(
            ranked, ["c1"], out=tmp_path / "x", mix="pristine=0.5,recovery=0.5", mix_total=10**9
        )
    assert not (tmp_path / "x").exists()
    with pytest.raises(UserError, match="negatives go only into preference data"):
        api.export(ranked, ["c1"], out=tmp_path / "x", mix="pristine=0.9,negative=0.1")


# -- lineage ---------------------------------------------------------------------------------------
def test_export_verify_names_the_one_changed_record(
    ranked: Path, exported: Path, tmp_path: Path, capsys
) -> None:
    clean = api.export_verify(exported, ranked)
    assert clean.workspace_checked and clean.failures == 0
    assert clean.records == sum(len(read_jsonl(exported / n)) for n in CURATED_LAYOUTS)
    copy = tmp_path / "copy"
    shutil.copytree(exported, copy)
    path = copy / "kto.jsonl"
    data = bytearray(path.read_bytes())
    at = data.index(b"ANSWER: ") + len(b"ANSWER: ")
    data[at] = ord("7") if data[at] != ord("7") else ord("8")
    path.write_bytes(bytes(data))
    bad = api.export_verify(copy)
    assert bad.failures == 1
    assert bad.first_failure is not None and bad.first_failure.startswith(f"{path}:")
    assert "record digest differs" in bad.first_failure
    assert main(["export", "-w", str(ranked), "verify", str(copy)]) == 1
    assert f"{path}:" in capsys.readouterr().out
    assert main(["export", "-w", str(ranked), "verify", str(exported)]) == 0


def test_export_verify_checks_all_eight_files_and_says_how(
    ranked: Path, exported: Path, tmp_path: Path, capsys
) -> None:
    from app.harness.data.export import LAYOUTS

    assert main(["export", "-w", str(ranked), "verify", str(exported)]) == 0
    out = capsys.readouterr().out
    for name in [*CURATED_LAYOUTS, *LAYOUTS]:
        assert f"  checked {name}: " in out, out
    assert "not checked" not in out
    copy = tmp_path / "copy"
    shutil.copytree(exported, copy)
    sft = copy / "sft.jsonl"  # no lineage of its own: its manifest's sha256 catches a change
    sft.write_bytes(sft.read_bytes().replace(b"ANSWER: ", b"ANSWER:  ", 1))
    trl = copy / "sft_trl.jsonl"  # a record taken out: every other record's lineage still holds
    trl.write_text("".join(trl.read_text(encoding="utf-8").splitlines(True)[1:]), "utf-8")
    (copy / "rewards.jsonl.manifest.json").unlink()
    result = api.export_verify(copy)
    assert result.failures == 2, result
    assert (
        result.first_failure
        == f"{trl}: {len(read_jsonl(trl))} records, its manifest says {len(read_jsonl(trl)) + 1}"
    )
    assert result.not_checked == {"rewards.jsonl": "no rewards.jsonl.manifest.json"}
    assert main(["export", "-w", str(ranked), "verify", str(copy)]) == 1
    out = capsys.readouterr().out
    assert "  not checked rewards.jsonl: no rewards.jsonl.manifest.json" in out, out


def test_keyed_lineage_needs_the_key(ranked: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(KEY_ENV, "a-workspace-secret")
    result = api.export(ranked, ["c1"], out=tmp_path / "k")
    assert result.curation is not None and result.curation.lineage_id == "hmac-sha256"
    assert api.export_verify(tmp_path / "k", ranked).failures == 0
    for path in (tmp_path / "k").iterdir():
        assert "a-workspace-secret" not in path.read_text(encoding="utf-8"), path
    monkeypatch.setenv(KEY_ENV, "another")
    assert api.export_verify(tmp_path / "k").failures == result.curation.sft_records * 2 + (
        result.curation.preference_records * 2
    )
    monkeypatch.delenv(KEY_ENV)
    lacking = api.export_verify(tmp_path / "k")
    assert lacking.first_failure is not None and "no key is set" in lacking.first_failure


def test_verify_against_the_workspace_sees_a_changed_verifier_list(
    ranked: Path, exported: Path, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    shutil.copytree(ranked, ws)
    api.rank(ws, "c1", verifiers=["checker"], remember=False)  # verdicts replaced
    result = api.export_verify(exported, ws)
    assert result.failures == result.records
    assert result.first_failure is not None
    assert "verifiers hash differs from the workspace's" in result.first_failure
    assert api.export_verify(exported).failures == 0  # the records themselves are intact


def test_a_tool_mode_fork_exports_the_tools_it_was_offered(ranked: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    shutil.copytree(ranked, ws)
    tool_mode = {"skill_mode": "tool"}
    api.fork(
        ws,
        overrides=tool_mode,
        branches=2,
        pool="all",
        task_types=TASK_TYPES,
        limit=6,
        rollout_id="t",
    )
    api.rank(ws, "t", overrides=tool_mode, remember=False)
    api.export(ws, ["t"], out=tmp_path / "out", include_test=True)  # the default config: inline
    records = read_jsonl(tmp_path / "out" / "kto.jsonl")
    assert records
    for rec in records:
        system = rec["prompt"][0]["content"]
        calls = {c["function"]["name"] for m in rec["completion"] for c in m.get("tool_calls", [])}
        assert "read_skill" in calls and "# Skill for task type" not in system
    for rec in read_jsonl(tmp_path / "out" / "sft_trl.jsonl"):
        offered = {t["function"]["name"] for t in json.loads(rec["tools"])}
        called = {c["function"]["name"] for m in rec["messages"] for c in m.get("tool_calls", [])}
        assert "read_skill" in offered and called <= offered
    assert api.export_verify(tmp_path / "out", ws).failures == 0


# -- licences ----------------------------------------------------------------------------------
def _licensed(ranked: Path, tmp_path: Path, line: str | None) -> Path:
    ws = tmp_path / "ws"
    shutil.copytree(ranked, ws)
    toml = ws / "questions" / "benchmark.toml"
    kept = [x for x in toml.read_text().splitlines() if not x.startswith("license =")]
    toml.write_text("\n".join(([line] if line else []) + kept) + "\n")
    return ws


def test_the_built_in_benchmark_is_mit_and_the_tier_is_recorded(exported: Path) -> None:
    licence = json.loads((exported / CURATION_MANIFEST).read_text())["licence"]
    assert licence["tier"] == "permissive"
    assert licence["sources"][0]["expression"] == "MIT"


@pytest.mark.parametrize(
    ("line", "refusal"),
    [
        (None, "declares no licence"),
        ('license = "CC-BY-NC-4.0"', "'CC-BY-NC-4.0' .*non-commercial"),
        ('license = "MIT AND LicenseRef-Acme-Internal"', "proprietary"),
        ('license = "MIT AND"', "is not an SPDX expression"),
        ('license = "Foo-1.0"', "'Foo-1.0' is not an SPDX licence id"),
    ],
)
def test_restricted_or_unreadable_licences_are_refused(
    ranked: Path, tmp_path: Path, line: str | None, refusal: str
) -> None:
    ws = _licensed(ranked, tmp_path, line)
    with pytest.raises(UserError, match=refusal) as caught:
        api.export(ws, ["c1"], out=tmp_path / "out")
    assert "benchmark.toml" in str(caught.value)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("line", [None, 'license = "LicenseRef-Acme-Internal"'])
def test_the_users_own_unlicensed_or_proprietary_data_exports_with_allow_restricted(
    ranked: Path, tmp_path: Path, line: str | None
) -> None:
    ws = _licensed(ranked, tmp_path, line)
    with pytest.raises(UserError, match="--allow-restricted"):
        api.export(ws, ["c1"], out=tmp_path / "out")
    got = api.export(ws, ["c1"], out=tmp_path / "out", allow_restricted=True)
    assert got.curation is not None and got.curation.licence_tier == "restricted"
    licence = json.loads((tmp_path / "out" / CURATION_MANIFEST).read_text())["licence"]
    assert licence["allowed_by"].startswith("allow_restricted")


def test_strong_copyleft_needs_the_flag_and_or_picks_the_lenient(
    ranked: Path, tmp_path: Path
) -> None:
    ws = _licensed(ranked, tmp_path, 'license = "GPL-3.0-only"')
    with pytest.raises(UserError, match="--allow-copyleft"):
        api.export(ws, ["c1"], out=tmp_path / "a")
    got = api.export(ws, ["c1"], out=tmp_path / "a", allow_copyleft=True)
    assert got.curation is not None and got.curation.licence_tier == "strong-copyleft"
    (ws / "questions" / "benchmark.toml").write_text(
        (ws / "questions" / "benchmark.toml")
        .read_text()
        .replace('"GPL-3.0-only"', '"GPL-3.0-only OR MPL-2.0"')
    )
    got = api.export(ws, ["c1"], out=tmp_path / "b")
    assert got.curation is not None and got.curation.licence_tier == "weak-copyleft"


def test_a_fork_ranked_before_classes_existed_exports_the_same_classes(
    ranked: Path, exported: Path, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    shutil.copytree(ranked, ws)
    conn = sqlite3.connect(ws / "harness.db")
    with conn:
        conn.execute("DELETE FROM trajectory_classes")
    conn.close()
    api.export(ws, ["c1"], out=tmp_path / "out", include_test=True)
    for name in ("kto.jsonl", "stepwise.jsonl", "sft_trl.jsonl"):
        assert (tmp_path / "out" / name).read_bytes() == (exported / name).read_bytes(), name


def test_verify_reports_a_huge_line_without_reading_it_whole(
    exported: Path, tmp_path: Path, monkeypatch
) -> None:
    from app.harness.data import lineage as lineage_module

    copy = tmp_path / "copy"
    shutil.copytree(exported, copy)
    monkeypatch.setattr(lineage_module, "MAX_LINE_BYTES", 64)
    result = api.export_verify(copy)
    assert result.failures == result.records  # every record is longer than 64 bytes
    assert result.first_failure is not None and "larger than 64 bytes" in result.first_failure
