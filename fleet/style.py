"""What the fleet shows: pane borders with label, state and context %, tabs coloured by urgency.

Everything is a tmux format evaluated by tmux itself from pane and window
options (``@pane_label``, ``@pane_notify``, ``@pane_context``,
``@window_notify``), so nothing polls: the hooks set an option and tmux
redraws. The states, their priorities and colours are defined once in
:mod:`claude_shepherd.hooks.pane_notify` (standard library only, imported by the hooks).
"""

from __future__ import annotations

from claude_shepherd.hooks.pane_notify import COLOURS, STATES

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
    state = f"#{{?@pane_notify,{state_style}● #{{@pane_notify}}#[default],}}"
    dead = "#{?pane_dead,#[fg=colour196] exited #{pane_dead_status}#[default],}"
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


def fleet_options() -> list[tuple[str, str, str]]:
    """``(scope flag, option, value)`` set globally on the fleet's own server."""
    return [
        ("-g", "destroy-unattached", "off"),  # a detached fleet must survive
        ("-wg", "remain-on-exit", "on"),  # a finished agent's pane stays readable
        ("-wg", "allow-rename", "off"),  # window names are part of each pane's identity
        ("-wg", "automatic-rename", "off"),
        ("-wg", "pane-border-status", "top"),
        ("-wg", "pane-border-format", pane_border_format()),
        ("-wg", "window-status-format", window_status_format(False)),
        ("-wg", "window-status-current-format", window_status_format(True)),
    ]
