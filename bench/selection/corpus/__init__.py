"""The labeled selection corpus: tasks, each with one right candidate and wrong ones placed first.

One module per role (``dev``, ``data``, ``devops``), each exporting ``CASES``. A case's
candidates are whole answers as a model writes them (prose and fenced blocks). The wrong ones
are *subtly* wrong: they compile and, unless ``metadata["expect"]`` says ``lint-visible``, lint
clean, so only executing them against the acceptance tests (or, for the lint-visible ones, the
role's own tools) tells them apart. ``acceptance_tests`` is pytest-style Python that imports the
candidate's Python code as the module ``solution`` (empty where the role's answer is no Python).

``metadata`` (strings only) is the task's metadata as a client would send it (``sql_dialect``)
plus the label ``expect``: ``tests`` (only execution can tell), ``lint-visible`` (every wrong
candidate has a finding the role checks report) — the benchmark reports both groups.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class SelectionCase:
    task_id: str
    role: str
    task: str
    candidates: list[str]
    right_index: int
    acceptance_tests: str = ""
    metadata: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not 0 <= self.right_index < len(self.candidates) or len(self.candidates) < 3:
            msg = f"case {self.task_id}: right_index {self.right_index} of {len(self.candidates)}"
            raise ValueError(msg)


def python_answer(code: str, intro: str = "Here is the implementation.") -> str:
    """A DEV-style answer: a sentence and one Python block."""
    return f"{intro}\n\n```python\n{code.strip()}\n```\n"


def python_case(
    role: str, task_id: str, task: str, wrongs: list[str], right: str, tests: str
) -> SelectionCase:
    """A case whose candidates are Python functions, judged by ``tests``; the right one last."""
    answers = [python_answer(c) for c in (*wrongs, right)]
    return SelectionCase(
        task_id, role, task, answers, len(wrongs), tests.strip() + "\n", {"expect": "tests"}
    )


def all_cases() -> list[SelectionCase]:
    from bench.selection.corpus import data, dev, devops

    return [*dev.CASES, *data.CASES, *devops.CASES]
