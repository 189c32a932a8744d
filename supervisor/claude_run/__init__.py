"""``claude-run``: the supervised launcher of Claude Code (what run.sh and its watchdog were).

The restart/resume/crash loop (supervise, launch_decision, launch_plan), running Claude in the
terminal's foreground (foreground), the forked watchdog that ends Claude's
tree on request (watchdog), adopted orphans (subreaper), and Claude's
arguments, binary, environment and system-prompt additions.
"""
