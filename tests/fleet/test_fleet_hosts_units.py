"""Fleets across hosts, in process: the layout's ``host:``, each host's part, the transport's command
lines, what comes back from another host, and the alert relay. The real two-host fleet over a real
sshd is in test_fleet_hosts.py."""

from __future__ import annotations

import dataclasses
import io
import json
import math
import typing as t
from pathlib import Path

import pytest

from claude_shepherd.fleet.hosts import part as pt
from claude_shepherd.fleet.hosts.envelope import Envelope, envelope
from claude_shepherd.fleet.hosts.relay import Relay
from claude_shepherd.fleet.hosts.span import Span
from claude_shepherd.fleet.hosts.span_status import gather
from claude_shepherd.fleet.hosts.transport import LocalHost, Reply, SshHost, host_timeout
from claude_shepherd.fleet.layout import LayoutError, parse_layout
from claude_shepherd.fleet.pane_status import PaneStatus
from claude_shepherd.supervisor.errors import ShepherdError, UsageError

SPAN = """\
name: duo
root: .
socket_name: fleet-duo
pre_window: export X=1
notify: [notify-send, "{label}: {state}"]
notify_on: [needs-you, error]
windows:
  - here:
      layout: tiled
      panes:
        - A: claude-run --description "Owns A"
        - [cd sub, claude-run]
  - there:
      host: dev@buildbox:2222
      root: ~/proj
      pre: [export Y=2]
      panes:
        - B: claude-run
        - C:
  - also:
      host: dev@buildbox:2222
      panes:
        - D: claude-run
"""


def layout(tmp_path: Path, text: str = SPAN) -> t.Any:
    return parse_layout(text, tmp_path / "duo.yml", cwd=tmp_path)


def test_a_window_names_its_host_and_each_host_gets_its_windows_only(tmp_path: Path) -> None:
    spec = layout(tmp_path)
    assert spec.spans_hosts and spec.hosts == (None, "dev@buildbox:2222")
    assert spec.root_problem() is None, "another host's root is checked there, not here"

    here = pt.part_document(spec, None)
    assert [next(iter(w)) for w in here["windows"]] == ["here"]
    assert here["root"] == str(tmp_path) and here["notify"] == ["notify-send", "{label}: {state}"]
    there = pt.part_document(spec, "dev@buildbox:2222")
    assert [next(iter(w)) for w in there["windows"]] == ["there", "also"]
    assert there["root"] == ".", "as written: '.' is where the login starts there (its home)"
    assert there["windows"][0]["there"]["root"] == "~/proj", "sent as written: resolved on its host"
    assert "notify" not in there and there["notify_on"] == ["needs-you", "error"], (
        "the command runs where the person is; the host keeps its bell and message"
    )
    assert there["pre_window"] == ["export X=1"] and there["socket_name"] == "fleet-duo"

    # Each part reads back as a layout of that host alone, with the same panes and labels.
    for host, document in ((None, here), ("dev@buildbox:2222", there)):
        again = parse_layout(json.dumps(document), Path("<stdin>"), cwd=tmp_path)
        assert not again.spans_hosts and again.name == "duo" and again.socket_name == "fleet-duo"
        mine = [w for w in spec.windows if w.host == host]
        assert [(w.name, [(p.label, p.commands) for p in w.panes]) for w in again.windows] == [
            (w.name, [(p.label, p.commands) for p in w.panes]) for w in mine
        ]
    with pytest.raises(LayoutError, match="no window runs on elsewhere"):
        pt.part_document(spec, "elsewhere")


@pytest.mark.parametrize(
    "host",
    ["-oProxyCommand=touch /tmp/x", "a b", "box;rm", "", "box:port", "user@@box", "[::1", "box\n"],
)
def test_a_host_that_ssh_could_read_as_an_option_or_a_command_is_refused(tmp_path: Path, host: str) -> None:
    text = SPAN.replace("dev@buildbox:2222", json.dumps(host), 1)
    with pytest.raises(LayoutError) as info:
        layout(tmp_path, text)
    assert ":14: windows[1].there.host: host " in str(info.value) and "\n" not in str(info.value)


