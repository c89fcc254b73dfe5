"""What each role check costs per answer, on the corpus's candidates (p50/p99, milliseconds).

    .venv/bin/python -m bench.selection.costs [--repeat N]

Each check runs on every candidate it applies to, ``--repeat`` times; the whole scoring of one
candidate (``assess_candidates``, every check of its role) is timed the same way. Last, the CPU
(this process and the linters it starts) of scoring each case's candidates together, as a
deliberation does, beside the same candidates scored one at a time. The figures in
``docs/role-checks.md`` come from this command.
"""

from __future__ import annotations

import argparse
import resource
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


def _cpu_ms() -> float:
    own, children = (
        resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return 1000 * (own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime)


def _request(role: str, task: str, texts: list[str], metadata: dict[str, str]) -> AssessmentInput:
    candidates = tuple(Candidate(f"c{i}", text) for i, text in enumerate(texts))
    return AssessmentInput("costs", role, task, "", (), candidates, metadata=metadata)


def _deliberations(repeat: int) -> None:
    """CPU per deliberation: its candidates scored together, and one at a time."""
    together: dict[str, list[float]] = defaultdict(list)
    alone: dict[str, list[float]] = defaultdict(list)
    for case in all_cases():
        whole = _request(case.role, case.task, case.candidates, case.metadata)
        singles = [_request(case.role, case.task, [t], case.metadata) for t in case.candidates]
        for _ in range(repeat):
            started = _cpu_ms()
            assess_candidates(whole)
            together[case.role].append(_cpu_ms() - started)
            started = _cpu_ms()
            for single in singles:
                assess_candidates(single)
            alone[case.role].append(_cpu_ms() - started)
    print(
        f"\n{'CPU per deliberation':<22} {'n':>5} {'together':>9} {'one by one':>11} {'ratio':>6}"
    )
    for role, samples in together.items():
        t, a = statistics.median(samples), statistics.median(alone[role])
        print(f"{role:<22} {len(samples):>5} {t:>7.1f} ms {a:>8.1f} ms {t / a:>6.2f}")


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
    _deliberations(args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
