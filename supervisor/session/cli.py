"""``session``: the commands agents run from their Bash tool.

Each subcommand is one transition of :mod:`claude_shepherd.supervisor.session.transitions`, applied
through the locked store and validated against the schema before it is
written. Errors are one line on stderr and exit 1 (2 for usage); nothing on
disk changes when a command fails. Agents call this all day and every fleet
pane pays its start-up, so it uses the standard library only (``argparse``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
from pathlib import Path

from claude_shepherd.supervisor.env import (
    CLAUDE_PID_ENV,
    CLAUDE_SESSION_ID_ENV,
    KILL_GRACE_ENV,
    SUPERVISOR_PID_ENV,
    WATCHDOG_PID_ENV,
)
from claude_shepherd.supervisor.errors import EXIT_USAGE, ShepherdError, UsageError, run_main
from claude_shepherd.supervisor.printable import printable
from claude_shepherd.supervisor.session import completion
from claude_shepherd.supervisor.session import transitions as tr
from claude_shepherd.supervisor.session.fields import DEFAULT_PHASE, DEHYDRATED_FILE, STATE_FILE, F
from claude_shepherd.supervisor.session.identity import (
    ANCESTRY_DEPTH,
    current_pane_id,
    is_ancestor,
    is_watchdog,
    lineage,
    owner_alive,
    parent_pid,
    process_stat,
    same_owner,
    start_token,
    supervisor_pid,
)
from claude_shepherd.supervisor.session.lookup import find_session, sessions_on_pane, sessions_owned_by
from claude_shepherd.supervisor.session.numbers import PID_MAX, parse_count, parse_decimal, parse_pid
from claude_shepherd.supervisor.session.paths import log_file_name, resolve_session_dir, sessions_root
from claude_shepherd.supervisor.session.phases import parse_proof
from claude_shepherd.supervisor.session.safe_fs import UnsafeFileError, open_append, read_bytes
from claude_shepherd.supervisor.session.schema import validate_state
from claude_shepherd.supervisor.session.stdin import read_optional_stdin
from claude_shepherd.supervisor.session.store import (
    State,
    json_object,
    open_session_dir,
    read_state,
    update_state,
    write_atomic_at,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    import typing as t

PROG = "session"


def _root() -> Path:
    return sessions_root()


def _dir(arg: str) -> Path:
    return resolve_session_dir(arg, _root())


def _me() -> tuple[int, str | None]:
    pid = supervisor_pid()
    return pid, start_token(pid)


def _pane(given: str | None) -> str | None:
    """The pane a read-only lookup asks about: the one given, else the one we run in."""
    return given.strip() or None if given is not None else current_pane_id()


def _own_pane(given: str | None) -> str | None:
    """The pane a write claims: only ever the one this agent really runs in."""
    current = current_pane_id()
    if given is not None and given.strip() and given.strip() != current:
        where = f"it runs in {current}" if current else "it does not run in a fleet pane"
        raise ShepherdError(
            f"--fleet-pane {given.strip()} is not this agent's pane ({where}); leave the option out"
        )
    return current


def _conversation() -> str | None:
    return os.environ.get(CLAUDE_SESSION_ID_ENV, "").strip() or None


def _say(line: str = "") -> None:
    print(line)


def _update(session_dir: Path, mutate: t.Callable[[State], t.Any], **kwargs: t.Any) -> t.Any:
    """Every write of this CLI is validated against the schema before it lands."""
    return update_state(session_dir, mutate, validate=validate_state, **kwargs)


def _owner_running(state: State) -> bool:
    """Is the owner this state records still running (read from /proc, under the lock)?"""
    return owner_alive(state.get(F.PID), state.get(F.PID_START))


def _owned(session_dir: Path, mutate: t.Callable[[State], t.Any]) -> t.Any:
    """:func:`_update` for a command that writes a session: only its owner may (checked under the lock)."""
    pid, token = _me()
    pane = current_pane_id()

    def apply(state: State) -> t.Any:
        tr.require_owner(
            state, session_dir, pid=pid, token=token, pane=pane, owner_running=_owner_running(state)
        )
        return mutate(state)

    return _update(session_dir, apply)


# --------------------------------------------------------------------------- activate


def _stdin_object() -> dict[str, t.Any] | None:
    raw = read_optional_stdin()
    if not raw.strip():
        return None
    return json_object(raw, "stdin", hint="; pass a JSON object or nothing")


_OWNER_PID = re.compile(r'"pid"\s*:\s*([0-9]{1,10})\b')
_OWNER_TOKEN = re.compile(r'"pidStart"\s*:\s*"([^"\\]{1,200})"')


def _check_corrupt_is_free(session_dir: Path, pid: int, token: str | None) -> t.Callable[[str | None], None]:
    """Before a corrupt state is set aside: it must be ours, or its owner known and gone.

    A corrupt state whose owner cannot be known is not free: otherwise an agent
    could corrupt another's live session and take it over.
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


