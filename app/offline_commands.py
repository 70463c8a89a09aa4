"""Handlers of `estimate` (and `train --dry-run`), and the `sim/oracle` note of `train`."""

from __future__ import annotations

from pathlib import Path


def train_models(workspace: Path, train_id: str) -> list[str]:
    """The models a train run recorded in its provenance (none when it has no row)."""
    from app.harness.workspace.log_reader import open_reader

    db = Path(workspace) / "harness.db"
    if not train_id or not db.is_file():
        return []
    with open_reader(db) as log:
        row = log.run(train_id)
    models = row.provenance.get("models") if row is not None else None
    return [str(m) for m in models.values()] if isinstance(models, dict) else []
