"""``claude-hook status-line``: bind the conversation to the session, then draw one line.

On every render Claude Code pipes its status object in (docs/CLAUDE_CODE.md §6.4). We
record ``sessionId`` (unless a restart is pending, the session overflowed or is
dehydrating — docs/DESIGN.md R1), ``contextUsage`` = ``used_percentage``/100 and the
window size (which the PreToolUse hook needs to read usage from transcripts),
and, in a fleet pane, claim the session for this supervisor. An unknown
percentage (null at startup, garbage) leaves the stored value alone: it is
unknown, not 0. Then print::

    NAME · skill · phase · $cost · P%        or        No session · $cost · P%

NAME without its date prefix, P% relative to the overflow threshold, capped at
100; the cost is what the agent spent, by the spend ledger (supervisor.session.spend: it goes on
across restarts and resumes, and counts a resumed conversation once). Runs on every
render, so it has the hooks' speed budget.
Standard library only.
"""

from __future__ import annotations

from claude_shepherd.hooks import config as hook_config
from claude_shepherd.hooks import cut_off_reply
from claude_shepherd.hooks.context import number, statusline_reading, stored_usage
from claude_shepherd.hooks.locate import Caller, claimant, locate
from claude_shepherd.hooks.protocol import one_line, parse_input
from claude_shepherd.hooks.session_start import conversation_id
from claude_shepherd.supervisor import pane_notify
from claude_shepherd.supervisor.printable import printable
from claude_shepherd.supervisor.session import pane_records, spend, spend_writes, usage_windows
from claude_shepherd.supervisor.session.credentials import credential_of, shown_credential
from claude_shepherd.supervisor.session.fields import F
from claude_shepherd.supervisor.session.owner_transitions import bind_conversation, resumed
from claude_shepherd.supervisor.session.paths import display_name
from claude_shepherd.supervisor.session.phases import declared, try_parse
from claude_shepherd.supervisor.session.store import update_state

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds per hook call; annotations are never evaluated
    import typing as t

    from claude_shepherd.supervisor.session.state import State
    from claude_shepherd.supervisor.session.usage_windows import Limited

SEPARATOR = " · "
NO_SESSION = "No session"


def shown_percent(fraction: float | None, threshold: float) -> str:
    """Usage relative to the overflow threshold: 38% of a 76% threshold shows 50%."""
    if fraction is None:
        return "?%"
    return f"{min(100, int(fraction / threshold * 100 + 0.5))}%"


def cost_of(data: t.Mapping[str, object]) -> float | None:
    """``cost.total_cost_usd`` of the status input, or None when absent or not a number."""
    cost = data.get("cost")
    return number(cost.get("total_cost_usd")) if isinstance(cost, dict) else None


def cost_text(cost: float | None) -> str:
    """Dollars, or ``$—`` when nothing was measured (unknown is not 0)."""
    return "$—" if cost is None else f"${cost:.2f}"


def agent_key(caller: Caller, env: t.Mapping[str, str]) -> tuple[str, str] | None:
    """The agent's identity and its conversation record's folder: the fleet pane, else the
    claude-run that said who it is (:func:`pane_records.spot`); None for a bare Claude."""
    return pane_records.spot(caller.pane, claimant(env, caller.pid, caller.token))


def pane_spent(
    caller: Caller,
    session_id: str | None,
    data: t.Mapping[str, object],
    usage: float | None,
    threshold: float,
    env: t.Mapping[str, str],
) -> float | None:
    """Record the agent's conversation (what its next start or a crash resumes) and its reading of
    the conversation's cost in the spend ledger; return what the agent spent, by the ledger — the
    figure ``fleet status`` and the budgets read too. A bare Claude (no fleet pane, no claude-run)
    has no ledger: its conversation's own figure is shown."""
    cost = cost_of(data)
    where = agent_key(caller, env)
    if where is None or not session_id:
        return cost
    overflowing = usage is not None and usage >= threshold
    pane_records.note(caller.root, where[0], session_id, folder=where[1], overflowed=overflowing)
    if cost is None:
        ledger = spend.read(caller.root, where[0])
        return spend.spent(ledger)
    transcript = data.get("transcript_path")
    ledger = spend_writes.measure(
        caller.root,
        where[0],
        session_id,
        cost,
        transcript=transcript if isinstance(transcript, str) else None,
    )
    return spend.spent(ledger)