LEGACY_STATE_FILE = ".agent.json"


def _migrate_legacy(session_dir: Path) -> None:
    """The bash era's ``.agent.json`` becomes ``.state.json`` (only when there is none yet)."""
    legacy = session_dir / LEGACY_STATE_FILE
    if os.path.lexists(session_dir / STATE_FILE) or not legacy.is_file() or legacy.is_symlink():
        return
    os.replace(legacy, session_dir / STATE_FILE)
    _say(f"Migrated {LEGACY_STATE_FILE} → {STATE_FILE} in {session_dir}")


def _refuse_leaving_an_overflow(others: list[t.Any], conversation: str | None) -> None:
    """An overflowed conversation must dehydrate its session, not start another (a fresh budget)."""
    for other in others:
        if tr.overflowed_in(other.state, conversation):
            raise ShepherdError(
                f"this conversation overflowed in session {other.session_dir.name}; dehydrate it first: "
                f"session dehydrate {other.session_dir} <<'EOF' ... EOF"
            )


def _bootstrap_spent(others: list[t.Any], conversation: str | None) -> bool:
    """Has this conversation had its bootstrap in another session this agent holds?

    The agent always holds the session it activated last, which records the conversation, so the
    chain of its activations carries the answer. Without a conversation id nothing proves a new
    conversation: holding another session is enough.
    """
    if conversation is None:
        return bool(others)
    return any(_same_conversation(o, conversation) for o in others)


def _same_conversation(other: t.Any, conversation: str | None) -> bool:
    """Was *other* activated or bound by *conversation*? Without an id, nothing tells them apart: yes."""
    return conversation is None or conversation in (
        other.state.get(F.SESSION_ID),
        other.state.get(F.BOOTSTRAP_CONVERSATION),
    )


def _carried_tool_calls(others: list[t.Any], conversation: str | None) -> dict[str, t.Any] | None:
    """The conversation's heartbeat counts, from the session it leaves (the highest, should it hold
    several); None when it leaves none."""
    carried: dict[str, t.Any] | None = None
    for other in others:
        if not _same_conversation(other, conversation):
            continue
        carried = {} if carried is None else carried
        counters = other.state.get(F.TOOL_CALLS_BY_TRANSCRIPT)
        for key, value in counters.items() if isinstance(counters, dict) else ():
            if isinstance(value, int) and not isinstance(value, bool) and value > carried.get(key, 0):
                carried[key] = value
    return carried


def activate_session(
    session_dir: Path,
    skill: str,
    *,
    pane: str | None,
    target_file: str | None = None,
    approved: str | None = None,
    extra: dict[str, t.Any] | None = None,
) -> tr.Activation:
    """Activate *session_dir* for this supervisor and release what it claims elsewhere."""
    if not skill.strip() or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.:-]*", skill):
        raise ShepherdError(
            f"skill name {skill!r} is not valid; use letters, digits, '-', '_' (e.g. implement)"
        )
    pid, token = _me()
    conversation = _conversation()
    others = [o for o in sessions_owned_by(session_dir.parent, pid, token) if o.session_dir != session_dir]
    _refuse_leaving_an_overflow(others, conversation)
    bootstrapped = _bootstrap_spent(others, conversation)
    if session_dir.is_dir() and not session_dir.is_symlink():
        _migrate_legacy(session_dir)
    result: tr.Activation = _update(
        session_dir,
        lambda s: tr.activate(
            s,
            skill=skill,
            pid=pid,
            token=token,
            owner_running=_owner_running(s),
            pane=pane,
            target_file=target_file,
            session_id=conversation,
            extra=extra,
            approved=approved,
            bootstrapped=bootstrapped,
            carried=_carried_tool_calls(others, conversation),
        ),
        create=True,
        replace_corrupt=_check_corrupt_is_free(session_dir, pid, token),
    )
    root = session_dir.parent
    from claude_shepherd.supervisor.session.roots import register

    register(root)  # the hooks of agents in other roots protect this one too
    if pane:
        for other in sessions_on_pane(root, pane):
            if other.session_dir != session_dir:
                running: list[t.Any] = []

                def release(state: State, running: list[t.Any] = running) -> None:
                    _release_pane_if_stale(state, pid, token, running)

                _update(other.session_dir, release)
                if running:
                    # Never take a pane from a live agent: two agents claim it (one may have relabelled its
                    # pane); the person decides, with `fleet doctor`.
                    _say(
                        f"Left {other.session_dir.name} bound to {pane}: its agent (pid {running[0]}) is running"
                    )
                else:
                    _say(f"Cleared stale fleetPaneId from: {other.session_dir.name}")
    for other in sessions_owned_by(root, pid, token):
        if other.session_dir != session_dir:
            _update(other.session_dir, tr.release_owner)
            _say(f"Released previous session of this agent: {other.session_dir.name}")
    return result


