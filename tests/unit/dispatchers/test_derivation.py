"""Subtask derivation's pure parts: a council's answer read as a task list, roles ordered."""

from __future__ import annotations

import pytest

from aggregates import InvalidDeliberationError
from dispatchers.derivation import order_roles, parse_task_list


def test_a_councils_task_list_is_read_from_what_models_write() -> None:
    assert parse_task_list('```python\ntasks = ["a", "b"]\n```', 5) == ["a", "b"]
    assert parse_task_list("Steps:\n1. plan it\n2) build it\n- test it\n", 2) == [
        "plan it",
        "build it",
    ]
    assert parse_task_list('{"tasks": ["x"]} [1, 2]', 5) == []  # numbers are no tasks
    assert parse_task_list("I cannot help with that.", 5) == []


def test_roles_follow_the_dependency_order_then_the_plan() -> None:
    plan = ["ARCHITECT", "DEV", "QA"]
    assert order_roles(plan, (), ("qa", "DEV")) == ["QA", "DEV", "ARCHITECT"]
    assert order_roles(plan, ("DEV", "DATA"), ("DATA",)) == ["DATA", "DEV"]
    with pytest.raises(InvalidDeliberationError, match=r"strategy\.dependency_order"):
        order_roles(plan, (), ("CHEF",))
