"""Layouts that set every key the parser honours, in every form (checked against HONOURED_KEYS and
WINDOW_KEYS by ``tests/fleet/test_fleet_layout_inverse.py``): whatever carries a layout whole (its
document, a host's part, the parsed-layout cache) is held to them."""

from __future__ import annotations

EVERY_KEY = """\
name: every-key
root: proj
socket_name: fleet-every
tmux_command: "'/opt/my tmux/tmux-3.4' -u"
tmux_options: -f tmux.conf -2
on_project_start: [mkdir -p logs, echo ready]
pre_window: export X=1
startup_window: api
startup_pane: 1
attach: false
notify: [notify-send, "{fleet}", "{label}: {state}"]
notify_on: [needs-you, error, needs-you]
windows:
  - api:
      layout: main-vertical
      root: /srv/api
      pre: [export Y=2, cd sub]
      panes:
        - claude-run
        - [cd api, claude-run --agent api]
        - SDK: claude-run --agent sdk
        - API:
            - export Z=3
            - claude-run
        - EMPTY:
        -
        - tmux set-option -p @pane_label SELF; claude-run
        - NAME: tmux set -p @pane_label "BASH ERA" && claude-run
        - PAID:
            budget: {usd: 1.5, per: day}
            commands: [export Z=4, claude-run]
        - NOCMD:
            budget: 2
        - BASHPAID:
            budget: {usd: 3, per: life}
            commands: tmux set -p @pane_label "BASH PAID" && claude-run
  - shell:
  - one: htop
  - two: [cd logs, tail -f x.log]
  - home:
      root: ~/work
      budget: {usd: 10, per: week}
      panes: [claude-run]
  - remote:
      host: dev@buildbox:2222
      root: proj
      pre: export R=1
      worktree: true
      panes:
        - B: claude-run
  - remote-two:
      host: dev@buildbox:2222
      layout: tiled
  - gpu:
      host: "[::1]:22"
      panes:
        - G: claude-run 🤖 --description "Owns ✓"
budget: 25
"""

VARIANTS = {
    "eight colours, a socket from tmux_command, notify false, startup by index": (
        EVERY_KEY.replace("tmux_options: -f tmux.conf -2", "tmux_options: '-8'")
        .replace("\"'/opt/my tmux/tmux-3.4' -u\"", "tmux -L fleet-every -f tmux.conf")
        .replace('notify: [notify-send, "{fleet}", "{label}: {state}"]', "notify: false")
        .replace("startup_window: api", "startup_window: '5'")
        .replace("budget: 25", "budget: {usd: 0.5, per: day}")
    ),
    "no root, no socket, no notify, a notify_on of one state, startup on another host": (
        EVERY_KEY.replace("root: proj\n", "", 1)
        .replace("socket_name: fleet-every\n", "")
        .replace('notify: [notify-send, "{fleet}", "{label}: {state}"]\n', "")
        .replace("notify_on: [needs-you, error, needs-you]", "notify_on: error")
        .replace("startup_window: api", "startup_window: remote")
        .replace("budget: 25\n", "")
    ),
    "an empty root, tmux_options only, no startup, attach": (
        EVERY_KEY.replace("root: proj\n", "root: ''\n", 1)
        .replace("tmux_command: \"'/opt/my tmux/tmux-3.4' -u\"\n", "")
        .replace("startup_window: api\nstartup_pane: 1\n", "")
        .replace("attach: false", "attach: true")
        .replace("notify_on: [needs-you, error, needs-you]", "notify_on: []")
    ),
}
WORKTREES = EVERY_KEY.replace(
    '        - G: claude-run 🤖 --description "Owns ✓"\n',
    '        - G: claude-run 🤖 --description "Owns ✓"\n'
    + """  - trees:
      worktree: true
      panes:
        - T1: claude-run
        - B: claude-run
        - T2:
            commands: claude-run --agent t2
            budget: 1
            worktree: own-tree
        - T3:
            commands: [claude-run]
            worktree: false
        - SDK: claude-run
        - LOG: tail -f x.log
  - single:
      worktree: one-tree
      panes: [htop, claude-run]
""",
)
VARIANTS["worktrees: windows' and panes', named, inherited, refused"] = WORKTREES
LAYOUTS = {"every key": EVERY_KEY, **VARIANTS}