def _release_pane_if_stale(state: State, pid: int, token: str | None, running: list[t.Any]) -> None:
    """Release *state*'s pane binding unless another agent that is still running owns it (noted in *running*)."""
    owner, owner_token = state.get(F.PID), state.get(F.PID_START)
    if owner_alive(owner, owner_token) and not same_owner(owner, owner_token, pid, token):
        running.append(owner)
        return
    tr.release_pane(state)


def activate(
    dir: str,
    skill: str,
    fleet_pane: str | None = None,
    target_file: str | None = None,
    user_approved: str | None = None,
) -> None:
    """Claim DIR for this agent (creating it), optionally merging a JSON object from stdin."""
    session_dir = _dir(dir)
    extra = _stdin_object()
    pane = _own_pane(fleet_pane)
    outcome = activate_session(
        session_dir, skill, pane=pane, target_file=target_file, approved=user_approved, extra=extra
    )
    pid = supervisor_pid()
    if outcome.kind == "takeover" and outcome.previous_owner:
        _say(f"Took over from supervisor PID {outcome.previous_owner} (no longer running)")
    if user_approved:
        _say(f"Approval recorded: {user_approved}")
    if outcome.kind == "reactivated":
        _say(f"Session re-activated: {session_dir} (skill: {skill}, pid: {pid})")
        return
    details = [f"skill: {skill}", f"pid: {pid}"]
    if pane:
        details.append(f"fleet: {pane}")
    if target_file:
        details.append(f"target: {target_file}")
    _say(f"Session activated: {session_dir} ({', '.join(details)})")


# --------------------------------------------------------------------------- find


def find(fleet_pane: str | None = None) -> int:
    """Print the session of this agent (fleet pane first, then supervisor PID); exit 1 if none."""
    pid, token = _me()
    found = find_session(_root(), pane=_pane(fleet_pane), pid=pid, token=token)
    if found is None:
        return 1
    _say(str(found.session_dir))
    return 0


# --------------------------------------------------------------------------- phase


def phase(dir: str, label: str, user_approved: str | None = None) -> None:
    """Enter phase LABEL (in order, when the skill declared phases); proof lines on stdin."""
    session_dir = _dir(dir)
    proof = parse_proof(read_optional_stdin())
    change: tr.PhaseChange = _owned(
        session_dir, lambda s: tr.phase(s, label, approved=user_approved, proof=proof)
    )
    if change.appended:
        _say(f"Added sub-phase to the plan: {change.label}")
    if change.forced:
        _say(f"Non-sequential transition approved: {user_approved}")
    _say(f"Phase: {change.label}")


# --------------------------------------------------------------------------- deactivate


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9][a-z0-9_-]{3,}", text.lower())}


def related_sessions(session_dir: Path, keywords: list[str], description: str, limit: int = 5) -> list[str]:
    """Other sessions sharing keywords or description words, best first."""
    mine_kw = {k.lower() for k in keywords}
    mine_words = _words(description)
    scored: list[tuple[int, str]] = []
    for entry in sorted(session_dir.parent.iterdir()):
        if entry == session_dir or entry.name.startswith(".") or entry.is_symlink() or not entry.is_dir():
            continue
        try:
            state = read_state(entry)
        except ShepherdError:
            continue
        theirs_kw = {str(k).lower() for k in state.get(F.SEARCH_KEYWORDS) or [] if isinstance(k, str)}
        if isinstance(state.get(F.KEYWORDS), str):
            theirs_kw |= {k.strip().lower() for k in state[F.KEYWORDS].split(",") if k.strip()}
        raw_desc = state.get(F.SESSION_DESCRIPTION)
        desc = raw_desc if isinstance(raw_desc, str) else ""
        score = 3 * len(mine_kw & theirs_kw) + len(mine_words & _words(desc))
        if score:
            first = desc.strip().splitlines()[0] if desc.strip() else ""
            scored.append((score, f"- {entry.name} (skill: {state.get(F.SKILL) or '?'}) {first}".rstrip()))
    scored.sort(key=lambda item: -item[0])
    return [line for _, line in scored[:limit]]


