"""``fleet doctor``: check each part of this setup and say how to fix what is wrong.

Reads the settings as ``fleet up`` does, and finds a running node as the other commands do
(``--address``, ``FLEET_ADDRESS``, then ``<data dir>/run.json``). One line per part: ok, warn or
FAIL, what was checked and what was found, and under each one not ok the fix. Exit status 1 when
any check fails, 0 with only warnings; ``--json`` for scripts (the same exit status).
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import asdict
from typing import Any

from rich.text import Text

from fleet.cli._common import (
    CliError,
    Subparsers,
    add_client_options,
    client_security,
    console,
    data_dir,
    settings,
)
from fleet.cli.doctor import Finding, Setup, Status, run_checks

_STYLE = {Status.OK: ("ok", "green"), Status.WARN: ("warn", "yellow"), Status.FAIL: ("FAIL", "red")}


def register(sub: Subparsers) -> None:
    d = sub.add_parser("doctor", help="check every part of this setup; say how to fix it")
    add_client_options(d)
    d.add_argument(
        "--timeout", type=float, default=5.0, help="seconds each check may take (default 5)"
    )
    d.set_defaults(fn=cmd_doctor)


def _alive(pid: Any) -> bool:
    try:
        os.kill(int(pid), 0)
    except (OSError, ValueError, TypeError) as e:
        return isinstance(e, PermissionError)  # another user's process: alive
    return True


def gather_setup(args: argparse.Namespace) -> Setup:
    """Settings, the running node (if any) and where its API is, as the other commands find them."""
    from fleet.bootstrap import read_run_file

    if args.timeout <= 0:
        raise CliError(f"--timeout {args.timeout:g}: must be > 0", code=2)
    where = data_dir(args)
    run = read_run_file(where) or {}
    stale = None
    if run and not _alive(run.get("pid")):
        stale, run = run.get("pid"), {}
    explicit = args.address or os.environ.get("FLEET_ADDRESS")
    return Setup(
        settings=settings(args),
        data_dir=where,
        timeout_s=args.timeout,
        run=run,
        stale_pid=stale,
        api_address=explicit or (str(run["grpc"]) if run.get("grpc") else None),
        security=client_security(args),
    )


async def cmd_doctor(args: argparse.Namespace) -> None:
    setup = gather_setup(args)
    findings = await run_checks(setup)
    if args.json:
        rows = [{**asdict(f), "status": f.status.value} for f in findings]
        ok = not any(f.status is Status.FAIL for f in findings)
        print(json.dumps({"ok": ok, "checks": rows}, indent=2))
    else:
        _print(findings)
    failed = [f.name for f in findings if f.status is Status.FAIL]
    if failed:
        raise CliError(f"{len(failed)} check(s) failed: {', '.join(failed)}", code=1)


def _print(findings: list[Finding]) -> None:
    width = max(len(f.name) for f in findings)
    for f in findings:
        word, style = _STYLE[f.status]
        line = Text.assemble(
            (f"{word:<5}", style), f" {f.name:<{width}}  ", (f.checked, "bold"), f"  {f.detail}"
        )
        console.print(line, soft_wrap=True)
        if f.fix and f.status is not Status.OK:
            console.print(Text(f"{'':<5} {'':<{width}}  fix: {f.fix}"), style=style, soft_wrap=True)
    counts = {s: sum(f.status is s for f in findings) for s in Status}
    console.print(
        f"{counts[Status.OK]} ok, {counts[Status.WARN]} warnings, {counts[Status.FAIL]} failed"
    )
