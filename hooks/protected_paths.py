"""Files an agent may not write with Claude's file tools, whatever its session says.

The gates rest on files within an agent's reach: the session state (an Edit
of ``.state.json`` could clear ``overflowed`` or move usage into the future),
the lookup index, another agent's session folder (its handover lands in that
agent's restart prompt) — in the caller's sessions root and in every other
root this user's supervisors and ``session activate`` recorded
(:mod:`claude_shepherd.supervisor.session.roots`, read for these tools only),
with that registry itself — our own code and the ``session`` shim (every
"allowed" ``session`` call would run the agent's code), Claude's shell
snapshots, the shell start-up files they are made from and the completion
scripts those load (a ``session()`` function there shadows the command), the settings that hold our hooks,
the configs whose MCP servers Claude starts (``~/.claude.json``, ``$CLAUDE_CONFIG_DIR/.claude.json``, the
project's ``.mcp.json``), the ``/session`` skill, and the tmux the hooks run. Write, Edit, MultiEdit and
NotebookEdit of any of them are denied, before every other rule.

The target is judged both as written (made absolute, ``~`` expanded) and
with every symlink resolved, and compared by whole path components, so a
link, a ``..`` or a dangling symlink does not slip by. What an agent runs
from its Bash tool is not covered: see docs/SECURITY.md, "What it cannot hold".
Standard library only.
"""

from __future__ import annotations

import os
import sys

from claude_shepherd.hooks.git_folders import DOT_GIT, git_files
from claude_shepherd.hooks.process_paths import PROCESS_RELATIVE, process_relative
from claude_shepherd.hooks.read_whitelist import is_under
from claude_shepherd.hooks.tool_call import ToolCall
from claude_shepherd.supervisor.env import CONFIG_DIR_ENV, PROJECT_DIR_ENV
from claude_shepherd.supervisor.session.fields import STATE_FILE
from claude_shepherd.supervisor.session.index import INDEX_DIRNAME
from claude_shepherd.supervisor.session.paths import (
    project_root,
    sessions_root,
    worktree_checkout,
)
from claude_shepherd.supervisor.session.programs import SCRIPTS, tmux_path

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds per hook call; annotations are never evaluated
    import typing as t

    from claude_shepherd.hooks.locate import Caller

WRITE_TOOLS: dict[str, str] = {
    "Write": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
}
"""Claude's file-writing tools and the input field naming the file each one writes."""

OUR_PACKAGES = ("supervisor", "hooks", "fleet")
SHIM_PARENT = "claude-shepherd"
SHELL_STARTUP_FILES = (
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".bash_aliases",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
)
SETTINGS_FILES = ("settings.json", "settings.local.json")
CLAUDE_JSON = ".claude.json"
MCP_JSON = ".mcp.json"
STARTS_CODE = "a Claude config whose MCP servers run at Claude's next start"
OPERATOR_CODE = "start-up code of the fleet's operator"
GIT_FOLDER = f"a git folder a .git file points to ({OPERATOR_CODE}: git runs its configuration and hooks)"
GIT_INCLUDED = f"a file git's configuration includes ({OPERATOR_CODE}: its filters and hooks run)"
LAYOUT_FOLDERS = frozenset({"tmuxinator", ".tmuxinator"})
"""Folders ``fleet`` finds layouts in by name (and ``./tmuxinator`` wherever it is run): a layout's
``on_project_start``, ``pre_window``, panes and ``notify`` run as the person who starts the fleet."""
GIT_CODE = frozenset({"config", "config.worktree", "hooks"})
"""What of a bare ``NAME.git`` folder runs code at the next git command (``core.fsmonitor``,
``core.pager`` and the filters of ``config``; ``hooks/``): Claude Code's own git calls and the
person's included."""
INSTALL_RECORD = "installed.json"
"""claude_shepherd.fleet.hosts.install.RECORD (the fleet's modules are not the hooks' to import)."""
TAG = "§CMD_PROTECTED_FILE"


