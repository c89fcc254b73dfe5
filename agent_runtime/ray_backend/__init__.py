"""The Ray agent backend: warm actor pools per role (``runtime``) and their batching."""