def deactivate(dir: str, keywords: str | None = None) -> None:
    """Mark the session completed; a 1-3 line description of the work is required on stdin."""
    session_dir = _dir(dir)
    description = read_optional_stdin()
    words = [k.strip() for k in keywords.split(",") if k.strip()] if keywords is not None else None
    _owned(session_dir, lambda s: tr.deactivate(s, description=description, keywords=words))
    _say(f"Session deactivated: {session_dir} (lifecycle=completed)")
    related = related_sessions(session_dir, words or [], description)
    _say()
    _say("## Related Sessions")
    for line in related or ["(none)"]:
        _say(line)


# --------------------------------------------------------------------------- restart / dehydrate


RESTART_MARGIN = 2.0
"""Seconds beyond the watchdog's grace (SIGTERM to SIGKILL) that a restart waits for its Claude to be gone."""
GONE_POLL = 0.02


def _watchdog() -> int | None:
    """This agent's watchdog, checked before anything is written; None when there is none (no claude-run)."""
    raw = os.environ.get(WATCHDOG_PID_ENV, "")
    if not raw.strip():
        return None
    pid = parse_pid(raw)
    if pid is None or not is_watchdog(pid):
        raise ShepherdError(
            f"WATCHDOG_PID={raw} is not a claude-run watchdog, so nothing was changed; "
            f"unset WATCHDOG_PID to record the restart without one, or exit Claude"
        )
    if parent_pid(pid) != supervisor_pid():  # only our own supervisor's: never another agent's Claude
        raise ShepherdError(
            f"WATCHDOG_PID={raw} is not this agent's watchdog, so nothing was changed; "
            f"unset WATCHDOG_PID to record the restart without one, or exit Claude"
        )
    return pid


def _own_claude() -> tuple[int, str | None]:
    """The process the watchdog ends for us: our ancestor that is the supervisor's child (Claude)."""
    supervisor = supervisor_pid()
    current = os.getpid()
    for _ in range(ANCESTRY_DEPTH):
        parent = parent_pid(current)
        if parent is None or parent <= 1 or parent == supervisor:
            break
        current = parent
    return current, start_token(current)


def restart_wait(env: t.Mapping[str, str] | None = None) -> float:
    """Seconds a restart waits for its Claude to be gone: the PreToolUse hook refuses a Bash timeout below it."""
    from claude_shepherd.supervisor.claude_run.watchdog import DEFAULT_GRACE

    env = os.environ if env is None else env
    grace = parse_decimal(env.get(KILL_GRACE_ENV, "").strip(), maximum=3600)
    return (DEFAULT_GRACE if grace is None else grace) + RESTART_MARGIN


def _await_end(claude: tuple[int, str | None], limit: float) -> bool:
    """Wait until *claude* is gone (True), or *limit* seconds passed (False).

    When the watchdog acts it ends us too (we are in Claude's tree), so
    normally this never returns: nothing the model could read comes back.
    """
    import time

    deadline = time.monotonic() + limit
    pid, token = claude
    while time.monotonic() < deadline:
        stat = process_stat(pid)
        if token is None or stat is None or stat[0] in "ZX" or start_token(pid) != token:
            return True  # an exited Claude its supervisor has not reaped yet is gone too
        time.sleep(GONE_POLL)
    return False