def note_usage(caller: Caller, data: t.Mapping[str, object], env: t.Mapping[str, str]) -> None:
    """Record the credential's usage windows this render reports, and which credential the agent uses
    (supervisor.session.usage_windows); alert on a window crossing 80 % / 95 %. Never fails the line."""
    try:
        credential = credential_of(env)
        reading = usage_windows.windows_of(data)
        crossed: list[tuple[str, float, float]] = []
        if reading is not None:
            _, crossed = usage_windows.note_reading(caller.root, credential, reading)
        where = pane_records.spot(caller.pane, claimant(env, caller.pid, caller.token))
        if where is not None:
            record = usage_windows.note_agent(caller.root, where[0], credential)
            limited = record.get("limited")
            if isinstance(limited, dict) and reading is not None and _went_on(limited, reading):
                usage_windows.clear_limited(caller.root, where[0])
        for window, percent, resets in crossed:
            pane_notify.usage_alert(window, percent, resets, shown_credential(credential), env)
    except Exception:
        pass


def _went_on(limited: Limited, reading: t.Mapping[str, t.Mapping[str, float]]) -> bool:
    """A reading after the limit that shows the window open again (below 100 %, or a later period)."""
    window = reading.get(limited.get("window") or "")
    until = limited.get("until")
    if window is None:
        return False
    later = isinstance(until, (int, float)) and window["resets_at"] > until + 1
    return window["used_percentage"] < 100 or later


def phase_text(state: t.Mapping[str, object]) -> str:
    """``[3/5] Build`` when the skill declared phases, else ``3. Build`` from ``3: Build``."""
    current = state.get(F.CURRENT_PHASE)
    if not isinstance(current, str) or not current.strip():
        return ""
    decl = declared(state.get(F.PHASES))
    label = try_parse(current)
    if decl and label is not None:
        number_ = f"{label.major}" if label.minor == 0 else f"{label.major}.{label.minor}"
        return f"[{number_}/{max(p['major'] for p in decl)}] {label.name}"
    return current.replace(": ", ". ", 1)


def render(data: t.Mapping[str, object], cwd: str, env: t.Mapping[str, str]) -> str:
    config = hook_config.load(env)
    usage, window = statusline_reading(data)
    caller = locate(cwd, env)
    found = caller.found
    agent = data.get("agent")
    agent_name = agent.get("name") if isinstance(agent, dict) and isinstance(agent.get("name"), str) else ""
    session_id = conversation_id(data.get("session_id"))
    cost = pane_spent(caller, session_id, data, usage, config.threshold, env)
    note_usage(caller, data, env)
    try:  # Claude follows up a reply cut off at its output limit with no hook between: at a budget, not
        cut_off_reply.stop_at_budget(caller, env, data.get("transcript_path"), session_id)
    except Exception:
        pass
    if found is None:
        pane_notify.publish(None, context=usage, cost=cost, env=env)  # the pane's border and fleet watch
        return SEPARATOR.join([NO_SESSION, cost_text(cost), shown_percent(usage, config.threshold)])
    claim = claimant(env, caller.pid, caller.token) if caller.pane and found.how == "pane" else None

    def apply(state: State) -> State:
        bind_conversation(state, session_id=session_id, usage=usage, window=window, claim=claim)
        resumed(state, pid=caller.pid, token=caller.token)  # the owner's resumed Claude draws: it runs
        return state.copy()

    state = update_state(found.session_dir, apply)
    if usage is None:
        stored = stored_usage(state)
        usage = stored.fraction if stored else None
    pane_notify.publish(None, context=usage, cost=cost, env=env)  # the pane's border and fleet watch
    skill = state.get(F.SKILL)
    parts = [display_name(found.session_dir), skill if isinstance(skill, str) and skill else "-"]
    phase = phase_text(state)
    if phase:
        parts.append(phase)
    if agent_name:
        parts.append(agent_name)
    parts += [cost_text(cost), shown_percent(usage, config.threshold)]
    return SEPARATOR.join(parts)


def run(raw: bytes, env: t.Mapping[str, str]) -> str:
    inp = parse_input(raw)
    try:
        return printable(
            render(inp.data, inp.cwd, env)
        )  # an agent's phase must not write escapes to the terminal
    except Exception as exc:
        return one_line(f"{NO_SESSION} · claude-hook status-line: {type(exc).__name__}: {exc}", 120)
