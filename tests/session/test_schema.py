"""The schema is defined once: its field types, the field names and on-disk files agree."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from claude_shepherd.supervisor.session import fields
from claude_shepherd.supervisor.session.schema import SCHEMA, problems, validate_state
from claude_shepherd.supervisor.session.store import StateError, read_state

BASH_ERA_STATE = """{
  "pid": 4194303,
  "skill": "implement",
  "lifecycle": "active",
  "loading": true,
  "overflowed": false,
  "killRequested": false,
  "contextUsage": 0.42,
  "currentPhase": "3.1: Unit tests",
  "fleetPaneId": "yarik-fleet:company:SDK",
  "targetFile": "IMPLEMENTATION_LOG.md",
  "startedAt": "2026-02-07T14:30:00Z",
  "lastHeartbeat": "2026-02-07T15:45:00Z",
  "toolCallsSinceLastLog": 0,
  "toolCallsByTranscript": {
    "abc123.jsonl": 5,
    "agent-def456.jsonl": 3
  },
  "toolUseWithoutLogsWarnAfter": 3,
  "toolUseWithoutLogsBlockAfter": 10,
  "taskSummary": "Gate hook",
  "logTemplate": "~/.claude/skills/implement/assets/TEMPLATE_IMPLEMENTATION_LOG.md",
  "phases": [
    {"major": 1, "minor": 0, "name": "Setup"},
    {"major": 3, "minor": 1, "name": "Unit tests", "proof": ["tests_written"]}
  ],
  "phaseHistory": [
    "1: Setup",
    {"phase": "3.1: Unit tests", "ts": "2026-02-07T15:00:00Z", "proof": {"tests_written": "12"}}
  ],
  "completedSkills": ["analyze"],
  "searchKeywords": ["auth", "gate"],
  "preloadedFiles": ["a.md", "b.md"],
  "touchedDirs": ["/src/auth"],
  "discoveredChecklists": [],
  "lastEditFile_abc123.jsonl": "/src/x.ts",
  "checkPassed": true
}
"""


def test_schema_declares_exactly_the_field_vocabulary() -> None:
    """The names (used by hooks) and the typed schema (used by every writer) are the same set."""
    assert set(SCHEMA) == set(fields.ALL_FIELDS)


def test_the_state_type_declares_exactly_the_field_vocabulary() -> None:
    """mypy's State (state.py) and the run-time schema name the same fields."""
    from claude_shepherd.supervisor.session.state import State

    assert set(State.__annotations__) == set(fields.ALL_FIELDS)


def test_every_documented_seed_field_is_known() -> None:
    seed_fields = {
        "pid", "sessionId", "skill", "lifecycle", "loading", "overflowed", "killRequested",
        "contextUsage", "currentPhase", "fleetPaneId", "targetFile", "sessionDescription",
        "keywords", "startedAt", "lastHeartbeat", "restartPrompt", "toolCallsSinceLastLog",
        "toolCallsByTranscript", "toolUseWithoutLogsWarnAfter", "toolUseWithoutLogsBlockAfter",
        "searchKeywords", "phaseHistory", "phases", "completedSkills",
    }  # fmt: skip
    assert seed_fields <= fields.ALL_FIELDS


def test_bash_era_state_loads_with_unknown_fields_kept(tmp_path: Path) -> None:
    (tmp_path / ".state.json").write_text(BASH_ERA_STATE)
    state = read_state(tmp_path)
    assert problems(state) == []
    assert state == json.loads(BASH_ERA_STATE), "read as it is: unknown fields kept, nothing coerced"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("pid", "abc"),
        ("pid", -3),
        ("lifecycle", "sleeping"),
        ("overflowed", "maybe"),
        ("contextUsage", "lots"),
        ("toolCallsByTranscript", {"a.jsonl": "x"}),
        ("phases", [{"name": "no major"}]),
        ("toolUseWithoutLogsBlockAfter", [1]),
        ("pid", 4_194_305),
        ("pid", True),
        ("contextUsage", float("inf")),
        ("phaseHistory", [{"ts": "no phase"}]),
        ("completedSkills", ["a", 3]),
    ],
)
def test_invalid_field_types_are_refused_with_the_field_named(key: str, value: object) -> None:
    with pytest.raises(StateError, match=key) as caught:
        validate_state({key: value})
    assert "\n" not in str(caught.value)


def test_empty_and_null_fields_are_valid() -> None:
    validate_state({})
    validate_state({name: None for name in fields.ALL_FIELDS})
