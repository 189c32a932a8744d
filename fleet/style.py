"""What the fleet shows: pane borders with label, state and context %, tabs coloured by urgency.

Everything is a tmux format evaluated by tmux itself from pane and window
options (``@pane_label``, ``@pane_notify``, ``@pane_context``,
``@window_notify``), so nothing polls: the hooks set an option and tmux
redraws. The states, their priorities and colours are defined once in
:mod:`claude_shepherd.supervisor.tmux_names` (standard library only, imported by the hooks).
"""

from __future__ import annotations

import sys
from pathlib import Path

from claude_shepherd.hooks.claude_settings import hook_command
from claude_shepherd.supervisor.tmux_names import COLOURS, EXITED, STATES, STOPPED

CONTEXT_WARN = 70
"""Context % from which the border shows the figure in orange."""


def _by_state(option: str, styles: dict[str, str], default: str) -> str:
    """``#{?#{==:#{OPTION},state},STYLE,...}`` for each state, most urgent first."""
    expr = default
    for state in reversed(STATES):
        if state in styles:
            expr = f"#{{?#{{==:#{{{option}}},{state}}},{styles[state]},{expr}}}"
    return expr


def pane_border_format() -> str:
    label = "#{?@pane_label,#[bold]#{@pane_label}#[nobold],#{pane_index}: #{pane_current_command}}"
    state_style = _by_state("@pane_notify", {s: f"#[fg={COLOURS[s]}]" for s in STATES}, "#[fg=colour244]")
    state = f"#{{?pane_dead,,#{{?@pane_notify,{state_style}● #{{@pane_notify}}#[default],}}}}"
    stopped = f"#[fg={COLOURS[STOPPED]}]● {STOPPED}#[default]"
    why = "#{?pane_dead_signal,signal #{pane_dead_signal},#{pane_dead_status}}"  # killed, or its exit status
    exited = f"#[fg={COLOURS[EXITED]}]● {EXITED} {why}#[default]"
    dead = f"#{{?pane_dead,#{{?#{{==:#{{@pane_notify}},{STOPPED}}},{stopped},{exited}}},}}"
    context = (
        "#{?@pane_context, ctx "
        f"#{{?#{{e|>=:#{{@pane_context}},{CONTEXT_WARN}}},#[fg=colour208],}}"
        "#{@pane_context}%#[default],}"
    )
    return f" {label} {state}{dead}{context} "


def window_status_format(current: bool) -> str:
    styles = {s: f"#[bg={COLOURS[s]}]#[fg=colour255]" for s in STATES}
    style = _by_state("@window_notify", styles, "")
    weight = "#[bold]" if current else ""
    return f"{style}{weight} #I:#W#{{?@window_notify, #{{@window_notify}},}} #[default]"


PANE_DIED_HOOK = "pane-died[42]"
"""Our entry of the server's pane-died hook array (a fixed index: a user's own ``pane-died`` is kept)."""


def tmux_quoted(text: str) -> str:
    """*text* as one double-quoted word of tmux's command language (no variable or escape expansion)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$") + '"'


def pane_died_hook(python: str | None = None, root: Path | None = None) -> str:
    """The command tmux runs, in the background, when a pane's process ends: ``claude-hook pane-died``
    with only tmux's own values (pane id, pid, exit status) — never a label an agent could have set."""
    shell = hook_command("pane-died", python or sys.executable, root).replace(
        "#", "##"
    )  # literal in a format
    return f"run-shell -b {tmux_quoted(shell + ' #{pane_id} #{pane_pid} #{pane_dead_status}')}"


def fleet_options() -> list[tuple[str, str, str]]:
    """``(scope flag, option, value)`` set globally on the fleet's own server."""
    return [
        (
            "-g",
            PANE_DIED_HOOK,
            pane_died_hook(),
        ),  # an agent's death is an alert (claude_shepherd.hooks.pane_died)
        ("-g", "destroy-unattached", "off"),  # a detached fleet must survive
        ("-wg", "remain-on-exit", "on"),  # a finished agent's pane stays readable
        ("-wg", "allow-rename", "off"),  # window names are part of each pane's identity
        ("-wg", "automatic-rename", "off"),
        ("-wg", "pane-border-status", "top"),
        ("-wg", "pane-border-format", pane_border_format()),
        ("-wg", "window-status-format", window_status_format(False)),
        ("-wg", "window-status-current-format", window_status_format(True)),
    ]