def test_the_ssh_command_line_shares_one_connection_and_quotes_the_remote_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FLEET_SSH_COMMAND", "ssh -F '/a b/config'")
    host = SshHost("dev@buildbox:2222")
    assert (host.destination, host.port, host.ssh) == ("dev@buildbox", "2222", ["ssh", "-F", "/a b/config"])
    argv = host.terminal(host.fleet_argv(["attach", "duo", "--pane", "it's"]))
    assert argv[:3] == ["ssh", "-F", "/a b/config"] and "-T" in argv and "-p" in argv, (
        "stdin is no terminal here"
    )
    assert any(o.startswith("ControlPath=") for o in argv), "one shared connection per host"
    assert argv[-1] == ".local/share/claude-shepherd/venv/bin/fleet attach duo --pane 'it'\"'\"'s'"
    assert argv[-3:-1] == ["dev@buildbox", "--"], "nothing after the destination is read as an option"
    assert SshHost("[::1]:22").destination == "::1"

    monkeypatch.setenv("FLEET_SSH_REUSE", "0")
    plain = SshHost("box").terminal(["true"])
    assert "ControlPath=none" in plain and "ControlMaster=no" in plain
    monkeypatch.setenv("FLEET_SSH_COMMAND", "ssh -F 'unclosed")
    with pytest.raises(ShepherdError, match="FLEET_SSH_COMMAND cannot be split"):
        SshHost("box")


@pytest.mark.parametrize(
    ("raw", "expected"), [("", 10.0), ("2.5", 2.5), ("²", 10.0), ("-1", 10.0), ("1e9", 10.0)]
)
def test_the_host_timeout_is_read_as_a_bounded_number(raw: str, expected: float) -> None:
    assert host_timeout({"FLEET_HOST_TIMEOUT": raw}) == expected


def test_the_local_host_runs_programs_and_a_deadline_ends_them() -> None:
    here = LocalHost()
    done = here.run(["sh", "-c", "cat; echo err >&2; exit 3"], stdin=b"in", timeout=10)
    assert (done.reached, done.status, done.stdout, done.stderr.strip()) == (True, 3, "in", "err")
    slow = here.run(["sh", "-c", "sleep 30 & sleep 30"], timeout=0.3)
    assert not slow.reached and slow.problem == "no answer within 0.3 s" and slow.seconds < 5
    missing = here.run(["/no/such/program"], timeout=1)
    assert not missing.reached and "cannot run /no/such/program" in (missing.problem or "")


def test_what_another_host_answers_is_checked_before_it_is_believed() -> None:
    def reply(stdout: str, status: int = 0) -> Reply:
        return Reply("box", status, stdout, "fleet: error: boom\n", 0.1)

    assert envelope(reply('{"exit_code": 1, "lines": ["a", 2], "error": "bad"}')) == Envelope(
        1, ["a", "2"], "bad"
    )
    for bad in (
        "Traceback (most recent call last):",
        '{"exit_code": "1", "lines": []}',
        "[]",
        '{"lines": "x"}',
    ):
        with pytest.raises(ShepherdError, match="box: its fleet"):
            envelope(reply(bad))

    hostile = PaneStatus.from_json(
        {"label": "B", "state": "working", "context_usage": math.inf, "cost_usd": -5, "restarts": "²",
         "supervisor_pid": True, "claude_pid": 2**40, "started_at": "yesterday", "overflowed": "yes", "extra": 1}
    )  # fmt: skip
    assert (hostile.label, hostile.state) == ("B", "working")
    assert (hostile.context_usage, hostile.cost_usd, hostile.restarts) == (None, None, None)
    assert (hostile.supervisor_pid, hostile.claude_pid, hostile.started_at, hostile.overflowed) == (None,) * 4
    fine = PaneStatus.from_json(
        {"started_at": 1795000000.5, "claude_pid": 4242, "restarts": 3, "cost_usd": 1.25}
    )
    assert (fine.started_at, fine.claude_pid, fine.restarts, fine.cost_usd) == (1795000000.5, 4242, 3, 1.25)