def _end_this_claude(watchdog: int | None, prompt: str) -> None:
    """Have the watchdog end this agent's Claude; return only when it is gone or did not go."""
    if watchdog is None:
        _say("No watchdog active (WATCHDOG_PID not set): not running under claude-run.")
        _say("The restart is recorded. To restart by hand, exit Claude and run:")
        _say()
        _say(f"  claude {json.dumps(prompt)}")
        return
    claude = _own_claude()
    limit = restart_wait()
    _say(f"Restart prepared. Signaling watchdog (PID {watchdog}) to kill Claude...")
    sys.stdout.flush()
    try:
        os.kill(watchdog, signal.SIGUSR1)
    except ProcessLookupError:
        raise ShepherdError(
            f"watchdog PID {watchdog} has exited; the restart is recorded, exit Claude to apply it"
        ) from None
    if not _await_end(claude, limit):
        raise ShepherdError(
            f"the watchdog (PID {watchdog}) did not end Claude within {limit:g}s; the restart is recorded, "
            f"exit Claude and claude-run starts the fresh one"
        )


def request_restart(session_dir: Path, watchdog: int | None) -> None:
    """Record the request, then end this agent's Claude through its *watchdog* (see :func:`_watchdog`).

    Only the session's own agent may ask: a supervisor takes requests only from
    sessions it owns, so a request on someone else's session would kill this
    Claude with nothing to restart — or, outside claude-run, plant a restart
    prompt in another agent's session.
    """
    _end_this_claude(watchdog, _owned(session_dir, lambda state: tr.request_restart(state, session_dir)))


def restart(dir: str) -> None:
    """Request a fresh Claude that continues this session (the watchdog ends this one)."""
    session_dir = _dir(dir)
    request_restart(session_dir, _watchdog())


def dehydrate(dir: str, no_restart: bool = False) -> None:
    """Save the markdown handover from stdin to DEHYDRATED_CONTEXT.md, then restart."""
    session_dir = _dir(dir)
    text = read_optional_stdin()
    if not text.strip():
        raise ShepherdError(f"the handover is empty; pipe it in: session dehydrate {dir} <<'EOF' ... EOF")
    watchdog = None if no_restart else _watchdog()
    # Ownership first: a refused command writes nothing, the handover included.
    _owned(session_dir, (lambda s: None) if no_restart else tr.begin_dehydrate)
    fd = open_session_dir(session_dir)
    try:
        write_atomic_at(fd, DEHYDRATED_FILE, text if text.endswith("\n") else text + "\n")
    finally:
        os.close(fd)
    target = session_dir / DEHYDRATED_FILE
    _say(f"Dehydrated context saved: {target} ({len(text.splitlines())} lines)")
    if not no_restart:
        request_restart(session_dir, watchdog)


# --------------------------------------------------------------------------- continue

_REQUIRED_HEADING = re.compile(r"^#{1,6}\s.*\brequired\b", re.IGNORECASE)
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.*)$")


def required_files(markdown: str) -> list[str]:
    """Paths listed under a 'Required files' heading of the handover."""
    paths: list[str] = []
    inside = False
    for line in markdown.splitlines():
        if line.lstrip().startswith("#"):
            inside = bool(_REQUIRED_HEADING.match(line.strip()))
            continue
        item = _LIST_ITEM.match(line) if inside else None
        if not item:
            continue
        text = item.group(1).strip()
        quoted = re.search(r"`([^`]+)`", text)
        path = quoted.group(1) if quoted else re.split(r"\s+(?:[-—–(]|$)", text, maxsplit=1)[0]
        if path:
            paths.append(path.strip())
    return paths


HANDOVER_LIMIT = 2 * 1024 * 1024


def _read_handover(session_dir: Path) -> str:
    """The handover's text, never through a link (it could point anywhere) nor from a FIFO."""
    fd = open_session_dir(session_dir)
    try:
        return read_bytes(DEHYDRATED_FILE, limit=HANDOVER_LIMIT, dir_fd=fd).decode("utf-8", errors="replace")
    except FileNotFoundError:
        return ""
    except UnsafeFileError as exc:
        raise ShepherdError(f"{session_dir / DEHYDRATED_FILE}: {exc}") from None
    finally:
        os.close(fd)


