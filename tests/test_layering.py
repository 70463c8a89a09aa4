"""The import structure of `app/` and `core/`: no cycles, the core never imports the app, and
each layer imports only the layers below it.

Every import counts, at module level and inside functions: a function-local import hides a
cycle from Python's loader, not from the design. Only imports under `if TYPE_CHECKING:` are left
out, since they never run. The layers are described in docs/architecture.md#layers.
"""

from __future__ import annotations

import ast
import functools
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("app", "core")

# Import edges (importer, imported) that close a known cycle still to be broken: the CLI modules
# import each other (once their shared parts move below them, these entries go). Each
# entry must name an edge that exists (test_allowed_cycle_edges_are_still_needed), so a fixed
# cycle cannot leave a stale exemption behind.
ALLOWED_CYCLE_EDGES: frozenset[tuple[str, str]] = frozenset()

# The layers of docs/architecture.md#layers and what each may import. The command line is
# app/launch.py and everything under app/cli/; the API is app/api/ and the top-level modules
# below it that build what it returns (API_MODULES); any other top-level module of app/ is
# "support". The harness is five rooms, each its own layer: workspace/ at the bottom, then
# skills/, then rollouts/, with training/ and data/ side by side on top (neither imports the
# other).
CLI_MODULES = frozenset({"app.launch"})
API_MODULES = frozenset(
    {
        "app.api",
        "app.api_args",
        "app.demo",
        "app.distill",
        "app.estimate",
        "app.learning_report",
        "app.report",
    }
)
HARNESS_ROOMS: dict[str, frozenset[str]] = {
    "harness.workspace": frozenset({"core", "support", "harness.workspace"}),
    "harness.skills": frozenset({"core", "support", "harness.workspace", "harness.skills"}),
    "harness.tools": frozenset({"core", "support", "harness.workspace", "harness.tools"}),
    "harness.rollouts": frozenset(
        {
            "core",
            "support",
            "providers",
            "harness.workspace",
            "harness.skills",
            "harness.tools",
            "harness.rollouts",
        }
    ),
    "harness.training": frozenset(
        {
            "core",
            "support",
            "providers",
            "harness.workspace",
            "harness.skills",
            "harness.tools",
            "harness.rollouts",
            "harness.training",
        }
    ),
    "harness.data": frozenset(
        {
            "core",
            "support",
            "providers",
            "harness.workspace",
            "harness.skills",
            "harness.tools",
            "harness.rollouts",
            "harness.data",
        }
    ),
    "harness.serving": frozenset(
        {
            "core",
            "support",
            "providers",
            "harness.workspace",
            "harness.skills",
            "harness.rollouts",
            "harness.serving",
        }
    ),
    # bring your own agent (docs/agents.md): beside serving; the rollouts' Session builds the
    # configured agent through LAYER_EXCEPTIONS' one module
    "harness.agents": frozenset(
        {
            "core",
            "support",
            "providers",
            "harness.workspace",
            "harness.skills",
            "harness.tools",
            "harness.rollouts",
            "harness.agents",
        }
    ),
    # trace ingest writes what a rollout would have written (docs/architecture.md#layers)
    "harness.ingest": frozenset(
        {
            "core",
            "support",
            "harness.workspace",
            "harness.skills",
            "harness.tools",
            "harness.rollouts",
            "harness.ingest",
        }
    ),
}
MAY_IMPORT: dict[str, frozenset[str]] = {
    "core": frozenset({"core"}),
    "support": frozenset({"core", "support"}),
    "providers": frozenset({"core", "support", "providers"}),
    # the package itself (app/harness/__init__.py, a docstring)
    "harness": frozenset({"core", "support"}),
    **HARNESS_ROOMS,
    "tui": frozenset({"core", "support", *HARNESS_ROOMS, "tui"}),
    "api": frozenset({"core", "support", "providers", *HARNESS_ROOMS, "api"}),
    "cli": frozenset({"core", "support", "providers", *HARNESS_ROOMS, "tui", "api", "cli"}),
}
# Single modules a layer may import from a layer above or beside it, with the reason.
LAYER_EXCEPTIONS: dict[tuple[str, str], str] = {
    ("providers", "app.harness.workspace.config"): (
        "the provider factory builds providers from RunConfig"
    ),
    ("harness.agents", "app.harness.ingest.spans"): (
        "an outside agent's own trace file is OTLP or OpenInference spans: the ingest span "
        "parsers read it (app/harness/agents/agent_trace.py); ingest never imports agents"
    ),
    ("harness.agents", "app.harness.ingest.detect"): (
        "which span format a line of that trace file is (a module of no imports)"
    ),
    ("harness.rollouts", "app.harness.agents.training_seam"): (
        "Session builds the configured outside agent (RunConfig agent_kind, docs/agents.md); "
        "the rollouts call it only through ExternalAgent, declared in inference.py"
    ),
}

Graph = dict[str, set[str]]


