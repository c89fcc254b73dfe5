"""Fleet's composition root: configuration, the gRPC API, the CLI and ``fleet up``."""

__version__ = "0.1.0"
