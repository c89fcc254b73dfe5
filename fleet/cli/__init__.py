"""The ``fleet`` command line (entry point ``fleet.cli:main``)."""

from __future__ import annotations

# gRPC's fork handlers are turned off by importing ``fleet`` itself (``fleet/__init__.py``).
from fleet.cli._main import build_parser, main

__all__ = ["build_parser", "main"]
