"""Fleet's composition root: configuration, the gRPC API, the CLI and ``fleet up``."""

from __future__ import annotations

import os
import sys

# Before anything imports gRPC, which reads this once, at import. gRPC's fork handlers abort about
# 4% of the children forked while a gRPC server runs, and a node forks its embedded servers
# (nats-server, valkey, llama.cpp, Ray), which exec at once and never use gRPC. With the handlers
# off, a node opens the API port first and says NOT_SERVING while the rest starts
# (``fleet/bootstrap.py`` ``_open_api``; ``fleet.grpc.server.fork_handlers_off``). Set here rather
# than in the CLI so that a node started in-process (tests, a program embedding Fleet) has it
# too. If gRPC was imported before Fleet it is too late: the variable is then left as it is, so
# that ``fork_handlers_off`` does not claim what gRPC never read.
if "grpc" not in sys.modules:
    os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "0")

__version__ = "0.1.0"
