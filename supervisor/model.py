"""The schema of ``.state.json`` as a pydantic v2 model (seed 002 §8).

Keys are camelCase on disk, named through :class:`supervisor.fields.F`, so a
bash-era file loads unchanged and unknown keys (``preloadedFiles``,
``touchedDirs``, ``lastEditFile_*``…) survive. The CLI and the supervisor
validate every state they write with :func:`validate_state`; the state itself
stays a plain dict, so absent keys stay absent and unknown ones untouched.

Not imported on the hook path (pydantic costs 3-5x the whole hook budget).
"""

from __future__ import annotations

import typing as t

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from supervisor.fields import F
from supervisor.identity import PID_MAX
from supervisor.store import State, StateError

Lifecycle = t.Literal["active", "completed", "dehydrating", "restarting", "resuming"]


class _Schema(BaseModel):
    model_config = ConfigDict(
        extra="allow", validate_by_name=True, validate_by_alias=True, serialize_by_alias=True
    )


class PhaseDeclaration(_Schema):
    """One entry of ``phases``: ``{major, minor, name, proof?}``."""

    major: int
    minor: int = 0
    name: str
    proof: list[str] | None = None


class PhaseRecord(_Schema):
    """A ``phaseHistory`` entry recorded with proof: ``{phase, ts, proof}``."""

    phase: str
    ts: str | None = None
    proof: dict[str, t.Any] | None = None


class SessionState(_Schema):
    """Everything a session's components agree on. All fields are optional on disk."""

    # identity
    pid: int | None = Field(None, alias=F.PID, ge=0, le=PID_MAX)
    pid_start: str | None = Field(None, alias=F.PID_START)
    session_id: str | None = Field(None, alias=F.SESSION_ID)
    fleet_pane_id: str | None = Field(None, alias=F.FLEET_PANE_ID)
    # lifecycle
    lifecycle: Lifecycle | None = Field(None, alias=F.LIFECYCLE)
    overflowed: bool | None = Field(None, alias=F.OVERFLOWED)
    overflow_conversation: str | None = Field(None, alias=F.OVERFLOW_CONVERSATION)
    kill_requested: bool | None = Field(None, alias=F.KILL_REQUESTED)
    restart_prompt: str | None = Field(None, alias=F.RESTART_PROMPT)
    loading: bool | None = Field(None, alias=F.LOADING)
    # work
    skill: str | None = Field(None, alias=F.SKILL)
    current_phase: str | None = Field(None, alias=F.CURRENT_PHASE)
    phases: list[PhaseDeclaration] | None = Field(None, alias=F.PHASES)
    phase_history: list[str | PhaseRecord] | None = Field(None, alias=F.PHASE_HISTORY)
    completed_skills: list[str] | None = Field(None, alias=F.COMPLETED_SKILLS)
    target_file: str | None = Field(None, alias=F.TARGET_FILE)
    log_template: str | None = Field(None, alias=F.LOG_TEMPLATE)
    session_description: str | None = Field(None, alias=F.SESSION_DESCRIPTION)
    search_keywords: list[str] | None = Field(None, alias=F.SEARCH_KEYWORDS)
    keywords: str | None = Field(None, alias=F.KEYWORDS)
    # context
    context_usage: float | None = Field(None, alias=F.CONTEXT_USAGE, ge=0)
    context_usage_at: str | None = Field(None, alias=F.CONTEXT_USAGE_AT)
    context_window_size: int | None = Field(None, alias=F.CONTEXT_WINDOW_SIZE, gt=0)
    dehydrate_tool_calls: int | None = Field(None, alias=F.DEHYDRATE_TOOL_CALLS, ge=0)
    # heartbeat
    tool_calls_since_last_log: int | None = Field(None, alias=F.TOOL_CALLS_SINCE_LAST_LOG, ge=0)
    tool_calls_by_transcript: dict[str, int] | None = Field(None, alias=F.TOOL_CALLS_BY_TRANSCRIPT)
    tool_use_without_logs_warn_after: int | None = Field(None, alias=F.WARN_AFTER, ge=0)
    tool_use_without_logs_block_after: int | None = Field(None, alias=F.BLOCK_AFTER, ge=0)
    # timestamps
    started_at: str | None = Field(None, alias=F.STARTED_AT)
    last_heartbeat: str | None = Field(None, alias=F.LAST_HEARTBEAT)


def field_aliases() -> set[str]:
    """The on-disk keys the model declares (pinned to :data:`supervisor.fields.ALL_FIELDS`)."""
    return {info.alias for info in SessionState.model_fields.values() if info.alias}


def parse(state: State) -> SessionState:
    """Validate a state dict, or raise :class:`StateError` naming the first bad field."""
    try:
        return SessionState.model_validate(state)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err.get("loc", ())) or "(top level)"
        raise StateError(
            f"field {where} would be invalid ({err.get('msg', 'bad value')}, got {err.get('input')!r})"
        ) from None


def validate_state(state: State) -> None:
    """The ``validate`` hook of :func:`supervisor.store.update_state`."""
    parse(state)
