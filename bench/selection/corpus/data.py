"""DATA: five plain-Python data functions (no pandas) and five SQL queries answered as a SQL
block plus the Python that runs it on SQLite, so acceptance tests can execute them on a small
in-memory database. The wrong SQL parses and resolves (a join that drops rows, WHERE where
HAVING was meant, COUNT of rows where distinct customers were asked)."""

from __future__ import annotations

from bench.selection.corpus import SelectionCase, python_case

_SCHEMA = """
CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, country TEXT);
CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER, total REAL, status TEXT);
INSERT INTO customers VALUES (1, 'Ada', 'UK'), (2, 'Bob', 'US'), (3, 'Cy', 'US'),
  (4, 'Di', 'FR'), (5, 'Ed', 'FR'), (6, 'Fay', 'UK');
INSERT INTO orders VALUES (1, 1, 50, 'paid'), (2, 1, 70, 'paid'), (3, 2, 20, 'refunded'),
  (4, 2, 30, 'paid'), (5, 3, 200, 'paid'), (6, 1, 10, 'paid'), (7, 4, 90, 'refunded'),
  (8, 4, 20, 'paid'), (9, 6, 40, 'refunded'), (10, 1, 90, 'paid');
"""
_SQL_SCHEMA = (
    '{"customers": {"id": "int", "name": "text", "country": "text"}, '
    '"orders": {"id": "int", "customer_id": "int", "total": "double", "status": "text"}}'
)


def _sql_answer(sql: str) -> str:
    sql = sql.strip()
    return (
        f"The query:\n\n```sql\n{sql}\n```\n\nand the code that runs it:\n\n```python\n"
        f'import sqlite3\n\nQUERY = """\n{sql}\n"""\n\n\n'
        "def run(conn: sqlite3.Connection) -> list[tuple[object, ...]]:\n"
        "    return conn.execute(QUERY).fetchall()\n```\n"
    )


def _sql_tests(expected: str) -> str:
    return (
        "import sqlite3\nfrom solution import run\n\n"
        f'SCHEMA = """{_SCHEMA}"""\n\n'
        "def test_query():\n    conn = sqlite3.connect(':memory:')\n"
        "    conn.executescript(SCHEMA)\n"
        f"    assert run(conn) == {expected}\n"
    )


def _sql_case(
    task_id: str, task: str, wrongs: list[str], right: str, expected: str
) -> SelectionCase:
    return SelectionCase(
        task_id,
        "DATA",
        task + " Tables: customers(id, name, country), orders(id, customer_id, total, status).",
        [_sql_answer(s) for s in (*wrongs, right)],
        len(wrongs),
        _sql_tests(expected),
        {"expect": "tests", "sql_dialect": "sqlite", "sql_schema": _SQL_SCHEMA},
    )


def _py_case(task_id: str, task: str, wrongs: list[str], right: str, tests: str) -> SelectionCase:
    return python_case("DATA", task_id, task, wrongs, right, tests)


