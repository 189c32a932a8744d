"""``fleet budget``: show the fleet's budgets and spend, or set or raise one at once."""

from __future__ import annotations

import typing as t

import typer

from claude_shepherd.fleet.commands.options import LayoutArg, MachineOpt, SocketOpt
from claude_shepherd.fleet.output import printer_of


def budget(
    ctx: typer.Context,
    layout: LayoutArg = None,
    pane: t.Annotated[
        str | None, typer.Option("--pane", metavar="LABEL", help="The budget of this pane's agent.")
    ] = None,
    window: t.Annotated[
        str | None, typer.Option("--window", metavar="W", help="The budget of this window's agents together.")
    ] = None,
    set_usd: t.Annotated[
        float | None,
        typer.Option("--set", metavar="USD", show_default=False, help="Set the budget to USD."),
    ] = None,
    add_usd: t.Annotated[
        float | None,
        typer.Option("--add", metavar="USD", show_default=False, help="Raise the budget by USD."),
    ] = None,
    remove: t.Annotated[
        bool,
        typer.Option(
            "--remove", help="Remove the budget (the fleet's, --window's or --pane's): it holds nobody."
        ),
    ] = False,
    per: t.Annotated[
        str | None,
        typer.Option(
            "--per",
            metavar="PERIOD",
            show_default=False,
            help="life, day or week (with --set; default: the budget's own, else life).",
        ),
    ] = None,
    socket: SocketOpt = None,
    as_json: MachineOpt = False,
) -> None:
    """Budgets and spend; --set/--add changes the fleet's (or --window's, --pane's) at once, and paused agents go on.

    Example: fleet budget fleet-2x2 --pane SDK --set 5
    """
    from claude_shepherd.fleet.resolve import resolve  # lazy, as in every verb: keeps `fleet --help` fast
    from claude_shepherd.supervisor.errors import UsageError
    from claude_shepherd.supervisor.session.budgets import amount_problem

    if sum(x is not None and x is not False for x in (set_usd, add_usd, remove or None)) > 1:
        raise UsageError("give one of --set USD, --add USD or --remove")
    if add_usd is not None and not add_usd > 0:
        raise UsageError(
            f"--add takes the USD to add, more than 0; to lower a budget, --set it; got {add_usd:g}"
        )
    for option, usd in (("--set", set_usd), ("--add", add_usd)):
        problem = amount_problem(usd) if usd is not None else None
        if problem is not None:
            raise UsageError(
                f"{option} {usd:g} {problem}: give USD as a whole number of cents like 5 or 2.50 "
                "(to remove a budget: --remove)"
            )
    if per is not None and per not in ("life", "day", "week"):
        raise UsageError(f"--per is life, day or week; got {per!r}")
    if per is not None and set_usd is None:
        raise UsageError("--per goes with --set USD (a new budget); --add keeps the budget's period")
    out = printer_of(ctx).use_json(as_json)
    out.show(resolve(out, layout, socket, verb="budget").budget(window, pane, set_usd, add_usd, per, remove))