def project_modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the packages (a package is its
    `__init__.py`)."""
    modules: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def _is_type_checking_guard(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement that can run, at any depth, skipping `if TYPE_CHECKING:` bodies
    (their `else:` branch runs, so it is kept)."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        if isinstance(node, ast.If) and _is_type_checking_guard(node):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def _deepest_module(dotted: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of `dotted` that is a project module (None: outside the project)."""
    parts = dotted.split(".")
    while parts:
        name = ".".join(parts)
        if name in modules:
            return name
        parts.pop()
    return None


def _absolute_base(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    """The module a `from X import ...` reads from, with relative levels resolved."""
    if node.level == 0:
        return node.module or ""
    package = importer.split(".") if is_package else importer.split(".")[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imported_modules(importer: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules `importer` imports: `import a.b.c` and `from a.b import c` each give
    one edge, to `a.b.c` if that module exists, else to the deepest existing prefix."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in _runtime_imports(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            base = _absolute_base(node, importer, path.name == "__init__.py")
            targets = [f"{base}.{alias.name}" if base else alias.name for alias in node.names]
        for target in targets:
            module = _deepest_module(target, modules)
            if module is not None and module != importer:
                found.add(module)
    return found


def import_graph_here() -> Graph:
    modules = project_modules()
    return {name: imported_modules(name, path, modules) for name, path in modules.items()}


@functools.cache
def import_graph() -> Graph:
    """`import_graph_here`, parsed in a fresh interpreter: once any code in a CPython 3.11
    process has hit a RecursionError inside the parser, `ast.parse` can raise "SystemError: AST
    constructor recursion depth mismatch" (python/cpython#106905), so what earlier tests did in
    the suite's process must not decide this one."""
    script = (
        "import json; from tests.test_layering import import_graph_here as g; "
        "print(json.dumps({k: sorted(v) for k, v in g().items()}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return {name: set(targets) for name, targets in json.loads(done.stdout).items()}


def strongly_connected_components(graph: Graph) -> list[list[str]]:
    """Tarjan's algorithm, iteratively (no recursion limit on deep chains)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            advanced = False
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = counter
                    counter += 1
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph[succ]))))
                    advanced = True
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def shortest_cycle_through(graph: Graph, start: str, members: set[str]) -> list[str]:
    """The shortest cycle from `start` back to it inside `members`, as `[start, ..., start]`."""
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for node in frontier:
            for succ in sorted(graph[node] & members):
                if succ == start:
                    backwards = [node]
                    while backwards[-1] != start:
                        backwards.append(came_from[backwards[-1]])
                    return [*reversed(backwards), start]
                if succ not in came_from:
                    came_from[succ] = node
                    following.append(succ)
        frontier = following
    raise AssertionError(f"no cycle through {start} in {sorted(members)}")


def without_allowed_edges(graph: Graph) -> Graph:
    return {
        src: {dst for dst in targets if (src, dst) not in ALLOWED_CYCLE_EDGES}
        for src, targets in graph.items()
    }


def cycles(graph: Graph) -> list[list[str]]:
    """For every module on a cycle, the shortest cycle through it (each cycle listed once)."""
    found: list[list[str]] = []
    seen: set[frozenset[tuple[str, str]]] = set()
    for component in strongly_connected_components(graph):
        if len(component) < 2:
            continue
        for module in component:
            path = shortest_cycle_through(graph, module, set(component))
            edges = frozenset(zip(path, path[1:], strict=False))
            if edges not in seen:
                seen.add(edges)
                found.append(path)
    return found


def test_no_import_cycles() -> None:
    found = cycles(without_allowed_edges(import_graph()))
    assert not found, "import cycles (every import counts, function-local too):\n" + "\n".join(
        " -> ".join(path) for path in found
    )


def test_core_never_imports_app() -> None:
    leaks = sorted(
        f"{src} imports {dst}"
        for src, targets in import_graph().items()
        if src.split(".")[0] == "core"
        for dst in targets
        if dst.split(".")[0] == "app"
    )
    assert not leaks, "core/ must not import app/ (docs/architecture.md#layers):\n" + "\n".join(
        leaks
    )


def layer_of(module: str) -> str:
    parts = module.split(".")
    if parts[0] == "core":
        return "core"
    if module.startswith("app.api."):  # the API's domain modules sit where app.api does
        return layer_of("app.api")
    if len(parts) > 2 and parts[1] == "harness":
        return f"harness.{parts[2]}"
    if module in CLI_MODULES:
        return "cli"
    if module in API_MODULES:
        return "api"
    if len(parts) > 2 or (len(parts) == 2 and parts[1] in ("harness", "providers", "tui", "cli")):
        return parts[1]
    return "support"


def layer_violations(graph: Graph) -> list[str]:
    found = []
    for src, targets in sorted(graph.items()):
        layer = layer_of(src)
        for dst in sorted(targets):
            if layer_of(dst) in MAY_IMPORT[layer] or (layer, dst) in LAYER_EXCEPTIONS:
                continue
            found.append(f"{src} ({layer}) imports {dst} ({layer_of(dst)})")
    return found


def test_each_layer_imports_only_the_layers_below_it() -> None:
    found = layer_violations(import_graph())
    assert not found, "imports across layers (docs/architecture.md#layers):\n" + "\n".join(found)


def cli_imports_of_the_api(graph: Graph) -> list[str]:
    """Imports of the command line (app/cli/) by the API or a module it builds on: the API is
    what the command line and other programs call, so it must work without it."""
    return sorted(
        f"{src} imports {dst}"
        for src, targets in graph.items()
        if layer_of(src) == "api"
        for dst in targets
        if layer_of(dst) == "cli"
    )


def test_the_api_never_imports_the_cli() -> None:
    """The CLI calls the API, never the other way round: app/api/ must work without the CLI."""
    found = cli_imports_of_the_api(import_graph())
    assert not found, (
        "the API (app/api/, app/api_args.py, app/report.py, app/estimate.py, "
        "app/learning_report.py, app/distill.py, app/demo.py) imports the command line; move "
        "what it needs out of app/cli/:\n" + "\n".join(found)
    )


def test_allowed_cycle_edges_are_still_needed() -> None:
    graph = import_graph()
    stale = sorted(edge for edge in ALLOWED_CYCLE_EDGES if edge[1] not in graph.get(edge[0], ()))
    assert not stale, f"these allowed cycle edges no longer exist, remove them: {stale}"


# ------------------------------------------------------------------- the checker on small graphs


def test_a_cycle_is_reported_as_a_path() -> None:
    graph: Graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}
    assert cycles(graph) == [["a", "b", "c", "a"]]


def test_every_cycle_of_a_tangle_is_reported() -> None:
    graph: Graph = {"a": {"b"}, "b": {"a", "c"}, "c": {"b"}}
    assert cycles(graph) == [["a", "b", "a"], ["c", "b", "c"]]


def test_an_acyclic_graph_has_no_cycles() -> None:
    graph: Graph = {"a": {"b", "c"}, "b": {"c"}, "c": set()}
    assert cycles(graph) == []


def test_modules_fall_in_their_layers() -> None:
    assert [
        layer_of(m)
        for m in (
            "core.evolution.gate",
            "app.errors",
            "app",
            "app.providers.sim.world",
            "app.harness",
            "app.harness.workspace",
            "app.harness.workspace.harness_log.runs",
            "app.harness.training.runner",
            "app.tui.screens.base",
            "app.cli",
            "app.cli.judge_quality",
            "app.launch",
            "app.api",
            "app.api.train",
            "app.report",
        )
    ] == [
        "core",
        "support",
        "support",
        "providers",
        "harness",
        "harness.workspace",
        "harness.workspace",
        "harness.training",
        "tui",
        "cli",
        "cli",
        "cli",
        "api",
        "api",
        "api",
    ]
    assert cli_imports_of_the_api(
        {"app.report": {"app.cli._output"}, "app.cli.report": {"app.report"}}
    ) == ["app.report imports app.cli._output"]
    assert layer_violations(
        {"app.harness.workspace.log": {"app.tui.data"}, "app.tui.data": set()}
    ) == ["app.harness.workspace.log (harness.workspace) imports app.tui.data (tui)"]


def test_a_room_importing_a_room_above_or_beside_it_is_a_violation() -> None:
    graph: Graph = {
        "app.harness.workspace.log": {"app.harness.training.runner"},
        "app.harness.skills.activation": {"app.harness.rollouts.session"},
        "app.harness.data.fork": {"app.harness.training.pools"},
        "app.harness.training.step": {"app.harness.data.rank", "app.harness.rollouts.session"},
        "app.harness.training.runner": set(),
        "app.harness.training.pools": set(),
        "app.harness.rollouts.session": {"app.harness.workspace.log"},
        "app.harness.data.rank": set(),
    }
    assert layer_violations(graph) == [
        "app.harness.data.fork (harness.data) imports app.harness.training.pools"
        " (harness.training)",
        "app.harness.skills.activation (harness.skills) imports app.harness.rollouts.session"
        " (harness.rollouts)",
        "app.harness.training.step (harness.training) imports app.harness.data.rank (harness.data)",
        "app.harness.workspace.log (harness.workspace) imports app.harness.training.runner"
        " (harness.training)",
    ]


def test_every_harness_module_lives_in_a_room_of_the_table() -> None:
    """A new room (or a module left loose in app/harness/) needs its row in HARNESS_ROOMS and
    docs/architecture.md#layers before anything can be checked against it."""
    homeless = sorted(
        name
        for name in project_modules()
        if name.startswith("app.harness.") and layer_of(name) not in HARNESS_ROOMS
    )
    assert not homeless, f"harness modules outside the rooms of HARNESS_ROOMS: {homeless}"


def test_function_local_imports_count_and_type_checking_imports_do_not(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "import core.stats\n"
        "from app.harness.workspace import harness_log\n"
        "if TYPE_CHECKING:\n"
        "    from app.tui.app import TrainerApp\n"
        "def f():\n"
        "    from core.evolution.gate import SequentialGate\n"
        "    import app.nothing_here\n"
    )
    found = imported_modules("app.m", source, project_modules())
    assert found == {
        "core.stats",
        "app.harness.workspace.harness_log",
        "core.evolution.gate",
        "app",
    }