CASES = [
    _py_case(
        "group-sum",
        "Write group_sum(rows, key, value): a dict from each key to the sum of its values; "
        "rows are dicts, a missing or None value counts as 0.",
        [
            "def group_sum(rows, key, value):\n    out = {}\n    for r in rows:\n"
            "        out[r[key]] = r.get(value) or 0\n    return out",
            "def group_sum(rows, key, value):\n    out = {}\n    for r in rows:\n"
            "        out[r[key]] = out.get(r[key], 0) + 1\n    return out",
        ],
        "def group_sum(rows, key, value):\n    out = {}\n    for r in rows:\n"
        "        out[r[key]] = out.get(r[key], 0) + (r.get(value) or 0)\n    return out",
        """
from solution import group_sum
def test_group_sum():
    rows = [{"k": "a", "v": 2}, {"k": "b", "v": 5}, {"k": "a", "v": 3}, {"k": "a", "v": None}]
    assert group_sum(rows, "k", "v") == {"a": 5, "b": 5}
""",
    ),
    _py_case(
        "min-max-scale",
        "Write scale(values): min-max scale to [0, 1]; a constant list scales to all 0.0.",
        [
            "def scale(values):\n    lo, hi = min(values), max(values)\n"
            "    return [(v - lo) / (hi - lo) for v in values]",
            "def scale(values):\n    lo, hi = min(values), max(values)\n"
            "    if hi == lo:\n        return [0.0 for _ in values]\n"
            "    return [(v - lo) / hi for v in values]",
        ],
        "def scale(values):\n    lo, hi = min(values), max(values)\n"
        "    if hi == lo:\n        return [0.0 for _ in values]\n"
        "    return [(v - lo) / (hi - lo) for v in values]",
        """
from solution import scale
def test_scale():
    assert scale([2, 4, 6]) == [0.0, 0.5, 1.0]
    assert scale([3, 3]) == [0.0, 0.0]
""",
    ),
    _py_case(
        "latest-records",
        "Write latest(rows): one row per 'id', the one with the greatest 'updated_at' "
        "(ISO timestamps), sorted by id.",
        [
            "def latest(rows):\n    best = {}\n    for r in rows:\n"
            "        if r['id'] not in best:\n            best[r['id']] = r\n"
            "    return [best[k] for k in sorted(best)]",
            "def latest(rows):\n    best = {}\n    for r in rows:\n"
            "        if r['id'] not in best or r['updated_at'] > best[r['id']]['updated_at']:\n"
            "            best[r['id']] = r\n    return list(best.values())",
        ],
        "def latest(rows):\n    best = {}\n    for r in rows:\n"
        "        if r['id'] not in best or r['updated_at'] > best[r['id']]['updated_at']:\n"
        "            best[r['id']] = r\n    return [best[k] for k in sorted(best)]",
        """
from solution import latest
def test_latest():
    rows = [
        {"id": 2, "updated_at": "2024-01-01T00:00:00", "v": "old"},
        {"id": 1, "updated_at": "2024-01-03T00:00:00", "v": "x"},
        {"id": 2, "updated_at": "2024-02-01T00:00:00", "v": "new"},
    ]
    assert [r["v"] for r in latest(rows)] == ["x", "new"]
""",
    ),
    _py_case(
        "csv-line",
        "Write parse_line(line): the fields of one CSV line, honouring double quotes "
        "(a quoted field may hold commas; a doubled quote inside one is a quote).",
        [
            "def parse_line(line):\n    return [f.strip('\"') for f in line.split(',')]",
            "def parse_line(line):\n    fields, cur, quoted = [], '', False\n    for c in line:\n"
            "        if c == '\"':\n            quoted = not quoted\n"
            "        elif c == ',' and not quoted:\n            fields.append(cur)\n"
            "            cur = ''\n        else:\n            cur += c\n"
            "    fields.append(cur)\n    return fields",
        ],
        "import csv\n\ndef parse_line(line):\n    return next(csv.reader([line]))",
        """
from solution import parse_line
def test_parse_line():
    assert parse_line('a,"b,c",d') == ["a", "b,c", "d"]
    assert parse_line('\\"say \\"\\"hi\\"\\"\\",2') == ['say "hi"', "2"]
""",
    ),
    _py_case(
        "histogram",
        "Write histogram(values, bins, lo, hi): counts of values in bins equal-width bins over "
        "[lo, hi]; hi falls in the last bin; values outside are ignored.",
        [
            "def histogram(values, bins, lo, hi):\n    counts = [0] * bins\n"
            "    width = (hi - lo) / bins\n    for v in values:\n"
            "        if lo <= v < hi:\n            counts[int((v - lo) / width)] += 1\n"
            "    return counts",
            "def histogram(values, bins, lo, hi):\n    counts = [0] * bins\n"
            "    width = (hi - lo) / (bins - 1)\n    for v in values:\n"
            "        if lo <= v <= hi:\n"
            "            counts[min(int((v - lo) / width), bins - 1)] += 1\n    return counts",
        ],
        "def histogram(values, bins, lo, hi):\n    counts = [0] * bins\n"
        "    width = (hi - lo) / bins\n    for v in values:\n"
        "        if lo <= v <= hi:\n"
        "            counts[min(int((v - lo) / width), bins - 1)] += 1\n    return counts",
        """
from solution import histogram
def test_histogram():
    assert histogram([0, 1, 2, 3, 4, 9, 10, 11], 5, 0, 10) == [2, 2, 1, 0, 2]
""",
    ),
    _sql_case(
        "spend-per-customer",
        "Total paid spend per customer name, every customer listed (0 when none), by name.",
        [
            "SELECT c.name, SUM(o.total) AS spend\nFROM customers c\n"
            "JOIN orders o ON o.customer_id = c.id AND o.status = 'paid'\n"
            "GROUP BY c.name\nORDER BY c.name",
            "SELECT c.name, COALESCE(SUM(o.total), 0) AS spend\nFROM customers c\n"
            "LEFT JOIN orders o ON o.customer_id = c.id\nGROUP BY c.name\nORDER BY c.name",
        ],
        "SELECT c.name, COALESCE(SUM(o.total), 0) AS spend\nFROM customers c\n"
        "LEFT JOIN orders o ON o.customer_id = c.id AND o.status = 'paid'\n"
        "GROUP BY c.name\nORDER BY c.name",
        "[('Ada', 220.0), ('Bob', 30.0), ('Cy', 200.0), ('Di', 20.0), ('Ed', 0), ('Fay', 0)]",
    ),
    _sql_case(
        "big-customers",
        "Names of customers whose paid orders total more than 100, by name.",
        [
            "SELECT c.name\nFROM customers c\nJOIN orders o ON o.customer_id = c.id\n"
            "WHERE o.status = 'paid' AND o.total > 100\nGROUP BY c.name\nORDER BY c.name",
            "SELECT c.name\nFROM customers c\nJOIN orders o ON o.customer_id = c.id\n"
            "GROUP BY c.name\nHAVING SUM(o.total) > 100\nORDER BY c.name",
        ],
        "SELECT c.name\nFROM customers c\nJOIN orders o ON o.customer_id = c.id\n"
        "WHERE o.status = 'paid'\nGROUP BY c.name\nHAVING SUM(o.total) > 100\nORDER BY c.name",
        "[('Ada',), ('Cy',)]",
    ),
    _sql_case(
        "buyers-per-country",
        "Per country, how many distinct customers placed a paid order, by country.",
        [
            "SELECT c.country, COUNT(*) AS buyers\nFROM customers c\n"
            "JOIN orders o ON o.customer_id = c.id\nWHERE o.status = 'paid'\n"
            "GROUP BY c.country\nORDER BY c.country",
            "SELECT c.country, COUNT(DISTINCT c.id) AS buyers\nFROM customers c\n"
            "JOIN orders o ON o.customer_id = c.id\nGROUP BY c.country\nORDER BY c.country",
        ],
        "SELECT c.country, COUNT(DISTINCT c.id) AS buyers\nFROM customers c\n"
        "JOIN orders o ON o.customer_id = c.id\nWHERE o.status = 'paid'\n"
        "GROUP BY c.country\nORDER BY c.country",
        "[('FR', 1), ('UK', 1), ('US', 2)]",
    ),
    _sql_case(
        "no-orders",
        "Names of customers with no order at all, by name.",
        [
            "SELECT c.name\nFROM customers c\nLEFT JOIN orders o ON o.customer_id = c.id\n"
            "WHERE o.status <> 'paid'\nORDER BY c.name",
            "SELECT c.name\nFROM customers c\nWHERE c.id NOT IN (SELECT o.id FROM orders o)\n"
            "ORDER BY c.name",
        ],
        "SELECT c.name\nFROM customers c\nLEFT JOIN orders o ON o.customer_id = c.id\n"
        "WHERE o.id IS NULL\nORDER BY c.name",
        "[('Ed',)]",
    ),
    _sql_case(
        "largest-order",
        "The name and total of the customer with the single largest paid order.",
        [
            "SELECT c.name, o.total\nFROM customers c\nJOIN orders o ON o.customer_id = c.id\n"
            "WHERE o.status = 'paid'\nORDER BY o.total\nLIMIT 1",
            "SELECT c.name, SUM(o.total) AS total\nFROM customers c\n"
            "JOIN orders o ON o.customer_id = c.id\nWHERE o.status = 'paid'\n"
            "GROUP BY c.name\nORDER BY total DESC\nLIMIT 1",
        ],
        "SELECT c.name, o.total\nFROM customers c\nJOIN orders o ON o.customer_id = c.id\n"
        "WHERE o.status = 'paid'\nORDER BY o.total DESC\nLIMIT 1",
        "[('Cy', 200.0)]",
    ),
]