def target(call: ToolCall) -> str | None:
    """The file a writing tool call names, if it is one."""
    field = WRITE_TOOLS.get(call.name)
    if field is None:
        return None
    value = call.input.get(field)
    return value if isinstance(value, str) else ""


def _forms(path: str, cwd: str, home: str) -> list[str]:
    """*path* as written (absolute, normalised) and with every symlink resolved."""
    if path == "~" or path.startswith("~/"):
        path = home + path[1:]
    lexical = os.path.normpath(os.path.join(cwd, path))
    return [lexical, os.path.realpath(lexical)]


def _code_paths() -> list[tuple[str, str]]:
    """Everywhere Python finds code for our commands and hooks: a module planted in any of them runs
    inside every agent's `session` call or hook, outside every gate.

    The folder holding our packages (site-packages, or an editable install's checkout), the virtual
    environment (its bin/ comes first on a console script's sys.path; site-packages' .pth files run at
    start-up), and the standard library the interpreter loads.
    """
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    found = [(here, "the folder claude-shepherd's code is loaded from")]
    if sys.prefix != sys.base_prefix:
        found.append((sys.prefix, "the Python environment claude-shepherd runs in"))
        # `fleet host add` records beside the environment what it installed; `fleet doctor` reads it.
        found.append(
            (os.path.join(os.path.dirname(sys.prefix), INSTALL_RECORD), "the record of this install")
        )
    found.append((os.path.dirname(os.__file__), "the Python standard library the hooks run on"))
    found.append(
        (os.path.dirname(sys.executable), "the folder of the interpreter and commands the hooks run")
    )
    return found


def _protected(cwd: str, root: str, env: t.Mapping[str, str]) -> list[tuple[str, str]]:
    """(path, what it is) of every protected file or folder; folders protect everything under them."""
    home = env.get("HOME") or os.path.expanduser("~")
    configs = [os.path.join(home, ".claude")]
    configured = env.get(CONFIG_DIR_ENV, "").strip()
    if configured and os.path.isabs(configured):
        configs.append(configured)
    cache = env.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
    bindir = os.path.dirname(sys.executable)
    from claude_shepherd.supervisor.session.roots import registry_dir

    state = "claude-shepherd's state (the registry of sessions roots, pane logs, the fleet's scripts)"
    found: list[tuple[str, str]] = [(os.path.join(root, INDEX_DIRNAME), "the session index")]
    # The folder this environment names, and the default one: `fleet` may run where $XDG_STATE_HOME is
    # not what Claude's environment says (a status bar, cron, another terminal).
    found += [
        (folder, state)
        for folder in sorted({registry_dir(env), registry_dir({"HOME": home}), registry_dir({})})
    ]
    found += _code_paths()
    found += [(os.path.join(bindir, s), "claude-shepherd's installed commands") for s in SCRIPTS]
    found.append((sys.executable, "the interpreter the hooks run on"))
    found.append((os.path.join(cache, SHIM_PARENT), "the session command's shim folder"))
    found.append((os.path.join(home, CLAUDE_JSON), STARTS_CODE))
    for config in configs:
        found.append((os.path.join(config, CLAUDE_JSON), STARTS_CODE))
        found.append((os.path.join(config, "shell-snapshots"), "Claude's shell snapshots"))
        # The overflow gate reads usage from the transcripts, as the source an agent cannot easily write.
        found.append((os.path.join(config, "projects"), "Claude's transcripts"))
        found += _session_skill(config)
        found += [
            (os.path.join(config, name), "a settings file holding the hooks") for name in SETTINGS_FILES
        ]
    projects = {str(project_root(cwd))}
    checkout = worktree_checkout(cwd)  # an agent worktree's: Claude reads its settings too
    if checkout is not None:
        projects.add(str(checkout))
    project_dir = env.get(PROJECT_DIR_ENV, "").strip()
    if project_dir and os.path.isabs(project_dir):
        projects.add(project_dir)
    for project in projects:
        found += [
            (os.path.join(project, ".claude", name), "a settings file holding the hooks")
            for name in SETTINGS_FILES
        ]
        found += _session_skill(os.path.join(project, ".claude"))
        found.append((os.path.join(project, MCP_JSON), STARTS_CODE))
    zdotdir = env.get("ZDOTDIR", "").strip()
    for base in {home, zdotdir} if zdotdir and os.path.isabs(zdotdir) else {home}:
        found += [
            (os.path.join(base, name), "a shell start-up file (Claude's shell snapshots are made from it)")
            for name in SHELL_STARTUP_FILES
        ]
    from claude_shepherd.supervisor.session.completion_files import script_paths

    found += [(path, "a completion script the shell's start-up files load") for path in script_paths(home)]
    tmux = tmux_path(env)
    if tmux is not None:
        found.append((tmux, "the tmux the hooks run"))
    found += _operator_startup(home, env)
    from claude_shepherd.supervisor.pane_notify import run_dir

    for run in {run_dir(env), run_dir({})}:
        found.append((run, "the hooks' alert bookkeeping (one agent could silence another's alerts)"))
    return found


