"""``python -m fleet``: the ``fleet`` command, for environments where the script is not on PATH."""

from fleet.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
