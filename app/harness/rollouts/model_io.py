"""How the harness talks to each model: response formats, reply attempts, tool-mode checks.

The response format used for structured replies (diagnoses, edits) starts at what litellm says
the model supports (`structured_output = "auto"`) or at the configured level. When a server
rejects a level, the ladder moves one level down; the level that works is remembered per model
in the workspace (`model_io.json`, written atomically) so later runs start there, and the
change is logged. Simulated models (`sim/*`) use no response format.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from loguru import logger

from app.harness.workspace.atomic import read_json, write_json_atomic
from app.harness.workspace.clock import now_iso
from app.harness.workspace.config import RunConfig
from app.harness.workspace.harness_log import HarnessLog
from app.harness.workspace.harness_log.calls import ReplyAttemptRecord
from core.redact import redact_url_credentials
from core.structured import LEVELS, FormatLadder

MODEL_IO_FILE = "model_io.json"


def detect_level(model: str, api_base: str | None) -> str:
    """The strongest response format litellm says `model` takes (no network)."""
    from app.providers.litellm_provider import load_litellm

    litellm = load_litellm()
    try:
        _, provider, _, _ = litellm.get_llm_provider(model, api_base=api_base)
    except Exception:
        return "prompt"
    try:
        if litellm.supports_response_schema(model=model, custom_llm_provider=provider):
            return "json_schema"
    except Exception:
        pass
    try:
        params = litellm.get_supported_openai_params(model=model, custom_llm_provider=provider)
    except Exception:
        params = None
    if params and "response_format" in params:
        # A local OpenAI-compatible server (llama-cpp-python and kin) takes a schema inside
        # JSON mode; a hosted API that does not is moved down a level on its first rejection.
        return "json_object_schema" if api_base else "json_object"
    return "prompt"


def supports_tools(model: str) -> bool | None:
    """Whether litellm lists `model` as able to call functions (None: cannot tell)."""
    from app.providers.litellm_provider import load_litellm

    litellm = load_litellm()
    try:
        return bool(litellm.supports_function_calling(model=model))
    except Exception:
        return None


class ModelIO:
    """Per-workspace response-format ladders, one per model."""

    def __init__(self, root: Path, config: RunConfig) -> None:
        self.path = Path(root) / MODEL_IO_FILE
        self.config = config
        # by model and the role's api_base: two servers behind one alias may differ in format
        self._ladders: dict[tuple[str, str | None], FormatLadder] = {}
        self._state: dict[str, Any] = self._read()

    def _read(self) -> dict[str, Any]:
        if not self.path.exists():
            return {"formats": {}}
        try:
            data = read_json(self.path)
        except Exception as exc:  # only a memo: a bad file costs a re-detection, never the run
            logger.warning(
                "{}: unreadable ({}); response formats are detected again",
                self.path,
                type(exc).__name__,
            )
            return {"formats": {}}
        if not isinstance(data, dict) or not isinstance(data.get("formats"), dict):
            return {"formats": {}}
        return data

    def ladder(self, role: str) -> FormatLadder | None:
        model = self.config.models[role]
        if model.startswith("sim/"):
            return None
        base = self.config.endpoint(role).api_base
        if (model, base) not in self._ladders:
            self._ladders[model, base] = FormatLadder(
                model,
                self._initial_level(model, base),
                on_change=lambda m, level, reason: self._changed(m, level, reason, base),
            )
        return self._ladders[model, base]

    def _initial_level(self, model: str, base: str | None) -> str:
        if self.config.structured_output != "auto":
            return self.config.structured_output
        saved = self._state["formats"].get(model, {})
        if saved.get("level") in LEVELS and saved.get("api_base") == _as_stored(base):
            known: str = saved["level"]
            return known
        level = detect_level(model, base)
        self._remember(model, level, "detected from litellm's model information", base)
        return level

    def _changed(self, model: str, level: str, reason: str, base: str | None) -> None:
        logger.warning(
            "model {} rejected a response format; using '{}' from now on (remembered "
            "in {}; set structured_output to choose one): {}",
            model,
            level,
            self.path.name,
            reason[:200],
        )
        self._remember(model, level, reason, base)

    def _remember(self, model: str, level: str, reason: str, base: str | None) -> None:
        entry = self._state["formats"].setdefault(model, {})
        history = entry.get("history", [])[-9:]
        history.append({"level": level, "reason": reason[:300], "at": now_iso()})
        entry.update(level=level, api_base=_as_stored(base), history=history, updated_at=now_iso())
        try:
            write_json_atomic(self.path, self._state)
        except OSError as exc:
            logger.warning("{}: could not save the response format ({})", self.path, exc)


def _as_stored(base: str | None) -> str | None:
    """An api_base as model_io.json keeps it, credentials redacted (the atomic writer scrubs
    them anyway): comparing a raw URL with the stored one would never match, and a format a
    server rejected would be tried again on every run. The placeholder is stable per secret."""
    return redact_url_credentials(base) if base else base


def tool_mode_warning(config: RunConfig) -> str | None:
    """A warning when `skill_mode = "tool"` meets an agent model litellm says cannot call
    functions (before any work starts)."""
    model = config.agent_model
    if config.skill_mode != "tool" or model.startswith("sim/"):
        return None
    if supports_tools(model):
        return None
    return (
        f"skill_mode = 'tool' but litellm does not list agent_model {model} as able to "
        "call functions: the agent may never call read_skill and so never see its skill "
        "file; consider skill_mode = 'inline'"
    )


def record_attempts(
    log: HarnessLog, run_id: str, purpose: str, calls: list[tuple[str, tuple[dict[str, Any], ...]]]
) -> None:
    """One `reply_attempts` row per request of each structured call (one transaction)."""
    at = now_iso()
    rows = [
        ReplyAttemptRecord(
            run_id=run_id,
            purpose=purpose,
            subject=subject,
            attempt=a.get("attempt"),
            response_format=a.get("response_format"),
            status=a.get("status"),
            error=a.get("error", ""),
            reply=a.get("reply", ""),
            at=at,
        )
        for subject, attempts in calls
        for a in attempts
    ]
    log.add_reply_attempts(rows)


def no_tool_calls(log: HarnessLog, run_id: str) -> bool:
    """True when no prediction of the run called any tool."""
    return not log.any_tool_call(run_id)