def continue_(dir: str, fleet_pane: str | None = None) -> None:
    """Re-activate DIR for this agent and print everything needed to pick the work up."""
    session_dir = _dir(dir)
    state = read_state(session_dir)
    skill = state.get(F.SKILL)
    if not isinstance(skill, str) or not skill:
        raise ShepherdError(f"{session_dir} records no skill; use session activate {dir} SKILL")
    activate_session(session_dir, skill, pane=_own_pane(fleet_pane), approved="continuing the session")
    state = read_state(session_dir)
    phase_label = state.get(F.CURRENT_PHASE) or DEFAULT_PHASE
    _say(f"Session continued: {session_dir}")
    _say(f"  Skill: {skill}")
    _say(f"  Phase: {phase_label}")
    _say(f"  Log: {session_dir / log_file_name(state)}")
    _say()
    _say("## Dehydrated context")
    text = _read_handover(session_dir)
    _say(text.rstrip("\n") if text else f"(none: no {DEHYDRATED_FILE} in {session_dir})")
    _say()
    _say("## Required files")
    base = session_dir.parent.parent
    listed = required_files(text)
    for path in listed:
        where = Path(path).expanduser()
        exists = (where if where.is_absolute() else base / where).exists() or (session_dir / where).exists()
        _say(f"- {path}" + ("" if exists else "  (missing)"))
    if not listed:
        _say("(none listed)")
    _say()
    _say(f"Resume at phase: {phase_label}")


# --------------------------------------------------------------------------- update / target / log

EDITABLE_BY_UPDATE_NOTE = "use the session command that owns it (activate, phase, deactivate, restart)"


MAX_VALUE_DEPTH = 32
"""How deeply a VALUE may nest: far beyond any setting, and far from what would crash a reader."""


def parse_value(raw: str) -> t.Any:
    """JSON when VALUE is JSON (true, 3, 0.85, null, [..], {..}), else the string itself."""
    try:
        value = json.loads(raw)
    except ValueError:
        return raw
    except RecursionError:
        value = None
        depth = MAX_VALUE_DEPTH + 1
    else:
        depth = _depth(value)
    if depth > MAX_VALUE_DEPTH:
        raise ShepherdError(
            f'VALUE nests more than {MAX_VALUE_DEPTH} levels deep; give a flat value like 20 or ["a", "b"]'
        )
    return value


def _depth(value: t.Any) -> int:
    """Nesting depth of a parsed JSON value, without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, level)
            if level <= MAX_VALUE_DEPTH:
                stack.extend(
                    (child, level + 1) for child in (item.values() if isinstance(item, dict) else item)
                )
    return deepest


def update(dir: str, field: str, value: str) -> None:
    """Set one field, like toolUseWithoutLogsBlockAfter 20 (lifecycle fields are refused)."""
    session_dir = _dir(dir)
    if field in tr.PROTECTED_FROM_UPDATE:
        raise ShepherdError(f"{field} cannot be set with update; {EDITABLE_BY_UPDATE_NOTE}")
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", field):
        raise ShepherdError(f"field name {field!r} is not valid; use a camelCase name like targetFile")
    parsed = parse_value(value)
    _owned(session_dir, lambda state: tr.set_setting(state, field, parsed))
    _say(f"Updated {field}={json.dumps(parsed, ensure_ascii=False)} in {session_dir}")


def target(dir: str, file: str) -> None:
    """Set the file the status line links to."""
    session_dir = _dir(dir)
    _owned(session_dir, lambda state: tr.set_setting(state, F.TARGET_FILE, file))
    _say(f"Target file: {file}")


def log(dir: str) -> None:
    """Append stdin to the session's log as a timestamped entry (and reset the logging heartbeat)."""
    session_dir = _dir(dir)
    text = read_optional_stdin()
    if not text.strip():
        raise ShepherdError(f"nothing to log; pipe the entry in: session log {dir} <<'EOF' ... EOF")
    entry = f"\n## {tr.timestamp()}\n{text.rstrip()}\n".encode()

    def append(state: State) -> Path:
        name = log_file_name(state)
        fd = open_session_dir(session_dir)
        try:
            log_fd = open_append(name, dir_fd=fd)
        except UnsafeFileError as exc:
            raise ShepherdError(f"{session_dir / name}: {exc}") from None
        finally:
            os.close(fd)
        try:
            os.write(log_fd, entry)
        finally:
            os.close(log_fd)
        tr.record_log_entry(state)  # only after the entry really landed in this session's own log
        return session_dir / name

    path = _owned(session_dir, append)
    _say(f"Logged to {path}")


# --------------------------------------------------------------------------- who may write


CLAUDE_NAME = "claude"
"""Claude Code's process name (``/proc/PID/comm``)."""


def _claude_above() -> bool:
    """Is a Claude Code process (named ``claude``) one of our ancestors? Read from /proc."""
    for current in lineage(os.getppid()):
        try:
            with open(f"/proc/{current}/comm", "rb") as handle:
                if handle.read().strip() == CLAUDE_NAME.encode():
                    return True
        except OSError:
            return False
    return False


