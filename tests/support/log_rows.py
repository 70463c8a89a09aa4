"""Rows written straight into a test's harness log, given as dicts by column name (a missing
column is NULL): each becomes its table's record type, as the harness itself writes them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from app.harness.workspace.harness_log import RECORD_TYPES, HarnessLog
from app.harness.workspace.harness_log.predictions import PredictionRecord


def insert_rows(
    log: HarnessLog, table: str, rows: Sequence[Mapping[str, Any]], *, verb: str = "INSERT"
) -> None:
    kind = RECORD_TYPES[table]
    log.insert([kind.from_columns(r) for r in rows], verb=verb)


def upsert_predictions(log: HarnessLog, rows: Sequence[Mapping[str, Any]]) -> None:
    """`HarnessLog.upsert_predictions` of rows given as dicts."""
    log.upsert_predictions([PredictionRecord.from_columns(r) for r in rows])
