"""What a refused command must look like: exactly one line on stderr, naming its program."""

from __future__ import annotations

import subprocess


def one_line_error(
    result: subprocess.CompletedProcess[str], *words: str, program: str = "session", status: int = 1
) -> str:
    """The single ``PROGRAM: error: ...`` line of a command that failed with *status*, holding each of
    *words*; the test fails on anything else (a traceback, two lines, nothing, another status)."""
    assert result.returncode == status, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{program}: error: "), result.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]
