"""Database and table names compared as the MariaDB/MySQL server compares them (lower_case_table_names:
python_jobs/capture/mysql_names.py), and the capture's comparisons that go through it."""

from __future__ import annotations

import pytest

from python_jobs.capture.mysql_foreign_keys import Cascade, ForeignKey, after_statement, cascades_of
from python_jobs.capture.mysql_names import EXACT, TableNames, TablesByName, server_table_names
from python_jobs.capture.mysql_statements import emptied_tables, renamed_away_tables

FOLDED = TableNames(folded=True)


class _Cursor:
    def __init__(self, value: int) -> None:
        self.value = value
        self.executed: list[str] = []

    def __enter__(self) -> "_Cursor":
        return self

    def __exit__(self, *_: object) -> None:
        return None

    def execute(self, query: str) -> None:
        self.executed.append(query)

    def fetchone(self) -> tuple[int]:
        return (self.value,)


class _Connection:
    def __init__(self, value: int) -> None:
        self.value = value

    def cursor(self) -> _Cursor:
        return _Cursor(self.value)


@pytest.mark.parametrize("setting, folded", [(0, False), (1, True), (2, True)])
def test_the_servers_setting_says_whether_names_fold(setting, folded):
    assert server_table_names(_Connection(setting)) == TableNames(folded=folded)


def test_folded_names_compare_without_case_and_exact_ones_with_it():
    assert FOLDED.table(("Shop", "Orders")) == FOLDED.table(("shop", "ORDERS")) == ("shop", "orders")
    assert EXACT.table(("Shop", "Orders")) == ("Shop", "Orders") != EXACT.table(("shop", "orders"))
    assert FOLDED.name("") == ""


def test_tables_by_name_find_a_table_under_any_name_the_server_takes_for_it():
    tables = TablesByName(FOLDED, [(("shop", "orders"), 1)])
    assert tables.get(("SHOP", "Orders")) == 1 and ("shop", "ORDERS") in tables and ("shop", "items") not in tables
    tables[("Shop", "Orders")] = 2
    assert dict(tables) == {("shop", "orders"): 2}
    exact = TablesByName(EXACT, [(("shop", "orders"), 1)])
    assert exact.get(("shop", "Orders")) is None and ("shop", "orders") in exact


@pytest.mark.parametrize("query, names, tables", [
    ("drop database SHOP", FOLDED, [("shop", "orders")]),
    ("drop database SHOP", EXACT, []),
    ("drop database shop", EXACT, [("shop", "orders")]),
    ("rename table a to t, b to A, t to b", FOLDED, []),  # a swap: both names get a table again
    ("rename table a to t, b to A, t to b", EXACT, [("shop", "a")]),
])
def test_a_dropped_database_and_a_rename_compare_names_as_the_server(query, names, tables):
    assert emptied_tables(query, b"shop", [("shop", "orders")], names) == tables


def test_a_rename_onto_its_own_name_in_another_case_takes_nothing_away():
    assert renamed_away_tables("alter table orders rename to Orders", "shop", FOLDED) == []
    assert renamed_away_tables("alter table orders rename to Orders", "shop") == [("shop", "orders")]


CHILD = ForeignKey(("shop", "child"), "child_parent", ("shop", "parent"), "CASCADE", "", ("id",))


def test_keys_stated_in_another_case_cascade_into_the_captured_table():
    keys, adding = after_statement([], "alter table Child add constraint c foreign key (p) references SHOP.Parent (id) "
                                       "on delete cascade", b"Shop", FOLDED)
    assert adding and keys == [ForeignKey(("shop", "child"), "c", ("shop", "parent"), "CASCADE", "", ("id",))]
    assert cascades_of(keys, ["shop.child"], FOLDED) == {("shop", "parent"): [Cascade(("shop.child",), True, frozenset())]}
    # Keys the catalog names in another case (lower_case_table_names=2 keeps a name's case) too.
    upper = ForeignKey(("Shop", "Child"), "c", ("Shop", "Parent"), "CASCADE", "", ("id",))
    assert cascades_of([upper], ["shop.child"], FOLDED) == {("shop", "parent"): [Cascade(("shop.child",), True, frozenset())]}
    assert cascades_of([upper], ["shop.child"], EXACT) == {}


@pytest.mark.parametrize("query", ["alter table CHILD drop foreign key CHILD_PARENT", "drop table Shop.Child",
                                   "drop database SHOP"])
def test_keys_dropped_in_another_case_go(query):
    assert after_statement([CHILD], query, b"shop", FOLDED)[0] == []
    assert after_statement([CHILD], query, b"shop", EXACT)[0] == [CHILD]
