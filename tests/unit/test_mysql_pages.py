"""The MariaDB/MySQL page query's key comparisons (mysql_pages.py), without a server."""

from __future__ import annotations

import itertools

from python_jobs.capture.mysql_events import Column
from python_jobs.capture.mysql_pages import _bound_parameters, _compare, key_image


def evaluate(condition: str, parameters: list, row: dict) -> bool:
    """The SQL condition evaluated in Python for integer columns named a, b, c."""
    expression = condition.replace(" = ", " == ").replace(" and ", " and ").replace(" or ", " or ")
    values = iter(parameters)
    while "%s" in expression:
        expression = expression.replace("%s", repr(next(values)), 1)
    return eval(expression, {}, dict(row))


def test_a_composite_key_compares_in_order_for_every_operator():
    columns = [("a", "%s"), ("b", "%s"), ("c", "%s")]
    bound = [1, 2, 3]
    for operator, expected in ((">", lambda row: row > (1, 2, 3)), (">=", lambda row: row >= (1, 2, 3)),
                               ("<=", lambda row: row <= (1, 2, 3))):
        condition = _compare(columns, operator)
        for row in itertools.product(range(4), repeat=3):
            got = evaluate(condition, _bound_parameters(bound), dict(zip("abc", row)))
            assert got == expected(row), (operator, row, condition)


def test_key_texts_become_the_values_the_capture_writes():
    assert key_image(Column("id", "bigint", "bigint unsigned"), "18446744073709551615") == 18446744073709551615
    assert key_image(Column("amount", "decimal", "decimal(10,2)"), "1.50") == "1.50"
    assert key_image(Column("flags", "bit", "bit(64)"), "18446744073709551615") == 18446744073709551615
    assert key_image(Column("day", "date", "date"), "2026-11-28") == "2026-11-28"
    assert key_image(Column("at", "timestamp", "timestamp"), "2026-11-28 10:00:00") == "2026-11-28T10:00:00.000000Z"
    assert key_image(Column("code", "varbinary", "varbinary(4)"), "00ff") == "AP8="
    assert key_image(Column("name", "varchar", "varchar(8)"), "l1") == "l1"
