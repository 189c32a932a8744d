"""The Bash whitelist is a security boundary: table-driven bypass attempts and legitimate forms.

Each bypass is checked twice: by the parser, and end to end through the session
gate (SESSION_REQUIRED=1, no session) and the overflow gate (context over the
threshold), where the original's prefix match let them all through
(original-system §5.3).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from support.hooks import activate, bash, call, hook_env, state

from claude_shepherd.hooks.bash_whitelist import MAX_COMMAND_LINE, parse, whitelisted
from claude_shepherd.hooks.config import load
from claude_shepherd.supervisor.session.fields import F

SESSION_SCRIPT = os.path.join(os.path.dirname(sys.executable), "session")
PROGRAMS = frozenset({"session", SESSION_SCRIPT})

BYPASSES: list[tuple[str, str]] = [
    # chaining after a whitelisted prefix
    ("semicolon", "session find; cat /etc/shadow"),
    ("trailing semicolon", "session find;"),
    ("and", "session find && rm -rf /"),
    ("or", "session find || rm -rf /"),
    ("pipe", "session find | sh"),
    ("pipe stderr", "session find |& sh"),
    ("background", "session find & rm -rf /"),
    ("background alone", "session find &"),
    ("disown", "session find & disown"),
    ("redirect then chain", "session find 2>&1; id"),
    ("redirect then pipe", "session find 2>&1 | cat"),
    ("tab then semicolon", "session find\tx;id"),
    # substitution
    ("command substitution", "session $(rm -rf /)"),
    ("backticks", "session `rm -rf /`"),
    ("substitution in double quotes", 'session "$(id)"'),
    ("backticks in double quotes", 'session "`id`"'),
    ("variable", "session $HOME"),
    ("braced variable", "session find ${IFS}x"),
    ("arithmetic", "session $((1+1))"),
    ("ansi-c quoting", "session $'\\x41'"),
    ("process substitution in", "session find <(cat /etc/shadow)"),
    ("process substitution out", "session find >(tee /tmp/x)"),
    # redirection elsewhere
    ("redirect out", "session find > /etc/passwd"),
    ("append", "session find >> ~/.bashrc"),
    ("redirect in", "session find < /etc/shadow"),
    ("stderr to file", "session find 2> /tmp/x"),
    ("stdout to stderr", "session find >&2"),
    ("numbered dup", "session find 1>&2"),
    ("glued dup", "session find 2>&1x"),
    ("here-string", "session log d <<<'x'"),
    # newlines and line tricks
    ("newline", "session find\nrm -rf /"),
    ("crlf", "session find\r\nrm -rf /"),
    ("blank line then command", "session find\n\nid"),
    ("line continuation", "session find \\\nid"),
    ("leading newline", " \nsession find"),
    ("carriage return only", "session find\rid"),
    # here-documents that are not inert or not alone
    ("unquoted delimiter", "session log d <<EOF\n$(id)\nEOF"),
    ("backslash-quoted delimiter", "session log d <<\\EOF\nx\nEOF"),
    ("partly quoted delimiter", "session log d <<'E'OF\nx\nEOF"),
    ("command after heredoc", "session log d <<'EOF'\nx\nEOF\nid"),
    ("unterminated heredoc", "session log d <<'EOF'\nx\n"),
    ("chain on heredoc line", "session log d <<'EOF' ; id\nx\nEOF"),
    ("two heredocs", "session log d <<'EOF' <<'EOF2'\nx\nEOF\ny\nEOF2"),
    ("heredoc before program", "<<'EOF' session log d\nx\nEOF"),
    ("delimiter with trailing blank", "session log d <<'EOF'\nx\nEOF \nid"),
    # env prefixes and wrappers
    ("env assignment", "FOO=1 session find"),
    ("path hijack", "PATH=/tmp/evil:$PATH session find"),
    ("assignment only", "session=1"),
    ("env", "env session find"),
    ("command builtin", "command session find"),
    ("exec", "exec session find"),
    ("nohup", "nohup session find"),
    ("sudo", "sudo session find"),
    ("time", "time session find"),
    ("negation", "! session find"),
    ("coproc", "coproc session find"),
    ("bash -c", "bash -c 'session find'"),
    ("sh -c", "sh -c session"),
    ("subshell", "(session find)"),
    ("group", "{ session find; }"),
    # quoting tricks on the program
    ("single-quoted program", "'session' find"),
    ("double-quoted program", '"session" find'),
    ("partly quoted program", "s'ession' find"),
    ("inner double quotes", 'se"ss"ion find'),
    ("backslash program", "\\session find"),
    ("backslash inside", "sess\\ion find"),
    ("unterminated single quote", "session 'find"),
    ("unterminated double quote", 'session "find'),
    # lookalike names and paths
    ("session.sh", "session.sh find"),
    ("sessions", "sessions find"),
    ("session-x", "session-x find"),
    ("sessionx", "sessionx find"),
    ("upper case", "SESSION find"),
    ("cyrillic s", "\u0455ession find"),
    ("relative path", "./session find"),
    ("other absolute path", "/tmp/evil/session find"),
    ("system path", "/usr/bin/session find"),
    (
        "traversal to our script",
        os.path.join(os.path.dirname(sys.executable), "..", "bin", "session") + " find",
    ),
    ("bash-era script", "~/.claude/scripts/session.sh find"),
    ("bash-era engine", "engine session find"),
    # globs, braces, comments, control characters, nothing
    ("glob", "session *"),
    ("question glob", "session find ?"),
    ("brace expansion", "session {a,b}"),
    ("comment", "session find #; rm"),
    ("nul byte", "session\x00find"),
    ("escape sequence", "session find \x1b[2J"),
    ("empty", ""),
    ("blank", "   "),
]

LEGITIMATE: list[tuple[str, str]] = [
    ("find", "session find"),
    ("activate", "session activate sessions/2026_11_22_TOPIC implement"),
    ("extra spaces", "session  phase  sessions/X  '3: Build'"),
    ("double-quoted argument", 'session phase sessions/X "Phase 3: Build"'),
    ("single-quoted metacharacters are inert", "session phase sessions/X 'Build; then $(rm) `x` | y > z'"),
    ("surrounding blanks", "  session find  "),
    ("trailing newline", "session find\n"),
    ("absolute script path", f"{SESSION_SCRIPT} find"),
    ("stderr to stdout", "session find 2>&1"),
    ("dehydrate heredoc", "session dehydrate sessions/X <<'EOF'\n# Handover\n$(not run) `x` ; | && > y\nEOF"),
    ("double-quoted delimiter", 'session log sessions/X <<"EOF"\nentry\nEOF\n'),
    ("tab-stripping heredoc", "session log sessions/X <<-'EOF'\n\tentry\n\tEOF"),
    ("blank before delimiter", "session log sessions/X << 'EOF'\nentry\nEOF"),
    ("heredoc then redirect", "session log sessions/X <<'EOF' 2>&1\nentry\nEOF"),
    ("deactivate", "session deactivate sessions/X --keywords a,b <<'EOF'\ndone\nEOF"),
    ("update", "session update sessions/X toolUseWithoutLogsBlockAfter 20"),
    ("unicode argument", "session phase sessions/X 3:Überblick"),
    ("bare", "session"),
]


@pytest.mark.parametrize("command", [c for _, c in BYPASSES], ids=[n for n, _ in BYPASSES])
def test_bypass_is_not_whitelisted(command: str) -> None:
    assert whitelisted(command, PROGRAMS) is None


@pytest.mark.parametrize("command", [c for _, c in LEGITIMATE], ids=[n for n, _ in LEGITIMATE])
def test_legitimate_form_is_whitelisted(command: str) -> None:
    invocation = whitelisted(command, PROGRAMS)
    assert invocation is not None and invocation.program in PROGRAMS


def test_corpus_is_big_enough() -> None:
    assert len(BYPASSES) >= 60


def test_parse_returns_words_and_heredoc_body() -> None:
    inv = parse("session log 'sessions/a b' <<'EOF'\nline $(x)\nEOF\n")
    assert inv is not None
    assert (inv.program, inv.args, inv.heredoc) == ("session", ("log", "sessions/a b"), "line $(x)")
    assert parse('session phase d "3: Build"').args == ("phase", "d", "3: Build")  # type: ignore[union-attr]


def test_a_command_line_past_the_lexers_bound_is_not_a_session_call() -> None:
    """Lexing is char by char: a line longer than any real call is refused unread, so the hook's
    time does not grow with it; a long here-document body is still fine (found by the regex engine)."""
    line = "session log d " + "a" * MAX_COMMAND_LINE
    assert parse(line[: MAX_COMMAND_LINE - 1]) is not None
    assert parse(line) is None
    body = "entry line\n" * 100_000
    invocation = parse("session log d <<-'EOF'\n" + body + "\t\tEOF\n  \n")
    assert invocation is not None and invocation.heredoc == body.rstrip("\n")


def test_non_string_command_is_not_whitelisted() -> None:
    for value in (None, 3, ["session", "find"], {"command": "session find"}):
        assert whitelisted(value, PROGRAMS) is None


def test_extra_commands_come_from_the_environment(project: Path) -> None:
    config = load(hook_env(project, CLAUDE_HOOK_EXTRA_COMMANDS="log.sh:/opt/tools/tag"))
    assert config.extra_programs == {"log.sh", "/opt/tools/tag"}
    assert load(hook_env(project, CLAUDE_HOOK_EXTRA_COMMANDS="ok:bad;name:$(x)")).extra_programs == {"ok"}


@pytest.fixture
def gate_env(project: Path) -> dict[str, str]:
    return hook_env(project, SESSION_REQUIRED="1")


@pytest.mark.parametrize("command", [c for _, c in BYPASSES], ids=[n for n, _ in BYPASSES])
def test_session_gate_denies_bypass(project: Path, gate_env: dict[str, str], command: str) -> None:
    answer = call("pre-tool-use", bash(project, command), gate_env)
    assert answer.denied, command
    assert "No active session" in answer.reason


@pytest.mark.parametrize("command", [c for _, c in LEGITIMATE], ids=[n for n, _ in LEGITIMATE])
def test_session_gate_allows_legitimate_form(project: Path, gate_env: dict[str, str], command: str) -> None:
    assert call("pre-tool-use", bash(project, command), gate_env).allowed


def test_configured_extra_command_passes_the_gate(project: Path) -> None:
    env = hook_env(project, SESSION_REQUIRED="1", CLAUDE_HOOK_EXTRA_COMMANDS="log.sh")
    assert call("pre-tool-use", bash(project, "log.sh sessions/X"), env).allowed
    assert call("pre-tool-use", bash(project, "log.sh sessions/X; id"), env).denied
    assert call("pre-tool-use", bash(project, "tag.sh x"), env).denied
    activate(project, contextUsage=0.9)
    answer = call(
        "pre-tool-use", bash(project, "log.sh sessions/X"), env
    )  # the overflow gate admits only `session`
    assert answer.denied and "Context overflow" in answer.reason


def test_overflow_gate_denies_bypasses_and_passes_session(project: Path) -> None:
    session_dir = activate(project, contextUsage=0.9)
    env = hook_env(project)
    for _, command in BYPASSES[:20]:
        answer = call("pre-tool-use", bash(project, command), env)
        assert answer.denied and "Context overflow" in answer.reason, command
    assert state(session_dir)[F.OVERFLOWED] is True
    for _, command in LEGITIMATE:
        assert call("pre-tool-use", bash(project, command), env).allowed, command
