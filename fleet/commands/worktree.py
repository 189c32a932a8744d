"""``fleet worktree ls`` / ``remove``: agents' worktrees, and removing one without losing work."""

from __future__ import annotations

import typing as t
from pathlib import Path

import typer

from claude_shepherd.fleet.commands.options import MachineOpt
from claude_shepherd.fleet.output import printer_of

app = typer.Typer(
    name="worktree",
    help="Agents' git worktrees (claude -w NAME: .claude/worktrees/NAME on branch worktree-NAME). "
    "Nothing else removes one.",
    epilog="Example: fleet worktree ls",
    no_args_is_help=True,
    rich_markup_mode=None,
)

RepoOpt = t.Annotated[
    Path | None,
    typer.Option("--repo", metavar="DIR", show_default=False,
                 help="The repository (default: the one the current directory is in)."),
]  # fmt: skip


@app.command("ls")
def ls(ctx: typer.Context, repo: RepoOpt = None, as_json: MachineOpt = False) -> None:
    """Each agent worktree of the repository: its branch, what is in it (uncommitted changes, untracked
    files, commits on no other branch, stashes made in it), who runs in it, its size.

    Example: fleet worktree ls --repo ~/src/api
    """
    from claude_shepherd.fleet import worktrees as wt

    out = printer_of(ctx)
    where = wt.repository(repo or Path.cwd())
    found = wt.inspect(where)
    if as_json:
        out.document(
            [
                {
                    "name": w.name,
                    "path": str(w.entry.path),
                    "branch": w.entry.branch,
                    "locked": w.entry.locked,
                    "stale": w.entry.prunable,
                    "clean": w.work.empty,
                    "work": w.work.describe(),
                    "users": list(w.users),
                    "size": wt.size_of(w.entry.path) if not w.entry.prunable else None,
                }
                for w in found
            ]
        )
        return
    if not found:
        out.say(f"{where}: no agent worktrees")
        return
    out.say(f"Agent worktrees of {where}:")
    for w in found:
        if w.entry.prunable:
            kept = f"; its branch holds {w.work.describe()}" if not w.work.empty else ""
            out.say(
                f"  {w.name}  {w.entry.branch or 'detached'}  stale: its folder is gone{kept} "
                "(fleet doctor --fix prunes the entry, never the branch)"
            )
            continue
        used = f"; in use by {', '.join(w.users)}" if w.users else ""
        out.say(
            f"  {w.name}  {w.entry.branch or 'detached'}  {w.work.describe()}  {wt.size_of(w.entry.path)}{used}"
        )


@app.command("remove")
def remove(
    ctx: typer.Context,
    name: t.Annotated[str, typer.Argument(metavar="NAME", help="The worktree's name (fleet worktree ls).")],
    repo: RepoOpt = None,
    force: t.Annotated[
        bool,
        typer.Option(
            "--force",
            help="Remove it even with uncommitted changes, untracked files or stashes "
            "(a branch with commits on no other branch is kept all the same).",
        ),
    ] = False,
) -> None:
    """Remove an agent's worktree: refused while anything runs in it, and, unless --force, while it holds
    work (it says what).

    Example: fleet worktree remove api-A
    """
    from claude_shepherd.fleet.worktree_removal import remove as remove_worktree
    from claude_shepherd.fleet.worktrees import repository

    printer_of(ctx).say(remove_worktree(repository(repo or Path.cwd()), name, force=force))