class FakeHost:
    """A host that answers ``fleet status`` with what a test says (a Host, as the transport seam allows)."""

    def __init__(self, name: str, reply: Reply) -> None:
        self.name = name
        self.reply = reply
        self.calls: list[tuple[list[str], bytes | None]] = []

    def run(
        self, argv: t.Sequence[str], *, stdin: bytes | None = None, timeout: float | None = None
    ) -> Reply:
        self.calls.append((list(argv), stdin))
        return self.reply

    def fleet_argv(self, args: t.Sequence[str]) -> list[str]:
        return ["fleet", *args]

    def terminal(self, argv: t.Sequence[str]) -> list[str]:
        return list(argv)


def test_a_host_that_does_not_answer_shows_its_agents_unknown_never_stopped(tmp_path: Path) -> None:
    spec = layout(tmp_path)
    span = Span.of(spec)
    rows = [{"session": "duo", "window": "here", "label": "A", "pane": "%0", "pane_id": "duo:here:A",
             "state": "working", "supervisor_alive": True, "agent": True}]  # fmt: skip
    here = FakeHost("local", Reply("local", 0, json.dumps(rows), "", 0.1))
    gone = FakeHost("dev@buildbox:2222", Reply("dev@buildbox:2222", None, "", "", 5.0, "Connection refused"))
    stopped = FakeHost(
        "dev@buildbox:2222",
        Reply("x", 3, '{"error": "fleet \'duo\' is not running", "exit_code": 3}', "", 0.1),
    )
    span = Span(
        spec,
        (
            dataclasses.replace(span.parts[0], host=here),
            dataclasses.replace(span.parts[1], host=gone),
        ),
    )
    seen = gather(span)
    assert [r.state for r in seen[0].rows] == ["working"] and seen[0].problem is None
    assert {(r.window, r.label, r.state) for r in seen[1].rows} == {
        ("there", "B", "unknown"), ("there", "C", "unknown"), ("also", "D", "unknown")
    }  # fmt: skip
    assert seen[1].problem == "did not answer: Connection refused"
    argv, stdin = here.calls[0]
    assert argv == ["fleet", "status", "-", "--json"] and json.loads(stdin or b"") == span.parts[0].document

    other = Span(spec, (span.parts[0], dataclasses.replace(span.parts[1], host=stopped)))
    assert {r.state for r in gather(other)[1].rows} == {"not running"}, "answered: its part is not running"


def test_labels_are_found_on_their_host_and_a_label_on_two_hosts_must_say_which(tmp_path: Path) -> None:
    text = SPAN.replace("- D: claude-run", "- A: claude-run")
    span = Span.of(layout(tmp_path, text))
    assert span.where(["B", "local/A"]) == {"dev@buildbox:2222": ["B"], "local": ["A"]}
    with pytest.raises(
        UsageError, match="A is a label on local, dev@buildbox:2222; say which: --pane local/A"
    ):
        span.where(["A"])
    with pytest.raises(UsageError, match="no pane labelled Z"):
        span.where(["Z"])


def test_the_relay_alerts_here_once_per_transition_with_the_fleets_command_and_cooldown(
    tmp_path: Path,
) -> None:
    spec = layout(tmp_path, SPAN.replace('"{label}: {state}"', '"{host}", "{label}: {state}"'))
    box = Span.of(spec).parts[1]
    now = [100.0]
    ran: list[list[str]] = []
    relay = Relay(clock=lambda: now[0], run=ran.append)

    def look(state: str, session: str = "/h/proj/sessions/S_B") -> list[str]:
        return relay.see([(spec, box, [remote_row("B", state, session_dir=session)])])

    assert look("needs-you") == [], "the first look is what is, not a transition"
    assert look("working") == [] and look("needs-you") == ["dev@buildbox:2222/B needs you"]
    assert ran == [["notify-send", "dev@buildbox:2222", "B: needs-you"]]
    assert look("working") == [] and look("needs-you") == [], (
        "within the cooldown: one page, not one per flap"
    )
    now[0] += 61
    assert look("working") == [] and look("needs-you") == ["dev@buildbox:2222/B needs you"]
    assert look("done") == [], "done does not alert unless the fleet asks for it"
    assert look("error\x1b]52;c;x\x07") == [], "a state an agent made up alerts on nothing"

    quiet = layout(tmp_path, SPAN.replace('notify: [notify-send, "{label}: {state}"]', "notify: false"))
    relay = Relay(clock=lambda: now[0], run=ran.append)
    for state in ("working", "needs-you"):
        assert relay.see([(quiet, Span.of(quiet).parts[1], [remote_row("B", state)])]) == []


