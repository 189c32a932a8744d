"""tmux fleets of supervised agents: one labelled, supervised Claude per pane (fleet.sh's replacement)."""
