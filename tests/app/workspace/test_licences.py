"""Licences of every source an export draws on (docs/curation.md#licences): the benchmark,
the seed, imported skills and ingested traces; the export's tier is the strictest."""

from __future__ import annotations

import json
import shutil
import sqlite3
import tomllib
from pathlib import Path

import pytest

from app import api
from app.cli import main
from app.errors import UserError
from app.harness.data.export_formats import CURATION_MANIFEST
from app.harness.workspace.spdx import expression_tier
from app.harness.workspace.store import SKILLS_SIDECAR, load_seed
from core.licences import Tier

TRACES = Path(__file__).parents[1] / "data" / "traces" / "inspect_log.json"
SEEDS = Path(__file__).parents[3] / "store" / "seeds"


@pytest.fixture(scope="module")
def ranked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fork ranked after an ingest of MIT-licensed traces."""
    ws = tmp_path_factory.mktemp("licences") / "ws"
    assert main(["init", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    assert api.ingest(ws, TRACES, license="MIT").run_id
    api.fork(ws, branches=2, pool="all", task_types=["dates"], limit=6, rollout_id="c1")
    api.rank(ws, "c1", verifiers=["completed", "checker"], remember=False)
    return ws


def _copy(ranked: Path, tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    shutil.copytree(ranked, ws)
    return ws


def _licence(out: Path) -> dict:
    return json.loads((out / CURATION_MANIFEST).read_text())["licence"]


def _sources(out: Path) -> dict[str, dict]:
    return {s["source"]: s for s in _licence(out)["sources"]}


def test_every_source_is_recorded_with_its_tier(ranked: Path, tmp_path: Path) -> None:
    api.export(ranked, ["c1"], out=tmp_path / "out")
    got = _sources(tmp_path / "out")
    assert got["benchmark sim-basic"]["expression"] == "MIT"
    assert got["seed sim-starter"]["expression"] == "MIT"  # the built-in seeds are MIT
    assert got[f"ingest of {TRACES.name}"]["expression"] == "MIT"
    assert {s["tier"] for s in got.values()} == {"permissive"}
    assert _licence(tmp_path / "out")["unrecorded"] == []


@pytest.mark.parametrize("seed", sorted(p.name for p in SEEDS.iterdir()))
def test_the_built_in_seeds_are_mit(seed: str) -> None:
    assert load_seed(SEEDS / seed).licence == "MIT"


def test_a_seed_without_a_licence_is_refused_unless_the_user_vouches(
    ranked: Path, tmp_path: Path
) -> None:
    ws = _copy(ranked, tmp_path)
    manifest = json.loads((ws / "manifest.json").read_text())
    (ws / "manifest.json").write_text(json.dumps({**manifest, "seed_license": None}))
    with pytest.raises(UserError, match=r"manifest.json: seed_license: the seed sim-starter "):
        api.export(ws, ["c1"], out=tmp_path / "out")
    assert not (tmp_path / "out").exists()
    api.export(ws, ["c1"], out=tmp_path / "out", allow_restricted=True)
    assert _licence(tmp_path / "out")["tier"] == "restricted"
    # a workspace made before seeds carried a licence: recorded as unrecorded, not refused
    del manifest["seed_license"]
    (ws / "manifest.json").write_text(json.dumps(manifest))
    api.export(ws, ["c1"], out=tmp_path / "old")
    assert "seed sim-starter" not in _sources(tmp_path / "old")
    assert _licence(tmp_path / "old")["unrecorded"][0].startswith("seed:")


def test_a_seed_licence_is_checked_when_the_seed_is_loaded(tmp_path: Path) -> None:
    seed = tmp_path / "seeds" / "mine"
    shutil.copytree(SEEDS / "sim-starter", seed)
    toml = seed / "seed.toml"
    toml.write_text(toml.read_text().replace('license = "MIT"', 'license = "MIT AND"'))
    with pytest.raises(UserError, match=r"seed.toml: license: 'MIT AND' is not an SPDX"):
        load_seed(seed)
    toml.write_text(toml.read_text().replace('"MIT AND"', '"GPL-3.0-only"'))
    ws = tmp_path / "ws"
    store = ["--store", str(tmp_path)]
    shutil.copytree(SEEDS.parent / "questions" / "sim-basic", tmp_path / "questions" / "sim-basic")
    assert main(["init", str(ws), "--seed", "mine", "--questions", "sim-basic", *store]) == 0
    assert json.loads((ws / "manifest.json").read_text())["seed_license"] == "GPL-3.0-only"


def _skills_version(ws: Path) -> str:
    with sqlite3.connect(ws / "harness.db") as conn:
        return str(conn.execute("SELECT skills_version FROM branches LIMIT 1").fetchone()[0])


def _sidecar(ws: Path, entries: dict) -> Path:
    path = ws / "skills" / _skills_version(ws) / SKILLS_SIDECAR
    path.write_text(json.dumps(entries))
    return path


def test_an_imported_skills_licence_joins_the_strictest(ranked: Path, tmp_path: Path) -> None:
    ws = _copy(ranked, tmp_path)
    fm = {"name": "dates", "description": "Dates.", "license": "GPL-3.0-only"}
    _sidecar(ws, {"dates.md": fm})
    with pytest.raises(
        UserError, match=r"_skills.json: dates.md.license: the skill dates .*copyleft"
    ):
        api.export(ws, ["c1"], out=tmp_path / "a")
    api.export(ws, ["c1"], out=tmp_path / "a", allow_copyleft=True)
    assert _licence(tmp_path / "a")["tier"] == "strong-copyleft"
    assert _sources(tmp_path / "a")["skill dates"]["expression"] == "GPL-3.0-only"
    # OR: the licensee picks the lenient one
    _sidecar(ws, {"dates.md": {**fm, "license": "GPL-3.0-only OR Apache-2.0"}})
    api.export(ws, ["c1"], out=tmp_path / "b")
    assert _licence(tmp_path / "b")["tier"] == "permissive"


def test_a_free_text_skill_licence_counts_restricted(ranked: Path, tmp_path: Path) -> None:
    """The Agent Skills spec allows free text; import keeps it, export cannot class it."""
    ws = _copy(ranked, tmp_path)
    text = "Proprietary. LICENSE.txt has complete terms\x1b[2J"
    _sidecar(ws, {"dates.md": {"name": "dates", "description": "Dates.", "license": text}})
    with pytest.raises(UserError, match=r"dates.md.license: .*not an SPDX expression") as e:
        api.export(ws, ["c1"], out=tmp_path / "a")
    assert "\x1b" not in str(e.value)
    api.export(ws, ["c1"], out=tmp_path / "a", allow_restricted=True)
    assert "\x1b" not in _sources(tmp_path / "a")["skill dates"]["expression"]


def test_import_and_export_skills_keep_the_licence(tmp_path: Path) -> None:
    src = tmp_path / "in" / "dates"
    src.mkdir(parents=True)
    (src / "SKILL.md").write_text(
        "---\nname: dates\ndescription: Dates of client files.\nlicense: Apache-2.0\n---\n# D\n"
    )
    store = tmp_path / "store"
    assert main(["import-skills", str(src.parent), "--name", "imp", "--store", str(store)]) == 0
    # the seed's licence covers the prompts (from sim-starter, MIT) and unlicensed skills
    assert load_seed(store / "seeds" / "imp").licence == "MIT"
    ws = tmp_path / "ws"
    shutil.copytree(SEEDS.parent / "questions" / "sim-basic", store / "questions" / "sim-basic")
    args = ["--questions", "sim-basic", "--store", str(store)]
    assert main(["init", str(ws), "--seed", "imp", *args]) == 0
    out = tmp_path / "out"
    assert (
        main(["export-skills", "-w", str(ws), "--version", "v1", "--out", str(out), *args[2:]]) == 0
    )
    assert (
        "\nlicense: Apache-2.0\n" in (out / ".agents" / "skills" / "dates" / "SKILL.md").read_text()
    )


def test_ingested_traces_carry_their_licence(ranked: Path, tmp_path: Path) -> None:
    ws = _copy(ranked, tmp_path)
    with pytest.raises(UserError, match=r"--license: 'Foo-1.0' is not an SPDX licence id"):
        api.ingest(ws, TRACES, license="Foo-1.0")
    # a re-ingest declaring another licence records it
    api.ingest(ws, TRACES, license="CC-BY-NC-4.0")
    with pytest.raises(UserError, match=r"harness.db: ingest run ingest-\w+ license: .*non-comm"):
        api.export(ws, ["c1"], out=tmp_path / "a")
    api.ingest(ws, TRACES)  # none declared
    with pytest.raises(UserError, match=r"the ingest of inspect_log.json declares no licence"):
        api.export(ws, ["c1"], out=tmp_path / "a")
    assert not (tmp_path / "a").exists()


def test_traces_ingested_after_the_rollout_are_not_its_source(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    assert main(["init", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    api.fork(ws, branches=2, pool="all", task_types=["dates"], limit=3, rollout_id="c1")
    api.rank(ws, "c1", verifiers=["completed", "checker"], remember=False)
    api.ingest(ws, TRACES)  # unlicensed, but after c1 ran: it cannot have shaped c1
    api.export(ws, ["c1"], out=tmp_path / "out")
    assert not any(s.startswith("ingest of") for s in _sources(tmp_path / "out"))


def test_to_benchmark_writes_the_licence(tmp_path: Path) -> None:
    store = tmp_path / "store"
    api.ingest(tmp_path / "x", TRACES, to_benchmark="insp", store=store, license="CC-BY-4.0")
    toml = tomllib.loads((store / "questions" / "insp" / "benchmark.toml").read_text())
    assert toml["license"] == "CC-BY-4.0"
    assert (
        main(
            [
                "ingest",
                "-w",
                str(tmp_path / "y"),
                "--file",
                str(TRACES),
                "--to-benchmark",
                "b2",
                "--store",
                str(store),
                "--license",
                "MIT AND",
            ]
        )
        == 2
    )
    assert not (store / "questions" / "b2").exists()


@pytest.mark.parametrize(
    ("expression", "tier"),
    [
        ("MIT AND GPL-3.0-only", Tier.STRONG_COPYLEFT),  # AND: the strictest
        ("MIT OR GPL-3.0-only", Tier.PERMISSIVE),  # OR: the least strict
        ("(MIT OR GPL-3.0-only) AND CC-BY-NC-4.0", Tier.RESTRICTED),
        ("LGPL-2.1-only AND (Apache-2.0 OR AGPL-3.0-only)", Tier.WEAK_COPYLEFT),
        ("GPL-2.0-only WITH Classpath-exception-2.0", Tier.STRONG_COPYLEFT),
    ],
)
def test_folding(expression: str, tier: Tier) -> None:
    assert expression_tier(expression, "x") is tier


def test_a_promoted_seed_keeps_the_workspace_seeds_licence(ranked: Path, tmp_path: Path) -> None:
    ws = _copy(ranked, tmp_path)
    run_id = api.evaluate(ws, "v1").run_id
    promoted = api.promote(ws, "v1", eval_run=run_id, name="p1", store=tmp_path / "store")
    assert load_seed(promoted.seed).licence == "MIT"


def test_an_imported_seed_with_an_unlicensed_skill_declares_none(tmp_path: Path) -> None:
    for name, extra in (("dates", "license: MIT\n"), ("units", "")):
        (tmp_path / "in" / name).mkdir(parents=True)
        (tmp_path / "in" / name / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: About {name}.\n{extra}---\n# D\n"
        )
    store = tmp_path / "store"
    assert (
        main(["import-skills", str(tmp_path / "in"), "--name", "imp", "--store", str(store)]) == 0
    )
    assert load_seed(store / "seeds" / "imp").licence is None
