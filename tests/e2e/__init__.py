"""End-to-end tests against the real Claude Code CLI (a package, so its module names never clash)."""
