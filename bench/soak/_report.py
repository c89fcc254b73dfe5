"""The soak's tables: what was killed and what it cost, what failed and why, the verdicts."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from bench.soak._recovery import p50_max
from bench.soak._run import SoakResult


def print_result(result: SoakResult, out: Console) -> None:
    t = Table(title="What was killed, and how long recovery took (p50 / max)")
    for col in ("process", "SIGKILLs", "exited itself", "back up", "held up", "recovery"):
        t.add_column(col)
    for r in result.recovery:
        t.add_row(
            r.kind,
            str(r.kills),
            str(r.exits),
            p50_max(r.restart_s)
            + (f" ({r.failed_starts} failed starts)" if r.failed_starts else "")
            + (f" ({r.not_back} never)" if r.not_back else ""),
            str(r.held_up) + (f" ({r.never} never moved again)" if r.never else ""),
            p50_max(r.recovery_s),
        )
    out.print(t)
    if result.failures:
        f = Table(title="What failed, and why (from the events; not a verdict)")
        for col in ("event", "reason", "count"):
            f.add_column(col)
        for what, why, n in result.failures:
            f.add_row(what, Text(why), str(n))
        out.print(f)
    v = Table(title="Invariants, from the stream")
    for col in ("invariant", "verdict", "what was seen"):
        v.add_column(col)
    for verdict in result.verdicts:
        mark = Text("holds", style="green") if verdict.ok else Text("VIOLATED", style="bold red")
        v.add_row(verdict.name, mark, Text(verdict.summary))
    out.print(v)
    for verdict in result.verdicts:
        if verdict.violations:
            out.print(Text(f"{verdict.name}: {len(verdict.violations)} violations", style="bold"))
            for line in verdict.violations[:12]:
                out.print(Text(f"  {line}"))
            if len(verdict.violations) > 12:
                out.print(f"  … and {len(verdict.violations) - 12} more")
    phases = ", ".join(f"{k} {v:.0f} s" for k, v in result.timings.items())
    out.print(f"phases: {phases}")
    if result.kept:
        out.print(f"logs and stores kept in {result.data_dir}")