def test_a_remote_agent_at_80_percent_of_a_budget_is_alerted_here_once_as_a_local_pane_is(
    tmp_path: Path,
) -> None:
    """The host's own hook alerts only its tmux; the relay gives it here, once per budget and day, where
    the fleet alerts on paused."""
    spec = layout(tmp_path, SPAN.replace("notify_on: [needs-you, error]", "notify_on: [needs-you, paused]"))
    box = Span.of(spec).parts[1]
    ran: list[list[str]] = []
    relay = Relay(clock=lambda: 100.0, run=ran.append)

    def look(spent: float | None, usd: float = 10.0) -> list[str]:
        row = remote_row(
            "B", "working", budget_usd=usd, budget_spent=spent, budget_per="day", budget_scope="pane"
        )
        return relay.see([(spec, box, [row])])

    assert look(8.5) == [], "the first look is what is"
    assert look(None) == [] and look(5.0) == []
    assert look(8.0) == ["dev@buildbox:2222/B spent 80 % of a budget"]
    assert ran == [["notify-send", "B: budget"]]
    assert look(9.5) == [], "once per budget and day"
    assert look(9.5, usd=11.0) == [], "a raised budget alerts again only past its own cooldown"
    quiet = Relay(clock=lambda: 100.0, run=ran.append)
    for spent in (5.0, 9.0):
        row = remote_row(
            "B", "working", budget_usd=10.0, budget_spent=spent, budget_per="day", budget_scope="pane"
        )
        assert quiet.see([(layout(tmp_path, SPAN), box, [row])]) == [], "paused not alerted on: nor is 80 %"


def remote_row(
    label: str, state: str, window: str = "there", session: str = "duo", **more: t.Any
) -> PaneStatus:
    return PaneStatus.from_json({"session": session, "window": window, "label": label, "pane": f"%{label}",
                                 "pane_id": f"{session}:{window}:{label}", "state": state, **more})  # fmt: skip


def test_a_host_pages_only_for_its_own_agents_names_itself_and_one_refresh_starts_few_alerts(
    tmp_path: Path,
) -> None:
    """Rows of panes the host's part does not name (another host's label, another session, a label of
    its own making) page nobody; every alert names its host; past MAX_ALERTS, one summary."""
    from claude_shepherd.fleet.hosts import LOCAL
    from claude_shepherd.fleet.hosts.relay import MAX_ALERTS
    from claude_shepherd.supervisor import alerts

    assert alerts.HERE == LOCAL, "a local pane's {host} is what fleet calls this machine"
    text = SPAN.replace('"{label}: {state}"', '"{host}", "{fleet}", "{label}: {state}"')
    spec = layout(tmp_path, text)
    box = Span.of(spec).parts[1]
    ran: list[list[str]] = []
    relay = Relay(run=ran.append)
    invented = [
        *(remote_row(f"X{n}", "{}") for n in range(28)),
        remote_row("A", "{}", window="here"),  # this machine's pane A
        remote_row("B", "{}", session="other"),
        remote_row("B", "{}", window="also"),
    ]
    own = [remote_row(label, "{}", window) for window, label in box.labels]

    def look(state: str) -> list[str]:
        rows = [dataclasses.replace(row, state=state) for row in [*invented, *own]]
        return relay.see([(spec, box, rows)])

    assert look("working") == []
    assert look("needs-you") == [f"dev@buildbox:2222/{label} needs you" for label in ("B", "C", "D")]
    assert ran == [["notify-send", "dev@buildbox:2222", "duo", f"{label}: needs-you"] for label in "BCD"]
    assert set(relay.seen) == {("dev@buildbox:2222", "fleet-duo", w, lb) for w, lb in box.labels}, (
        "what it remembers is bounded by the layout, not by what a host invents"
    )

    many = "".join(f"        - P{n}: claude-run\n" for n in range(12))
    big = layout(tmp_path, text.replace("        - D: claude-run\n", many))
    host = Span.of(big).parts[1]
    ran.clear()
    relay = Relay(run=ran.append)
    rows = [remote_row(label, "working", window) for window, label in host.labels]
    assert relay.see([(big, host, rows)]) == []
    rows = [dataclasses.replace(row, state="needs-you" if n % 2 else "error") for n, row in enumerate(rows)]
    said = relay.see([(big, host, rows)])
    assert len(ran) == len(said) == MAX_ALERTS, "one refresh starts at most MAX_ALERTS notify commands"
    assert (
        said[-1]
        == "dev@buildbox:2222: 10 more agents changed state (3 needs-you, 7 error); each is in the table"
    )
    assert ran[-1] == ["notify-send", "dev@buildbox:2222", "duo", "10 more agents: needs-you"]
    assert all(line.endswith("needs you") for line in said[:-1]), "the most urgent are paged one by one"
    assert relay.see([(big, host, rows)]) == [], "the summary counts as their alerts"


