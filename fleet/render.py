"""Readable renderings for people: results with ranking, timelines, query tables (rich)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from rich.console import Console, Group
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from fleet.client import failed_agents, status_name
from fleet.orchestrator.v1 import orchestrator_pb2 as pb

if TYPE_CHECKING:  # the CLI imports this module for every command; these are types only here
    from application.timeline import TimelineEntry
    from fleet.endpoints import Endpoints

STATUS_STYLE = {
    "COMPLETED": "bold green",
    "TIMEOUT": "bold yellow",
    "FAILED": "bold red",
    "CANCELLED": "magenta",
    "IN_PROGRESS": "cyan",
    "PENDING": "dim",
}


def status_text(status: int | str) -> Text:
    name = status if isinstance(status, str) else status_name(status)
    return Text(name, style=STATUS_STYLE.get(name, ""))


def result(console: Console, r: pb.GetDeliberationResultResponse) -> None:
    head = Text.assemble(
        ("task ", "dim"), (r.task_id, "bold"), ("  status ", "dim"), status_text(r.status),
        ("  winner ", "dim"), (r.winner_id or "-", "bold green"),
        ("  duration ", "dim"), (f"{r.duration_ms / 1000:.1f} s" if r.duration_ms else "-", ""),
    )  # fmt: skip
    console.print(head)
    if r.error_message:
        console.print(Text(r.error_message, style="yellow"))
    failed = failed_agents(r)
    if failed:
        t = Table(title="Failed agents")
        t.add_column("agent")
        t.add_column("why", overflow="fold")
        for agent, why in failed:
            t.add_row(Text(agent), Text(why))  # error text, not markup
        console.print(t)
    ranking = Table(title="Ranking", show_lines=False)
    for col in ("rank", "agent", "score", "checks", "run"):
        ranking.add_column(col, overflow="fold")
    for res in r.results:
        ranking.add_row(
            str(res.rank or "-"),
            res.proposal.author_id + (" 🏆" if res.proposal.author_id == r.winner_id else ""),
            f"{res.score:.2f}",
            _checks(res.checks),
            Text(_clip(res.checks.dryrun.message, 70) if res.checks.HasField("dryrun") else "-"),
        )
    console.print(ranking)
    matrix = pass_matrix(r)
    if matrix is not None:
        console.print(matrix)
    for res in r.results:
        winner = res.proposal.author_id == r.winner_id
        console.print(
            Panel(
                _content(res.proposal.content),
                title=f"{res.proposal.author_id} (rank {res.rank or '-'}, score {res.score:.2f})",
                border_style="green" if winner else "blue",
            )
        )


def _checks(suite: pb.CheckSuite) -> str:
    parts: list[tuple[str, bool | None]] = []
    if suite.HasField("policy"):
        parts.append(("policy", suite.policy.passed))
    if suite.HasField("lint"):
        parts.append(("lint", suite.lint.passed))
    if suite.HasField("dryrun"):
        ran = not _not_run(suite.dryrun)
        parts.append((_dryrun_label(suite.dryrun.message), suite.dryrun.passed if ran else None))
    parts += [
        (c.check_type, None if c.details.get("applicable") == "false" else c.passed)
        for c in suite.additional_checks
    ]
    marks = {True: "✓", False: "✗", None: "–"}  # – : did not run (could not apply, no sandbox)
    return " ".join(f"{n}{marks[ok]}" for n, ok in parts) or "-"


_COMPILE_MESSAGES = ("all blocks compile", "block ", "no code to compile", "not run")


def _not_run(dryrun: pb.DryRunResult) -> bool:
    """The dry run executed nothing (no sandbox): the API says so with exit code -1."""
    return dryrun.exit_code == -1 and dryrun.message.startswith("not run")


def _dryrun_label(message: str) -> str:
    """ "run" where the dry run executed in the sandbox, "compile" where it only compiled."""
    return "compile" if message.startswith(_COMPILE_MESSAGES) else "run"


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


CROSS_PREFIX = "tests:"


def pass_matrix(r: pb.GetDeliberationResultResponse) -> Table | None:
    """Cross-execution: which candidate passed how many of each peer's tests (``checks``'s
    ``cross_exec`` rows), with the acceptance tests beside; None when nothing ran."""
    rows: dict[str, dict[str, str]] = {}
    for res in r.results:
        for c in res.checks.additional_checks:
            if c.check_type == "cross_exec":
                rows[res.proposal.author_id] = {
                    k.removeprefix(CROSS_PREFIX): v
                    for k, v in c.details.items()
                    if k.startswith(CROSS_PREFIX)
                }
    if not any(rows.values()):
        return None
    authors = sorted({a for row in rows.values() for a in row} | set(rows))
    t = Table(title="Cross-execution (tests passed, by whose tests)")
    t.add_column("candidate")
    t.add_column("acceptance")
    for a in authors:
        t.add_column(a)
    for res in r.results:
        agent = res.proposal.author_id
        if agent not in rows:
            continue
        acc = res.checks.dryrun.message.split(";")[0] if res.checks.HasField("dryrun") else "-"
        acc = acc.removeprefix("acceptance ").removesuffix(" passed")
        row = [("·" if a == agent else rows[agent].get(a, "-")) for a in authors]
        t.add_row(Text(agent), Text(acc), *(Text(c) for c in row))
    return t


def _content(text: str) -> Group | Text:
    """Show code blocks highlighted, prose as prose."""
    pieces: list[Syntax | Text] = []
    chunks = text.split("```")
    for i, chunk in enumerate(chunks):
        if i % 2 == 1:
            lang, _, code = chunk.partition("\n")
            pieces.append(Syntax(code.rstrip(), lang.strip() or "python", theme="ansi_dark"))
        elif chunk.strip():
            pieces.append(Text(chunk.strip()))
    return Group(*pieces) if pieces else Text("(empty)")


def timeline(console: Console, entries: Sequence[TimelineEntry], *, title: str) -> None:
    t = Table(title=title)
    t.add_column("v", justify="right")
    t.add_column("at (UTC)")
    t.add_column("+ms", justify="right")
    t.add_column("event")
    t.add_column("what")
    start: datetime | None = entries[0].at if entries else None
    for e in entries:
        offset = int((e.at - start).total_seconds() * 1000) if start else 0
        at = e.at.strftime("%H:%M:%S.%f")[:-3]
        t.add_row(str(e.version), at, str(offset), e.type, Text(e.summary))  # data, not markup
    console.print(t)


def rows(
    console: Console, columns: list[str], data: Sequence[Mapping[str, object]], *, title: str = ""
) -> None:
    t = Table(title=title or None)
    for c in columns:
        t.add_column(c)
    for row in data:
        t.add_row(*(_cell(row.get(c)) for c in columns))
    console.print(t)


def _cell(v: object) -> Text:
    """A query value as plain text: never read as rich markup (``list[int]``, ``[w:WON_BY]``)."""
    if isinstance(v, str):
        return Text(v if len(v) <= 80 else v[:79] + "…")
    return Text(json.dumps(v, default=str))


# ------------------------------------------------------------------ live progress, listings


class LiveProgress:
    """What ``fleet watch`` / ``fleet deliberate --wait`` show: the phase, a bar, and each agent's
    latest step. Folding is idempotent, so a resumed stream (which replays) shows the same."""

    def __init__(self, task_id: str) -> None:
        self.task_id = task_id
        self.status = "generating"
        self.percent = 0
        self.step = "waiting for the first event"
        self.agents: dict[str, tuple[str, str]] = {}
        """agent → (state keyword, details)"""

    def apply(self, u: pb.DeliberationUpdate) -> None:
        self.status = u.status or self.status
        self.percent = max(self.percent, u.progress_percent)
        self.step = u.current_step or self.step
        if u.current_agent:
            keyword, _, detail = u.current_step.partition(":")
            if keyword in ("COMPLETED", "late"):
                prev = self.agents.get(u.current_agent, ("", ""))
                keyword, detail = ("winner" if keyword == "COMPLETED" else keyword), prev[1]
            self.agents[u.current_agent] = (keyword, detail.strip())

    def __rich__(self) -> Group:
        head = Text.assemble(
            ("task ", "dim"), (self.task_id, "bold"), ("  ", ""),
            (self.status, _PHASE_STYLE.get(self.status, "")), ("  ", ""),
            ("█" * (self.percent // 5)).ljust(20, "·"), f" {self.percent:3d}%",
        )  # fmt: skip
        t = Table(show_header=True, box=None, pad_edge=False)
        t.add_column("agent")
        t.add_column("state")
        t.add_column("details", overflow="fold")
        for agent, (state, detail) in sorted(self.agents.items()):
            t.add_row(agent, Text(state, style=_AGENT_STYLE.get(state, "")), Text(detail))
        return Group(head, t, Text(self.step, style="dim"))


_PHASE_STYLE = {
    "generating": "cyan",
    "reviewing": "blue",
    "scoring": "magenta",
    "complete": "bold green",
}
_AGENT_STYLE = {
    "assigned": "dim",
    "proposed": "cyan",
    "agent_failed": "red",
    "scored": "magenta",
    "winner": "bold green",
    "late": "yellow",
}


def deliberation_list(console: Console, resp: pb.ListDeliberationsResponse) -> None:
    t = Table(title="Deliberations (newest first)")
    for col in ("task", "role", "status", "agents", "rounds", "created (UTC)", "took", "winner"):
        t.add_column(col)
    for d in resp.deliberations:
        created = (
            datetime.fromtimestamp(d.created_at_ms / 1000, tz=UTC) if d.created_at_ms else None
        )
        took = (
            f"{(d.finished_at_ms - d.created_at_ms) / 1000:.1f} s"
            if d.finished_at_ms and d.created_at_ms
            else "-"
        )
        t.add_row(
            Text(d.task_id),
            d.role,
            status_text(d.status),
            str(d.num_agents),
            str(d.rounds),
            created.strftime("%Y-%m-%d %H:%M:%S") if created else "-",
            took,
            d.winner_id or "-",
        )
    console.print(t)
    if resp.next_page_token:
        console.print(f"[dim]more: --page-token {resp.next_page_token}[/]")


def endpoints(e: Endpoints, times: Mapping[str, float]) -> Group:
    """Where each part of a node listens and how long it took to start (``fleet up``, the demo)."""
    t = Table(title="Fleet endpoints")
    t.add_column("part")
    t.add_column("where")
    t.add_column("ready in")
    rows = [
        (
            "gRPC API",
            e.grpc or "off (--components)",
            times.get("gRPC API", times.get("gRPC API (own process)")),
        ),
        ("event store", f"{e.nats_url} stream {e.stream}", times.get("event store (JetStream)")),
        ("cache", e.valkey_url or "off (replay on read)", None),
        ("graph", e.graph, times.get("projections")),
        ("LLM", f"{e.llm_url} model {e.model}" if e.llm_url else "", times.get("LLM endpoint")),
        ("agents" if "NATS" in e.ray else "Ray", e.ray, times.get("agents (Ray)")),
        ("metrics", e.metrics or "off (FLEET_METRICS_PORT)", None),
        ("web console", e.web, times.get("web console")),
    ]
    runs = set(e.components.split(",")) if e.components else None
    for part, where, dt in rows:
        if not where or (part in ("Ray", "agents") and runs is not None and "agents" not in runs):
            continue
        t.add_row(part, where, f"{dt:.1f} s" if dt is not None else "")
    return Group(Text(f"components: {e.components or 'all'}"), t)
