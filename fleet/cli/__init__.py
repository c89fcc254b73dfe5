"""The ``fleet`` command line (entry point ``fleet.cli:main``)."""

from fleet.cli._main import build_parser, main

__all__ = ["build_parser", "main"]