def test_a_part_read_from_stdin_is_kept_as_a_file_of_ours_and_never_names_hosts(tmp_path: Path) -> None:
    spec = layout(tmp_path)

    class Pipe(io.StringIO):
        def isatty(self) -> bool:
            return False

    document = pt.part_document(spec, "dev@buildbox:2222")
    read = pt.read_document(Pipe(json.dumps(document)))
    assert (
        read.source == pt.layouts_dir() / f"{pt.this_machine()}.fleet-duo.duo.yml" and read.source.is_file()
    )
    assert [w.name for w in read.windows] == ["there", "also"]
    with pytest.raises(LayoutError, match="names other hosts"):
        pt.read_document(Pipe(SPAN))
    with pytest.raises(LayoutError, match="over 1048576 bytes"):
        pt.read_document(Pipe("#" * (pt.MAX_DOCUMENT + 1)))


def test_a_host_the_layout_no_longer_names_is_still_stopped_and_shown_until_its_agents_stop(
    tmp_path: Path,
) -> None:
    from claude_shepherd.fleet.hosts import span as sp
    from claude_shepherd.fleet.layout import load_layout

    path = tmp_path / "duo.yml"
    path.write_text(SPAN)
    first = Span.of(load_layout(path, cwd=tmp_path))
    assert not any(p.started for p in first.parts), "no start has reached a host yet"
    sp.remember(first)
    path.write_text(SPAN.replace("dev@buildbox:2222", "dev@gpubox"))
    never = Span.of(load_layout(path, cwd=tmp_path))
    assert [p.name for p in never.parts] == ["local", "dev@gpubox"], "a host no start reached is not kept"
    sp.remember(first.with_parts(dataclasses.replace(p, started=True) for p in first.parts))  # started there
    span = Span.of(load_layout(path, cwd=tmp_path))
    assert [(p.name, p.retired) for p in span.parts] == [
        ("local", False), ("dev@gpubox", False), ("dev@buildbox:2222", True)
    ]  # fmt: skip
    assert [p.name for p in span.current] == ["local", "dev@gpubox"], "start and restart leave it alone"
    (recorded,) = sp.remembered()
    assert {(p.name, p.retired) for p in recorded.parts} == {("local", False), ("dev@buildbox:2222", True)}, (
        "the parts it was started with, against the layout as it is now"
    )
    sp.remember(span)
    (recorded,) = sp.remembered()
    assert {(p.name, p.retired) for p in recorded.parts} == {
        ("local", False), ("dev@gpubox", False), ("dev@buildbox:2222", True)
    }  # fmt: skip
    sp.forget(span)
    assert sp.remembered() == []


def test_a_bash_era_label_is_its_parts_label_and_local_is_no_host_name(tmp_path: Path) -> None:
    text = SPAN.replace(
        "        - D: claude-run", "        - [tmux set-option -p @pane_label D2, claude-run]"
    )
    span = Span.of(layout(tmp_path, text))
    assert span.parts[1].labels == (("there", "B"), ("there", "C"), ("also", "D2"))
    with pytest.raises(LayoutError, match="host 'local' is what fleet calls this machine"):
        layout(tmp_path, SPAN.replace("dev@buildbox:2222", "local", 1))


