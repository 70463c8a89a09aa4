"""Only the harness log's package runs SQL against the log (app/harness/workspace/harness_log/,
docs/architecture.md#the-harness-log): every other module of `app/` and `core/` writes and
reads through its typed tables, so a schema change stays in the package.

Each module is tokenized: a string that reads as an SQL statement, or a call of
`.execute(`, `.executemany(`, `.executescript(` or `.query(`, outside the package is reported
as file:line. Modules with their own database (not the harness log) are exempt, each with
its reason; a stale exemption fails too, so the list can only shrink.
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("app", "core")
STORE = "app/harness/workspace/harness_log/"

# Whole modules that keep their SQL: they open a database of their own, not harness.db.
OWN_DATABASE: dict[str, str] = {
    "app/providers/cache.py": "the response cache's own database (response_cache.db)",
    "app/harness/ingest/spans.py": "a private temporary database spans are spilled to",
}
# Modules whose `.query(` calls are not SQL; any SQL string or `.execute(` there still fails.
NOT_SQL_QUERY: dict[str, str] = {
    "app/tui/screens/base.py": "Textual's DOM query (`Screen.query`)",
}

SQL = re.compile(
    r"\b(SELECT\b[\s\S]*\bFROM|INSERT\s+(OR\s+\w+\s+)?INTO|UPDATE\s+[\w{}.]+\s+SET|DELETE\s+FROM"
    r"|CREATE\s+(UNIQUE\s+|VIRTUAL\s+)?(TABLE|INDEX)|DROP\s+TABLE|ALTER\s+TABLE|PRAGMA\s+\w+)\b"
)
EXECUTE_CALLS = frozenset({"execute", "executemany", "executescript"})


def sql_sites(source: str, *, query_is_sql: bool = True) -> list[tuple[int, str]]:
    """(line, what) of every SQL string and database call in a module's source."""
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    found: list[tuple[int, str]] = []
    calls = EXECUTE_CALLS | ({"query"} if query_is_sql else set())
    for i, tok in enumerate(tokens):
        if tok.type == tokenize.STRING and SQL.search(tok.string):
            found.append((tok.start[0], f"SQL string {tok.string[:60]!r}"))
        elif (
            tok.type == tokenize.NAME
            and tok.string in calls
            and i > 0
            and tokens[i - 1].string == "."
            and i + 1 < len(tokens)
            and tokens[i + 1].string == "("
        ):
            found.append((tok.start[0], f".{tok.string}( call"))
    return found


def modules() -> list[str]:
    return sorted(
        str(path.relative_to(ROOT))
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
    )


def test_only_the_store_runs_sql() -> None:
    offenders = []
    for name in modules():
        if name.startswith(STORE) or name in OWN_DATABASE:
            continue
        source = (ROOT / name).read_text(encoding="utf-8")
        for line, what in sql_sites(source, query_is_sql=name not in NOT_SQL_QUERY):
            offenders.append(f"{name}:{line}: {what}")
    assert not offenders, "SQL outside app/harness/workspace/harness_log/:\n" + "\n".join(offenders)


def test_exemptions_are_still_needed() -> None:
    stale = [
        name for name in OWN_DATABASE if not sql_sites((ROOT / name).read_text(encoding="utf-8"))
    ]
    stale += [
        name
        for name in NOT_SQL_QUERY
        if not sql_sites((ROOT / name).read_text(encoding="utf-8"), query_is_sql=True)
    ]
    assert not stale, f"exempt modules without SQL or queries (drop them from the lists): {stale}"


def test_the_store_itself_is_found_to_run_sql() -> None:
    """The detector sees what the package does (else an empty report would prove nothing)."""
    source = (ROOT / STORE / "predictions.py").read_text(encoding="utf-8")
    assert sql_sites(source)


def test_sql_strings_and_calls_are_reported_by_line() -> None:
    source = (
        "x = 1\n"
        'rows = log.query("SELECT a FROM t WHERE b = ?", (1,))\n'
        "conn.execute(sql)\n"
        'note = "select the rows you want"  # prose, not SQL\n'
        'f"UPDATE {table} SET a = 1"\n'
    )
    assert sql_sites(source) == [
        (2, ".query( call"),
        (2, "SQL string '\"SELECT a FROM t WHERE b = ?\"'"),
        (3, ".execute( call"),
        (5, "SQL string 'f\"UPDATE {table} SET a = 1\"'"),
    ]
    assert sql_sites("widgets = self.query(DataTable)\n", query_is_sql=False) == []
