"""The web console: deliberations to look at, live and after, served by the node (``server``)."""

from fleet.web.server import DEFAULT_PORT, WebConsole

__all__ = ["DEFAULT_PORT", "WebConsole"]