HOSTILE_ANSWERS = {
    "a number of 400 digits": '[{"label": "B", "restarts": 1' + "0" * 400 + "}]",
    "a number of 5000 digits": '[{"label": "B", "cost_usd": ' + "9" * 5000 + "}]",
    "arrays nested 100000 deep": "[" * 100_000 + "]" * 100_000,
    "objects nested 9 deep": '{"a": ' * 9 + "1" + "}" * 9,
    "NaN": '[{"label": "B", "cost_usd": NaN}]',
    "a number past a float": '[{"label": "B", "started_at": 1e999}]',
    "a string of a megabyte": '[{"label": "' + "B" * 1024 * 1024 + '"}]',
    "a million rows": "[" + ",".join(["{}"] * 1_000_000) + "]",
}


@pytest.mark.parametrize("what", sorted(HOSTILE_ANSWERS))
def test_an_answer_out_of_bounds_costs_its_host_its_rows_and_never_the_others(
    tmp_path: Path, what: str
) -> None:
    """A host is believed within the bounds of what a fleet says: past them its agents are unknown, with
    the reason, and the other host's rows and every verb's envelope are read as before."""
    spec = layout(tmp_path)
    span = Span.of(spec)
    rows = [{"session": "duo", "window": "here", "label": "A", "pane": "%0", "pane_id": "duo:here:A",
             "state": "working", "supervisor_alive": True, "agent": True}]  # fmt: skip
    here = FakeHost("local", Reply("local", 0, json.dumps(rows), "", 0.1))
    hostile = FakeHost("dev@buildbox:2222", Reply("dev@buildbox:2222", 0, HOSTILE_ANSWERS[what], "", 0.1))
    span = Span(spec, (dataclasses.replace(span.parts[0], host=here),
                       dataclasses.replace(span.parts[1], host=hostile)))  # fmt: skip
    seen = gather(span)
    assert [(r.label, r.state) for r in seen[0].rows] == [("A", "working")] and seen[0].problem is None
    assert {(r.label, r.state) for r in seen[1].rows} == {
        ("B", "unknown"),
        ("C", "unknown"),
        ("D", "unknown"),
    }
    problem = seen[1].problem or ""
    assert problem.startswith("dev@buildbox:2222: its fleet's answer ") and problem.endswith("; not believed")
    with pytest.raises(ShepherdError, match="its fleet's answer"):
        envelope(Reply("box", 0, HOSTILE_ANSWERS[what], "", 0.1))


def test_a_host_is_read_up_to_a_bound_and_ended_there_never_read_whole() -> None:
    """More than MAX_ANSWER bytes on stdout or stderr is a bad answer: the program is ended there, what it
    said is cut, and no reader believes it."""
    from claude_shepherd.fleet.hosts.answer import MAX_ANSWER

    here = LocalHost()
    flood = here.run(["sh", "-c", "yes '[1,' | head -c 64M; echo 1]"], timeout=60)
    assert flood.reached and flood.overflowed and len(flood.stdout) == MAX_ANSWER
    with pytest.raises(ShepherdError, match=f"local: its fleet said over {MAX_ANSWER} bytes; not believed"):
        flood.json()
    noisy = here.run(["sh", "-c", "head -c 64M /dev/zero >&2"], timeout=60)
    assert noisy.overflowed and len(noisy.stderr) == MAX_ANSWER and noisy.stdout == ""

    exact = here.run(["head", "-c", str(MAX_ANSWER)], stdin=b"7" * MAX_ANSWER, timeout=60)
    assert not exact.overflowed and exact.status == 0 and len(exact.stdout) == MAX_ANSWER
    with pytest.raises(ShepherdError, match="its fleet's answer has a number of thousands of digits"):
        exact.json()
    big = here.run(["cat"], stdin=b"[" + b"1," * 1_000_000 + b"1]", timeout=60)
    assert not big.overflowed and big.status == 0 and len(big.stdout) == 2_000_003, "stdin is fed whole"
    deaf = here.run(["true"], stdin=b"x" * 10 * 1024 * 1024, timeout=60)
    assert deaf.reached and deaf.status == 0, "a program that reads none of its input still answers"
