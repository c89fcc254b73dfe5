"""Which role checks exist for each role: the names a council configuration may weigh.

A module of its own (no tool is imported here) so that configuration parsing can validate the
names without loading the linters.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

CHECKS_BY_ROLE: Mapping[str, tuple[str, ...]] = {
    "DEV": (),
    "QA": ("test_structure", "test_run"),
    "ARCHITECT": ("sections", "decisions", "diagrams"),
    "DEVOPS": ("shellcheck", "hadolint", "yamllint", "k8s_schema"),
    "DATA": ("sql", "ruff"),
}
"""DEV's Python lint (ruff) is the base ``lint`` check every DEV answer gets already. QA's
``test_run`` needs a sandbox, so ``scoring`` supplies it (``role_checks``'s ``runners``)."""


def unknown_checks(role: str, names: Iterable[str]) -> list[str]:
    """The names in ``names`` that ``role`` does not run, sorted."""
    known = set(CHECKS_BY_ROLE.get(role.upper(), ()))
    return sorted(n for n in names if n not in known)
