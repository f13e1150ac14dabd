"""A MariaDB/MySQL table's columns as the capture reads them from information_schema
(mysql_columns.read_table_info), without a server."""

from __future__ import annotations

from python_jobs.capture.mysql_columns import (
    _implicit_default, added_again_columns, added_columns, read_table_info, renamed_columns,
)
from python_jobs.capture.mysql_events import Column, TableInfo, json_value

COLUMNS = [("id", "int", "INT(11) UNSIGNED", "PRI"), ("perms", "set", "set('Read','Write','Õ')", ""),
           ("mood", "enum", "enum('Happy','sad')", "")]


class _Connection:
    def cursor(self) -> "_Connection":
        return self

    def __enter__(self) -> "_Connection":
        return self

    def __exit__(self, *exc) -> None:
        return None

    def execute(self, query: str, parameters: tuple) -> None:
        self.rows = COLUMNS if "information_schema.columns" in query else [("BASE TABLE",)]

    def fetchall(self) -> list:
        return self.rows

    def fetchone(self) -> tuple:
        return self.rows[0]


def test_set_and_enum_members_keep_their_case_and_other_types_are_lowercase():
    table = read_table_info(_Connection(), "shop.t")
    types = table.types
    assert types["id"].column_type == "int(11) unsigned"
    # The snapshot's 'Read,Write' and the binlog's {'Write', 'Read'}: their members in their own case.
    assert json_value(types["perms"], "Read,Write,Õ") == "Read,Write,Õ"
    assert json_value(types["perms"], frozenset({"Write", "Read"})) == "Read,Write"
    assert _implicit_default(types["mood"]) == "Happy"


def test_columns_that_swap_names_are_renamed_and_a_retype_under_its_own_name_is_not():
    table = TableInfo("shop", "pairs", tuple(Column(name, "int", "int(11)") for name in ("id", "a", "b", "c")), ("id",))
    known = ["id", "a", "b", "c"]
    assert renamed_columns(known, table, "alter table pairs rename column a to b, rename column b to a") == ["a", "b"]
    assert renamed_columns(known, table, "ALTER TABLE pairs CHANGE `a` `b` int, CHANGE COLUMN IF EXISTS b A int") == ["a", "b"]
    assert renamed_columns(known, table, "alter table pairs change a a bigint, change column c c int") == []
    # IF EXISTS is no name: the column renamed to c is no added column.
    assert renamed_columns(["id", "a", "b", "x"], table, "alter table pairs rename column if exists x to c") == ["c"]
    assert added_columns(["id", "a", "b", "x"], table, "alter table pairs change column if exists x c int")[0] == []


def test_a_column_dropped_that_the_table_has_after_is_added_again():
    table = TableInfo("shop", "stock", tuple(Column(name, "int", "int(11)") for name in ("id", "qty", "note")), ("id",))
    known = ["id", "qty", "note"]
    assert added_again_columns(known, table, "alter table stock drop column qty, add column qty int default 5") == ["qty"]
    assert added_again_columns(known, table, "ALTER TABLE stock DROP IF EXISTS `note`") == ["note"]
    keyed = TableInfo("shop", "stock", tuple(Column(name, "int", "int(11)") for name in ("id", "key")), ("id",))
    assert added_again_columns(["id", "key"], keyed, "alter table stock drop `key`, add `key` int default 1") == ["key"]
    assert added_again_columns(known, table, "alter table stock drop index qty, drop primary key, drop foreign key note, "
                                             "alter column qty drop default, drop column gone") == []
