"""One module per command group; each defines ``register(subparsers)``. Discovered by name."""