def _vouched(var: str) -> bool:
    """Does *var* name a process above us? (Any text may be in it: only short ASCII digits are read.)"""
    raw = os.environ.get(var, "").strip()
    pid = parse_pid(raw)
    return pid is not None and pid != 1 and is_ancestor(pid)  # init is above everyone: it vouches for no one


def is_agent() -> bool:
    """Does an agent call us: under claude-run or Claude (each checked in /proc), or in a fleet pane?

    A person at a shell has none of them; a session activated from there would
    be owned by that shell and refuse every later command of its own.
    """
    return (
        _vouched(SUPERVISOR_PID_ENV)
        or _vouched(CLAUDE_PID_ENV)
        or _claude_above()
        or current_pane_id() is not None
    )


WRITING_COMMANDS = frozenset(
    {"activate", "phase", "deactivate", "restart", "dehydrate", "continue", "update", "target", "log"}
)


def refuse_a_person(command: str) -> None:
    if command in WRITING_COMMANDS and not is_agent():
        raise ShepherdError(
            f"`session {command}` is for agents running under claude-run (no claude-run, Claude or fleet pane "
            "runs this command); to look at sessions use `session list` or `session show DIR`"
        )


# --------------------------------------------------------------------------- list / show (for people)


def _owner_text(state: t.Mapping[str, t.Any]) -> str:
    owner = state.get(F.PID)
    if not isinstance(owner, int) or isinstance(owner, bool) or owner <= 0:
        return "none"
    return f"{owner} ({'running' if owner_alive(owner, state.get(F.PID_START)) else 'gone'})"


def _cell(value: t.Any, width: int = 40) -> str:
    text = printable(value if isinstance(value, str) else "—" if value is None else json.dumps(value))
    return text if len(text) <= width else text[: width - 1] + "…"


def list_() -> int:
    """Print one line per session of the root: name, lifecycle, skill, phase, owner (read only)."""
    root = _root()
    try:
        names = sorted(
            e.name for e in os.scandir(root) if not e.name.startswith(".") and e.is_dir(follow_symlinks=False)
        )
    except OSError:
        names = []
    if not names:
        _say(printable(f"No sessions in {root}."))
        return 0
    rows = [("SESSION", "LIFECYCLE", "SKILL", "PHASE", "OWNER")]
    for name in names:
        try:
            state = read_state(root / name)
        except ShepherdError as exc:
            rows.append((_cell(name), "unreadable", _cell(str(exc), 60), "", ""))
            continue
        rows.append((_cell(name), _cell(state.get(F.LIFECYCLE)), _cell(state.get(F.SKILL)),
                     _cell(state.get(F.CURRENT_PHASE)), _owner_text(state)))  # fmt: skip
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    _say(printable(f"Sessions in {root}:"))
    for row in rows:
        _say("  ".join(cell.ljust(widths[i]) if i < 4 else cell for i, cell in enumerate(row)).rstrip())
    return 0


def show(dir: str) -> None:
    """Print DIR's state, one field a line (read only)."""
    session_dir = _dir(dir)
    state = read_state(session_dir)
    _say(printable(f"Session {session_dir}"))
    _say(f"  owner: {_owner_text(state)}")
    for field in sorted(state):
        value = state[field]
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        _say(printable(f"  {field}: {text}"))


# --------------------------------------------------------------------------- command line

DIR_HELP = "session folder, e.g. sessions/2026_02_07_TOPIC"
PANE_HELP = "fleet pane id (default: the pane this agent runs in, read from tmux)"
APPROVED_HELP = "override a guard; the user's reason is recorded"

