"""Activating a session for this agent: the checks before, the transition, and releasing what the
agent (or a stale owner of its pane) held elsewhere.

``session activate`` and ``session continue`` both come through :func:`activate_session`.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from claude_shepherd.supervisor.errors import ShepherdError
from claude_shepherd.supervisor.session import activate_transition, owner_transitions
from claude_shepherd.supervisor.session.fields import STATE_FILE, F
from claude_shepherd.supervisor.session.identity import owner_alive, same_owner
from claude_shepherd.supervisor.session.invocation import conversation, me, owner_running, say, update
from claude_shepherd.supervisor.session.lookup import sessions_on_pane, sessions_owned_by
from claude_shepherd.supervisor.session.numbers import PID_MAX, parse_count
from claude_shepherd.supervisor.session.restart_transitions import overflowed_in

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds; session runs at every agent step
    import typing as t

    from claude_shepherd.supervisor.session.lookup import Found
    from claude_shepherd.supervisor.session.state import State

SKILL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]*")
LEGACY_STATE_FILE = ".agent.json"

_OWNER_PID = re.compile(r'"pid"\s*:\s*([0-9]{1,10})\b')
_OWNER_TOKEN = re.compile(r'"pidStart"\s*:\s*"([^"\\]{1,200})"')


def check_corrupt_is_free(session_dir: Path, pid: int, token: str | None) -> t.Callable[[str | None], None]:
    """Before a corrupt state is set aside: it must be ours, or its owner known and gone.

    A corrupt state whose owner cannot be known is not free: otherwise an agent
    could corrupt another's live session and take it over. The owner is read
    from the corrupt text with a pattern, since it no longer parses as JSON.
    """

    def check(raw: str | None) -> None:
        found = _OWNER_PID.search(raw or "")
        owner = parse_count(found.group(1), maximum=PID_MAX) if found else None
        if owner is None:
            raise ShepherdError(
                f"{session_dir / STATE_FILE} is corrupt and its owner cannot be known, so it is not free; "
                f"if no agent uses {session_dir.name}, move it aside (mv {session_dir / STATE_FILE} "
                f"{session_dir / STATE_FILE}.broken) and activate again"
            )
        token_found = _OWNER_TOKEN.search(raw or "")
        owner_token = token_found.group(1) if token_found else None
        if not same_owner(owner, owner_token, pid, token) and owner_alive(owner, owner_token):
            raise ShepherdError(
                f"{session_dir / STATE_FILE} is corrupt and still held by a live agent (supervisor PID {owner}); "
                f"choose another folder, or stop that agent first"
            )
        print(
            f"session: warning: {session_dir / STATE_FILE} was corrupt; keeping it beside the new state "
            f"as {STATE_FILE}.corrupt-*",
            file=sys.stderr,
        )

    return check


def migrate_legacy(session_dir: Path) -> None:
    """A legacy ``.agent.json`` becomes ``.state.json`` (only when there is none yet)."""
    legacy = session_dir / LEGACY_STATE_FILE
    if os.path.lexists(session_dir / STATE_FILE) or not legacy.is_file() or legacy.is_symlink():
        return
    os.replace(legacy, session_dir / STATE_FILE)
    say(f"Migrated {LEGACY_STATE_FILE} → {STATE_FILE} in {session_dir}")


def refuse_leaving_an_overflow(others: list[Found], conversation: str | None) -> None:
    """An overflowed conversation must dehydrate its session, not start another (a fresh budget)."""
    for other in others:
        if overflowed_in(other.state, conversation):
            raise ShepherdError(
                f"this conversation overflowed in session {other.session_dir.name}; dehydrate it first: "
                f"session dehydrate {other.session_dir} <<'EOF' ... EOF"
            )


def bootstrap_spent(others: list[Found], conversation: str | None) -> bool:
    """Has this conversation had its bootstrap in another session this agent holds?

    The agent always holds the session it activated last, which records the conversation, so the
    chain of its activations carries the answer. Without a conversation id nothing proves a new
    conversation: holding another session is enough.
    """
    if conversation is None:
        return bool(others)
    return any(same_conversation(o, conversation) for o in others)


def same_conversation(other: Found, conversation: str | None) -> bool:
    """Was *other* activated or bound by *conversation*? Without an id, nothing tells them apart: yes."""
    return conversation is None or conversation in (
        other.state.get(F.SESSION_ID),
        other.state.get(F.BOOTSTRAP_CONVERSATION),
    )


def carried_tool_calls(others: list[Found], conversation: str | None) -> dict[str, int] | None:
    """The conversation's heartbeat counts, from the session it leaves (the highest, should it hold
    several); None when it leaves none."""
    carried: dict[str, int] | None = None
    for other in others:
        if not same_conversation(other, conversation):
            continue
        carried = {} if carried is None else carried
        counters = other.state.get(F.TOOL_CALLS_BY_TRANSCRIPT)
        for key, value in counters.items() if isinstance(counters, dict) else ():
            if isinstance(value, int) and not isinstance(value, bool) and value > carried.get(key, 0):
                carried[key] = value
    return carried


def carried_template(others: list[Found], conversation: str | None) -> str | None:
    """The log template of a session the conversation leaves (its obligation to log), if any."""
    for other in others:
        template = other.state.get(F.LOG_TEMPLATE)
        if same_conversation(other, conversation) and isinstance(template, str) and template.strip():
            return template
    return None


def check_skill_name(skill: str) -> None:
    """A skill is named like ``implement``: letters, digits and a few separators."""
    if not skill.strip() or not SKILL_NAME.fullmatch(skill):
        raise ShepherdError(
            f"skill name {skill!r} is not valid; use letters, digits, '-', '_' (e.g. implement)"
        )


def activate_session(
    session_dir: Path,
    skill: str,
    *,
    pane: str | None,
    target_file: str | None = None,
    approved: str | None = None,
    extra: dict[str, object] | None = None,
) -> activate_transition.Activation:
    """Activate *session_dir* for this supervisor and release what it claims elsewhere."""
    check_skill_name(skill)
    pid, token = me()
    talk = conversation()
    others = [o for o in sessions_owned_by(session_dir.parent, pid, token) if o.session_dir != session_dir]
    refuse_leaving_an_overflow(others, talk)
    bootstrapped = bootstrap_spent(others, talk)
    if session_dir.is_dir() and not session_dir.is_symlink():
        migrate_legacy(session_dir)
    result = update(
        session_dir,
        lambda s: activate_transition.activate(
            s,
            skill=skill,
            pid=pid,
            token=token,
            owner_running=owner_running(s),
            pane=pane,
            target_file=target_file,
            session_id=talk,
            extra=extra,
            approved=approved,
            bootstrapped=bootstrapped,
            carried=carried_tool_calls(others, talk),
            carried_template=carried_template(others, talk),
        ),
        create=True,
        replace_corrupt=check_corrupt_is_free(session_dir, pid, token),
    )
    root = session_dir.parent
    from claude_shepherd.supervisor.session.roots import register

    register(root)  # the hooks of agents in other roots protect this one too
    if pane:
        release_pane_elsewhere(root, session_dir, pane, pid, token)
    release_own_sessions_elsewhere(root, session_dir, pid, token)
    return result


def release_pane_elsewhere(root: Path, session_dir: Path, pane: str, pid: int, token: str | None) -> None:
    """Other sessions bound to *pane* lose the binding, unless a live agent holds them."""
    for other in sessions_on_pane(root, pane):
        if other.session_dir == session_dir:
            continue
        running: list[object] = []

        def release(state: State, running: list[object] = running) -> None:
            release_pane_if_stale(state, pid, token, running)

        update(other.session_dir, release)
        if running:
            # Never take a pane from a live agent: two agents claim it (one may have relabelled its
            # pane); the person decides, with `fleet doctor`.
            say(f"Left {other.session_dir.name} bound to {pane}: its agent (pid {running[0]}) is running")
        else:
            say(f"Cleared stale fleetPaneId from: {other.session_dir.name}")


def release_own_sessions_elsewhere(root: Path, session_dir: Path, pid: int, token: str | None) -> None:
    """An agent holds one session: the others it owned are released."""
    for other in sessions_owned_by(root, pid, token):
        if other.session_dir != session_dir:
            update(other.session_dir, owner_transitions.release_owner)
            say(f"Released previous session of this agent: {other.session_dir.name}")


def release_pane_if_stale(state: State, pid: int, token: str | None, running: list[object]) -> None:
    """Release *state*'s pane binding unless another agent that is still running owns it (noted in *running*)."""
    owner, owner_token = state.get(F.PID), state.get(F.PID_START)
    if owner_alive(owner, owner_token) and not same_owner(owner, owner_token, pid, token):
        running.append(owner)
        return
    owner_transitions.release_pane(state)
