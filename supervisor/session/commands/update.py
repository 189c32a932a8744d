"""``session update DIR FIELD VALUE``: set one field (VALUE is JSON when it is JSON); lifecycle fields are refused."""

from __future__ import annotations

import json
import re

from claude_shepherd.supervisor.errors import EXIT_OK, ShepherdError
from claude_shepherd.supervisor.session.invocation import owned, say, session_dir
from claude_shepherd.supervisor.session.transitions import PROTECTED_FROM_UPDATE
from claude_shepherd.supervisor.session.values import parse_value
from claude_shepherd.supervisor.session.work_transitions import set_setting

EDITABLE_BY_UPDATE_NOTE = "use the session command that owns it (activate, phase, deactivate, restart)"
FIELD_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def run(dir: str, field: str, value: str) -> int:
    """Set one field, like toolUseWithoutLogsBlockAfter 20."""
    folder = session_dir(dir)
    if field in PROTECTED_FROM_UPDATE:
        raise ShepherdError(f"{field} cannot be set with update; {EDITABLE_BY_UPDATE_NOTE}")
    if not FIELD_NAME.fullmatch(field):
        raise ShepherdError(f"field name {field!r} is not valid; use a camelCase name like targetFile")
    parsed = parse_value(value)
    owned(folder, lambda state: set_setting(state, field, parsed))
    say(f"Updated {field}={json.dumps(parsed, ensure_ascii=False)} in {folder}")
    return EXIT_OK
