"""Helpers shared by the unit, integration and end-to-end tests.

- `waiting`: wait on a condition (`eventually`, `eventually_sync`, `until_terminal`) instead of a
  fixed sleep.
- `aggregates`: small aggregates for the event-store tests (`Counter`, `Ledger`).
- `group_commit_contract`: the group-commit checks run on the in-memory and the JetStream store.
- `processes`: `gone(pid)` (exited, or a zombie) and `children(pid)`, read from /proc.
- `deliberations`: `requested(...)`, a deliberation request with defaults for what a test ignores.
"""