COMMANDS: dict[str, tuple[t.Callable[..., int | None], str, str]] = {}
"""name -> (function, one-line summary, example)."""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors that say where to look (exit 2)."""

    def error(self, message: str) -> t.NoReturn:
        raise UsageError(f"{message}; see `{self.prog} --help`")


def _command(
    sub: t.Any, name: str, fn: t.Callable[..., int | None], summary: str, example: str
) -> argparse.ArgumentParser:
    COMMANDS[name] = (fn, summary, example)
    return sub.add_parser(
        name, help=summary, description=summary, epilog=f"example:\n  {example}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip


_DIR = ("dir", {"metavar": "DIR", "help": DIR_HELP})
_OWN_PANE = (
    "--fleet-pane",
    {"metavar": "ID", "help": "this agent's fleet pane id (only its own is accepted)"},
)
_APPROVED = ("--user-approved", {"metavar": "REASON", "help": APPROVED_HELP})

COMMAND_LINE: tuple[tuple[str, t.Callable[..., int | None], str, str, tuple[tuple[str, dict[str, t.Any]], ...]], ...] = (
    ("activate", activate, "claim DIR for this agent (creating it); a JSON object on stdin is merged in",
     "session activate sessions/2026_02_07_TOPIC implement",
     (_DIR, ("skill", {"metavar": "SKILL", "help": "the skill this session runs, e.g. implement"}), _OWN_PANE,
      ("--target-file", {"metavar": "FILE", "help": "the file the status line links to"}), _APPROVED)),
    ("find", find, "print this agent's session (fleet pane first, then supervisor PID); exit 1 if none",
     "session find", (("--fleet-pane", {"metavar": "ID", "help": PANE_HELP}),)),
    ("phase", phase, "enter phase LABEL (in order when the skill declared phases); proof lines on stdin",
     "session phase sessions/2026_02_07_TOPIC '3: Build'",
     (_DIR, ("label", {"metavar": "LABEL", "help": "e.g. '3: Build' or '3.1: Tests'"}), _APPROVED)),
    ("deactivate", deactivate, "mark the session completed; a 1-3 line description on stdin",
     "session deactivate sessions/2026_02_07_TOPIC --keywords auth,gate <<'EOF' ... EOF",
     (_DIR, ("--keywords", {"metavar": "a,b", "help": "search keywords"}))),
    ("restart", restart, "request a fresh Claude that continues this session (the watchdog ends this one)",
     "session restart sessions/2026_02_07_TOPIC", (_DIR,)),
    ("dehydrate", dehydrate, "save the handover on stdin to DEHYDRATED_CONTEXT.md, then restart",
     "session dehydrate sessions/2026_02_07_TOPIC <<'EOF' ... EOF",
     (_DIR, ("--no-restart", {"action": "store_true", "help": "only save the handover"}))),
    ("continue", continue_, "re-activate DIR and print everything needed to pick the work up",
     "session continue sessions/2026_02_07_TOPIC", (_DIR, _OWN_PANE)),
    ("update", update, "set one field (VALUE is parsed as JSON when it is JSON); lifecycle fields are refused",
     "session update sessions/2026_02_07_TOPIC toolUseWithoutLogsBlockAfter 20",
     (_DIR, ("field", {"metavar": "FIELD"}), ("value", {"metavar": "VALUE", "help": "parsed as JSON when it is JSON"}))),
    ("target", target, "set the file the status line links to",
     "session target sessions/2026_02_07_TOPIC IMPLEMENTATION_LOG.md", (_DIR, ("file", {"metavar": "FILE"}))),
    ("log", log, "append stdin to the session's log as a timestamped entry",
     "session log sessions/2026_02_07_TOPIC <<'EOF' ... EOF", (_DIR,)),
    ("list", list_, "list the sessions of the root: name, lifecycle, skill, phase, owner (read only; for people)",
     "session list", ()),
    ("show", show, "print a session's state, one field a line (read only; for people)",
     "session show sessions/2026_02_07_TOPIC", (_DIR,)),
)  # fmt: skip
"""Every subcommand: name, function, summary, an example, and its arguments (argparse's own options)."""


def parser() -> argparse.ArgumentParser:
    from claude_shepherd.supervisor import __version__

    top = _Parser(
        prog=PROG,
        description="Manage the session an agent works in (sessions/NAME/.state.json).",
        epilog="example:\n  session activate sessions/2026_02_07_TOPIC implement\n\n"
        "Run `session COMMAND --help` for one command.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    top.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    completion.add_options(top)
    sub = top.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    for name, fn, summary, example, arguments in COMMAND_LINE:
        command = _command(sub, name, fn, summary, example)
        for flag, options in arguments:
            command.add_argument(flag, **options)
    return top


def _dispatch(argv: list[str] | None) -> int | None:
    if argv is None and completion.requested():
        completion.complete(parser())  # the shell asks for candidates: answered, and exits
    args = vars(parser().parse_args(argv))
    name = args.pop("command")
    if name is None:
        parser().print_help()
        return EXIT_USAGE
    refuse_a_person(name)
    return COMMANDS[name][0](**args)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; an expected failure is one line on stderr and its exit status."""
    return run_main(PROG, lambda: _dispatch(argv))


def entry() -> None:
    sys.exit(main())
