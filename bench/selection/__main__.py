"""Selection accuracy on the labeled corpus: how often the scorer ranks the right candidate first.

    .venv/bin/python -m bench.selection [--mode checks|tests|both] [--role DEV ...]
        [--expect tests|lint-visible] [--min-accuracy PERCENT] [--show-misses]

Prints one table per mode (cases, right ranked first, accuracy, ties, wrong; per role and in
all) and the scoring cost per candidate. Exits 1 when a mode's accuracy over the chosen cases
is under ``--min-accuracy``, and 2 on bad arguments (``--mode tests`` on a build that cannot run
acceptance tests (no sandbox starts here). See ``docs/checks.md``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.selection.corpus import all_cases
from bench.selection.run import MODES, rows, score_case, supports_tests, table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.selection", description=__doc__)
    parser.add_argument("--mode", choices=(*MODES, "both"), default="both")
    parser.add_argument("--role", action="append", type=str.upper, default=[])
    parser.add_argument("--expect", choices=("tests", "lint-visible"))
    parser.add_argument("--min-accuracy", type=float, metavar="PERCENT")
    parser.add_argument("--show-misses", action="store_true", help="list ties and wrong cases")
    args = parser.parse_args(argv)
    if args.min_accuracy is not None and not 0 <= args.min_accuracy <= 100:
        parser.error("--min-accuracy: a percentage in 0..100")
    cases = [
        c
        for c in all_cases()
        if (not args.role or c.role in args.role)
        and (args.expect is None or c.metadata.get("expect") == args.expect)
    ]
    if not cases:
        parser.error("--role/--expect: no case of the corpus matches")
    modes = list(MODES) if args.mode == "both" else [args.mode]
    why_not = supports_tests() if "tests" in modes else ""
    if why_not:
        if args.mode == "tests":
            parser.error(f"--mode tests: no sandbox can run the tests here: {why_not}")
        modes.remove("tests")
        print(f"checks + acceptance tests + cross-execution: not available here: {why_not}\n")
    failed = False
    for mode in modes:
        results = [score_case(c, mode) for c in cases]
        print(table(mode, results), end="\n\n")
        if args.show_misses:
            for r in results:
                if r.outcome != "right":
                    print(f"  {r.outcome:<5} {r.case.role:<7} {r.case.task_id}: {r.scores}")
        total = rows(results)[-1]
        if args.min_accuracy is not None and total.accuracy < args.min_accuracy:
            print(f"{mode}: accuracy {total.accuracy:.1f}% is under {args.min_accuracy:g}%")
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