def _operator_startup(home: str, env: t.Mapping[str, str]) -> list[tuple[str, str]]:
    """What ``fleet`` (and the person's tmux and ssh) runs, or reads to decide what to run: tmux's
    configuration (``run-shell`` runs at ``fleet start``), ssh's (``ProxyCommand``, ``LocalCommand``,
    ``Match exec`` run at the next ``fleet status``), the layouts ``fleet`` finds by name, git's, and
    the shell start-up files of fish and bash-completion (a pane's shell runs them)."""
    configs = {os.path.join(home, ".config")}
    xdg = env.get("XDG_CONFIG_HOME", "").strip()
    if xdg and os.path.isabs(xdg):
        configs.add(xdg)
    found = [
        (os.path.join(home, ".tmux.conf"), f"tmux's configuration ({OPERATOR_CODE})"),
        (os.path.join(home, ".tmux"), f"tmux's plugins and sourced files ({OPERATOR_CODE})"),
        ("/etc/tmux.conf", f"tmux's configuration ({OPERATOR_CODE})"),
        (os.path.join(home, ".ssh"), f"ssh's configuration and keys ({OPERATOR_CODE})"),
        ("/etc/ssh", f"ssh's configuration ({OPERATOR_CODE})"),
        (os.path.join(home, ".gitconfig"), f"git's configuration ({OPERATOR_CODE})"),
        ("/etc/gitconfig", f"git's configuration ({OPERATOR_CODE})"),
        ("/etc/gitattributes", f"git's attributes: which filters run ({OPERATOR_CODE})"),
        *_programs(home, env),
        (os.path.join(home, ".bash_completion"), "a shell start-up file"),
        (
            os.path.join(home, "Library", "LaunchAgents"),
            f"launchd's agents, `fleet boot`'s among them ({OPERATOR_CODE})",
        ),
    ]
    for config in configs:
        found += [
            (os.path.join(config, "tmux"), f"tmux's configuration ({OPERATOR_CODE})"),
            (os.path.join(config, "git"), f"git's configuration ({OPERATOR_CODE})"),
            (os.path.join(config, "fish"), "a shell start-up file"),
            (
                os.path.join(config, "systemd"),
                f"the user's systemd units, `fleet boot`'s among them ({OPERATOR_CODE})",
            ),
        ]
    return found


def _on_path(name: str, env: t.Mapping[str, str]) -> list[str]:
    """Every *name* on ``$PATH``, links resolved."""
    found = []
    for folder in env.get("PATH", os.defpath).split(os.pathsep)[:64]:
        candidate = os.path.join(folder or ".", name)
        if os.path.isfile(candidate):
            found.append(os.path.realpath(candidate))
    return found


