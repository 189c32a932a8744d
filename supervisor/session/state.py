"""The type of ``.state.json``: every field the schema knows, for mypy.

``State`` declares once what :data:`claude_shepherd.supervisor.session.schema.SCHEMA` checks at
run time (the two are pinned together by a test). Every field is optional and may be ``null``
(legacy files have whatever subset they had), and keys the schema does not know are kept on disk
untouched. Hot modules import this only under ``if TYPE_CHECKING:``, so it costs nothing at run
time; the keys are the :class:`claude_shepherd.supervisor.session.fields.F` constants (docs/DESIGN.md §3, §8).
"""

from __future__ import annotations

import typing as t


class PhaseDeclaration(t.TypedDict, total=False):
    """One entry of ``phases``: declared by the skill at activation (major and name required)."""

    major: int
    minor: int
    name: str
    proof: list[str]


class PhaseRecord(t.TypedDict, total=False):
    """One entry of ``phaseHistory`` (older files hold a bare label string instead)."""

    phase: str
    ts: str
    proof: t.Mapping[str, str | int | float | bool]


class State(t.TypedDict, total=False):
    """``sessions/NAME/.state.json``: the fields of :class:`~claude_shepherd.supervisor.session.fields.F`."""

    # identity
    pid: int | None
    pidStart: str | None
    sessionId: str | None
    fleetPaneId: str | None
    # lifecycle (docs/DESIGN.md §3: three orthogonal fields)
    lifecycle: str | None
    overflowed: bool | None
    overflowConversation: str | None
    killRequested: bool | None
    restartPrompt: str | None
    loading: bool | None
    bootstrapConversation: str | None
    # work
    skill: str | None
    currentPhase: str | None
    phases: list[PhaseDeclaration] | None
    phaseHistory: list[str | PhaseRecord] | None
    completedSkills: list[str] | None
    targetFile: str | None
    logTemplate: str | None
    sessionDescription: str | None
    searchKeywords: list[str] | None
    keywords: str | None
    # context
    contextUsage: float | None
    contextUsageAt: str | None
    contextWindowSize: int | None
    dehydrateToolCalls: int | None
    # heartbeat (logging discipline)
    toolCallsSinceLastLog: int | None
    toolCallsByTranscript: dict[str, int] | None
    toolUseWithoutLogsWarnAfter: int | None
    toolUseWithoutLogsBlockAfter: int | None
    # timestamps
    startedAt: str | None
    lastHeartbeat: str | None
