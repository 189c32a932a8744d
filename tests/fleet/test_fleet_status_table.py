"""``fleet status``'s table on a pipe is drawn without rich only where rich would draw the same lines."""

from __future__ import annotations

import io
import random

import pytest
from rich.console import Console
from rich.table import Table
from rich.text import Text

from claude_shepherd.fleet.status_table import COLUMNS, PIPED_WIDTH, plain_table


def by_rich(header: list[str], rows: list[list[str]]) -> list[str]:
    """What status_table.render's rich table prints to a pipe."""
    table = Table(box=None, header_style="bold", pad_edge=False)
    for column in header:
        table.add_column(column, no_wrap=column in ("HOST", "PANE", "SUPERVISOR", "CLAUDE", "CTX", "COST"))
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))
    out = io.StringIO()
    Console(file=out, highlight=False, width=PIPED_WIDTH).print(table)
    return out.getvalue().splitlines()


WORDS = ["—", "w0:P00", "12345", "S_P00", "implement", "Phase 1: Setup", "active", "no", "0%", "$0.25",
         "exited SIGKILL", "needs-you", "x", "a longer phase name"]  # fmt: skip


@pytest.mark.parametrize("seed", range(40))
def test_the_plain_table_is_rich_s(seed: int) -> None:
    pick = random.Random(seed)
    header = (["HOST"] if seed % 2 else []) + list(COLUMNS)
    rows = [[pick.choice(WORDS) for _ in header] for _ in range(pick.randrange(0, 6))]
    assert plain_table(header, rows) == by_rich(header, rows)


@pytest.mark.parametrize("extra", [-1, 0, 1])
def test_a_table_as_wide_as_a_pipe_is_drawn_plain_and_a_wider_one_by_rich(extra: int) -> None:
    header = list(COLUMNS)
    gaps = 2 * (len(header) - 1)
    last = PIPED_WIDTH - gaps - sum(len(c) for c in header[:-1]) + extra
    rows = [[*header[:-1], "s" * last]]
    drawn = plain_table(header, rows)
    if extra > 0:
        assert drawn is None
    else:
        assert drawn == by_rich(header, rows) and len(drawn[0]) == PIPED_WIDTH + extra


def test_what_rich_draws_otherwise_is_left_to_it() -> None:
    wide = [["x" * 30 for _ in COLUMNS]]  # wider than a pipe's 250 columns: rich wraps it
    assert plain_table(list(COLUMNS), wide) is None
    assert by_rich(list(COLUMNS), wide) != [
        "  ".join(c.ljust(30) for c in line) for line in (list(COLUMNS), wide[0])
    ]
    for cell in ("日本語", "e\u0301", "\u200b"):  # two columns wide, combining, zero width
        assert plain_table(list(COLUMNS), [[cell] * len(COLUMNS)]) is None
