"""DATA answers: SQL parsed and resolved for its dialect with sqlglot; Python as for DEV.

``sql`` parses every SQL block with sqlglot in the task's dialect (``metadata["sql_dialect"]``,
default ``postgres``): a statement the dialect cannot parse is an error. Each query is then
qualified (sqlglot's optimizer resolves every column to its table): with the task's schema
(``metadata["sql_schema"]``, JSON ``{"table": {"column": "type"}}``) an unknown table or column
is an error; without one, only references that cannot resolve whatever the schema (an alias
that is not in ``FROM``, an unqualified column in a join) are reported, as warnings.

sqlfluff was measured as the alternative (``docs/role-checks.md``): ~65 ms per query warm and
~170 ms cold against sqlglot's ~1.5 ms, and its rules are mostly layout and style, which would
rank answers by house style; sqlglot's parse and resolution are what decide whether a query runs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from agent_runtime.checks.role_checks._outcomes import findings, not_applicable
from agent_runtime.checks.role_checks._tools import MAX_INPUT_CHARS
from agent_runtime.checks.role_checks.blocks import blocks_of
from aggregates.values import CheckOutcome

DEFAULT_DIALECT = "postgres"


class SqlSettingError(ValueError):
    """``sql_dialect`` or ``sql_schema`` in the task's metadata is unusable; names the field."""


def sql_dialect(metadata: Mapping[str, str]) -> str:
    """The task's SQL dialect; an unknown one is an error naming the field."""
    # sqlglot here and in sql_check, not at the top: it costs ~0.15 s to load, and every
    # ``fleet`` command imports the role checks for their names.
    import sqlglot

    name = metadata.get("sql_dialect", "").strip().lower() or DEFAULT_DIALECT
    try:
        sqlglot.Dialect.get_or_raise(name)
    except ValueError:
        raise SqlSettingError(f"metadata.sql_dialect: unknown SQL dialect {name!r}") from None
    return name


def sql_schema(metadata: Mapping[str, str]) -> dict[str, object] | None:
    raw = metadata.get("sql_schema", "").strip()
    if not raw:
        return None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as e:
        raise SqlSettingError(f"metadata.sql_schema: not JSON ({e.msg})") from None
    if not isinstance(data, dict) or not all(
        isinstance(cols, dict) and all(isinstance(t, str) for t in cols.values())
        for cols in data.values()
    ):
        msg = 'metadata.sql_schema: expected {"table": {"column": "type"}}'
        raise SqlSettingError(msg)
    return {str(t): {str(c): str(ty) for c, ty in cols.items()} for t, cols in data.items()}


def sql_check(answer: str, metadata: Mapping[str, str]) -> CheckOutcome:
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import OptimizeError, ParseError, SqlglotError
    from sqlglot.optimizer.qualify import qualify

    blocks = blocks_of(answer, "sql")
    if not blocks:
        return not_applicable("sql", "no SQL block")
    try:
        dialect, schema = sql_dialect(metadata), sql_schema(metadata)
    except SqlSettingError as e:
        return not_applicable("sql", str(e))
    errors: list[str] = []
    warnings: list[str] = []
    statements = 0
    for i, code in enumerate(blocks, start=1):
        prefix = f"block {i}: " if len(blocks) > 1 else ""
        if len(code) > MAX_INPUT_CHARS:
            errors.append(f"{prefix}longer than {MAX_INPUT_CHARS} characters")
            continue
        try:
            parsed = [s for s in sqlglot.parse(code, read=dialect) if s is not None]
        except ParseError as e:
            errors.append(f"{prefix}{dialect} cannot parse: {_first_line(e)}")
            continue
        except SqlglotError as e:
            errors.append(f"{prefix}{_first_line(e)}")
            continue
        statements += len(parsed)
        for statement in parsed:
            if not isinstance(statement, exp.Query):
                continue
            try:
                qualify(statement.copy(), schema=schema, dialect=dialect)
            except (OptimizeError, SqlglotError) as e:
                (errors if schema is not None else warnings).append(prefix + _first_line(e))
    extra = {"dialect": dialect, "statements": str(statements), "schema": str(schema is not None)}
    return findings("sql", errors, warnings, subject=f"{dialect} SQL", extra=extra)


def _first_line(e: Exception) -> str:
    return str(e).strip().split("\n", 1)[0][:300]
