"""What each role check costs per answer, on the corpus's candidates (p50/p99, milliseconds).

    .venv/bin/python -m bench.selection.costs [--repeat N]

Each check runs on every candidate it applies to, ``--repeat`` times; the whole scoring of one
candidate (``assess_candidates``, every check of its role) is timed the same way. The figures
in ``docs/role-checks.md`` come from this command.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from agent_runtime.api import AssessmentInput, Candidate
from agent_runtime.checks.role_checks import RoleCheckConfig, is_applicable, role_checks
from agent_runtime.checks.scoring import assess_candidates
from bench.selection.corpus import all_cases


def _p(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.selection.costs")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat: at least 1")
    per_check: dict[str, list[float]] = defaultdict(list)
    per_answer: dict[str, list[float]] = defaultdict(list)
    for case in all_cases():
        config = RoleCheckConfig(metadata=case.metadata)
        for text in case.candidates:
            for name in [o.check_type for o in role_checks(case.role, text, config)]:
                one = RoleCheckConfig(weights={name: 1.0}, metadata=case.metadata)
                for _ in range(args.repeat):
                    started = time.perf_counter()
                    [outcome] = role_checks(case.role, text, one)
                    if is_applicable(outcome):
                        per_check[name].append(1000 * (time.perf_counter() - started))
            request = AssessmentInput(
                "costs", case.role, case.task, "", (), (Candidate("c", text),),
                metadata=case.metadata,
            )  # fmt: skip
            for _ in range(args.repeat):
                started = time.perf_counter()
                assess_candidates(request)
                per_answer[case.role].append(1000 * (time.perf_counter() - started))
    print(f"{'check':<22} {'n':>5} {'p50 ms':>8} {'p99 ms':>8}")
    for label, samples in [
        *sorted(per_check.items()),
        *((f"whole answer, {role}", s) for role, s in per_answer.items()),
    ]:
        p50, p99 = statistics.median(samples), _p(samples, 0.99)
        print(f"{label:<22} {len(samples):>5} {p50:>8.1f} {p99:>8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
