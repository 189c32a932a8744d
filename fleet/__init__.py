"""tmux fleets of supervised agents (libtmux)."""