def _programs(home: str, env: t.Mapping[str, str]) -> list[tuple[str, str]]:
    """git and Claude Code as the operator's tools find them: a binary or script there runs as the
    person; git's own prefix holds its system configuration (``PREFIX/etc/gitconfig``: Homebrew's, a
    user's own build) and its helpers (``PREFIX/libexec/git-core``)."""
    found: list[tuple[str, str]] = []
    for git in _on_path("git", env):
        prefix = os.path.dirname(os.path.dirname(git))
        found += [(git, f"the git the operator runs ({OPERATOR_CODE})"),
                  (os.path.join(prefix, "etc", "gitconfig"), f"git's configuration ({OPERATOR_CODE})"),
                  (os.path.join(prefix, "etc", "gitattributes"), f"git's attributes ({OPERATOR_CODE})"),
                  (os.path.join(prefix, "libexec", "git-core"), f"git's own programs ({OPERATOR_CODE})")]  # fmt: skip
    claudes = _on_path("claude", env)
    configured = env.get("CLAUDE_BIN", "").strip()
    if configured and os.path.isabs(configured):
        claudes.append(os.path.realpath(configured))
    kind = f"the Claude Code claude-run starts ({OPERATOR_CODE})"
    found += [(path, kind) for path in claudes]
    found += [
        (os.path.join(home, ".claude", "local"), kind),
        (os.path.join(home, ".local", "share", "claude"), kind),
    ]
    global_config = env.get("GIT_CONFIG_GLOBAL", "").strip()
    if global_config and os.path.isabs(global_config):
        found.append((global_config, f"git's configuration ({OPERATOR_CODE})"))
    return found


def _runs_code(path: str) -> str | None:
    """What *path* is, by its folders' names wherever it lies, when it is code the person runs: a layout
    in a ``tmuxinator`` folder, a ``.git`` folder's configuration or hooks."""
    parts = path.split(os.sep)
    if LAYOUT_FOLDERS.intersection(parts[:-1]):
        return f"a fleet layout ({OPERATOR_CODE}: its commands run at the next `fleet start`)"
    if any(part.lower() == DOT_GIT for part in parts):  # a case-insensitive file system (macOS) too
        return f"git's own files ({OPERATOR_CODE}: a .git file or folder says which configuration git runs)"
    for at, part in enumerate(parts[:-1]):
        if part.endswith(".git") and GIT_CODE.intersection(parts[at + 1 :]):
            return f"git's configuration or hooks ({OPERATOR_CODE})"
    return None


def _session_skill(config: str) -> list[tuple[str, str]]:
    """Where Claude Code finds a ``/session`` skill or command: a planted one would hijack restarts."""
    return [
        (os.path.join(config, "skills", "session"), "the /session skill"),
        (
            os.path.join(config, "commands", "session.md"),
            "a /session command (it would stand in for the skill)",
        ),
        (os.path.join(config, "commands", "session"), "a /session command (it would stand in for the skill)"),
    ]


def _other_session(path: str, root: str, own_session: str | None) -> bool:
    """Is *path* in the sessions root but not inside the caller's own session folder?

    A file directly in the root would squat a future session's name.
    """
    if not is_under(path, root) or path == root:
        return False
    relative = os.path.relpath(path, root)
    name = relative.split(os.sep, 1)[0]
    return name != own_session or os.sep not in relative


def _own_project(env: t.Mapping[str, str]) -> set[str]:
    """The project Claude Code started in (``CLAUDE_PROJECT_DIR``, which a `cd` does not move), if set."""
    project = env.get(PROJECT_DIR_ENV, "").strip()
    return {project, os.path.realpath(project)} if project and os.path.isabs(project) else set()


def _roots_of(projects: set[str], env: t.Mapping[str, str]) -> set[str]:
    """The sessions root of each of *projects*, as written and symlink-resolved."""
    found = {str(sessions_root(cwd=project, env=env)) for project in projects}
    return found | {os.path.realpath(root) for root in found}


def _foreign_root(path: str, recorded: t.AbstractSet[str], own: set[str], here: set[str]) -> str | None:
    """The recorded sessions root, not the caller's own, that holds *path*, if any (each protected whole).

    One set lookup per ancestor of *path*, however many roots are recorded. A recorded root around
    the caller's project or own root (``/``, a home) protects nothing for it, and one
    inside its own root adds nothing: anyone may record a root, so a root can add protection but
    never stop another agent's work in its own project.
    """
    ancestor = path
    while ancestor and ancestor != os.sep:
        if (
            ancestor in recorded
            and not any(is_under(h, ancestor) for h in here)
            and not any(is_under(ancestor, o) for o in own)
        ):
            return ancestor
        parent = os.path.dirname(ancestor)
        ancestor = "" if parent == ancestor else parent
    return None


def protected_reason(call: ToolCall, caller: Caller, cwd: str, env: t.Mapping[str, str]) -> str | None:
    """The deny reason when *call* writes a protected file, else None."""
    path = target(call)
    if path is None:
        return None
    if not path or "\0" in path:
        return f"{TAG}: {call.name} needs a file path; none usable was given."
    home = env.get("HOME") or os.path.expanduser("~")
    if process_relative(path, cwd, home):
        return f"{TAG}: {call.name} of {path} is refused: {PROCESS_RELATIVE}"
    root = str(caller.root)
    own = caller.found.session_dir.name if caller.found is not None else None
    from claude_shepherd.supervisor.session.roots import known_roots

    roots = {root, os.path.realpath(root)}
    recorded = known_roots(env)
    # The caller's own root and project come from where Claude Code started it, never from the hook's cwd:
    # the agent moves that with `cd`, into another root it must not be exempted from.
    project = _own_project(env)
    own_roots = _roots_of(project, env) if project else roots
    here = {*own_roots, *project}
    forms = _forms(path, cwd, home)
    protected = _protected(cwd, root, env)
    starts = {cwd, *project, *(os.path.dirname(form) for form in forms)}
    checkout = worktree_checkout(cwd)
    projects = {*project, str(project_root(cwd)), *([str(checkout)] if checkout is not None else [])}
    xdg = {os.path.join(home, ".config")}
    configured = env.get("XDG_CONFIG_HOME", "").strip()
    if configured and os.path.isabs(configured):
        xdg.add(configured)
    folders, included = git_files(starts, projects, home, xdg)
    protected += [(folder, GIT_FOLDER) for folder in folders]
    protected += [(path, GIT_INCLUDED) for path in included]
    for form in forms:
        what = None
        name = os.path.basename(form)
        if name == STATE_FILE or name.startswith(STATE_FILE + "."):
            what = "a session's state file (or its lock)"
        elif (code := _runs_code(form)) is not None:
            what = code
        elif any(_other_session(form, r, own) for r in roots):
            what = "outside your own session folder in the sessions root"
        elif _foreign_root(form, recorded, own_roots, here) is not None:
            what = "in another sessions root (its sessions belong to other agents)"
        else:
            folded = form.casefold()  # a case-insensitive file system (macOS) names one file many ways
            for place, kind in protected:
                if any(is_under(folded, p.casefold()) for p in {place, os.path.realpath(place)}):
                    what = kind
                    break
        if what is not None and OPERATOR_CODE in what:
            return (
                f"{TAG}: {call.name} of {path} is refused: it is {what}, which runs with the person's "
                "power outside every gate. Ask the person to make the change."
            )
        if what is not None:
            return (
                f"{TAG}: {call.name} of {path} is refused: it is {what}, which the session gates rely on. "
                "Session state changes only through the `session` commands (session phase, log, update, "
                "dehydrate, deactivate); another agent's session is never yours to write."
            )
    return None
