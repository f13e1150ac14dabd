"""The foreign keys whose cascades reach captured MariaDB/MySQL tables, as of the binlog position the
capture reads, and how DDL statements change them (python_jobs/capture/mysql_foreign_keys.py)."""

from __future__ import annotations

import json

import pytest

from python_jobs.capture.mysql_names import TableNames
from python_jobs.capture.mysql_foreign_keys import (
    Cascade,
    ForeignKey,
    after_statement,
    cascaded_tables,
    cascades_of,
    keys_from_state,
    keys_to_state,
    union,
)

CHILD = ForeignKey(("shop", "child"), "child_parent", ("shop", "parent"), "CASCADE", "CASCADE", ("id",))
STAFF = ForeignKey(("shop", "staff"), "staff_boss", ("shop", "staff"), "SET NULL", "", ("id",))
LEAF = ForeignKey(("shop", "leaf"), "leaf_ibfk_1", ("shop", "mid"), "CASCADE", "", ("id",))
MID = ForeignKey(("shop", "mid"), "mid_ibfk_1", ("shop", "top"), "CASCADE", "SET NULL", ("id",))
KEYS = [CHILD, STAFF, LEAF, MID]
FOLDED = TableNames(folded=True)


def test_cascades_reach_captured_tables_directly_and_through_tables_between():
    assert cascades_of(KEYS, ["shop.child", "shop.staff", "shop.leaf"]) == {
        ("shop", "parent"): [Cascade(("shop.child",), True, frozenset({"id"}))],
        ("shop", "staff"): [Cascade(("shop.staff",), True, frozenset())],
        ("shop", "mid"): [Cascade(("shop.leaf",), True, frozenset())],
        # Further up any update may cascade: mid's own rows change.
        ("shop", "top"): [Cascade(("shop.leaf",), True, None)],
    }
    assert cascades_of(KEYS, ["shop.mid"]) == {("shop", "top"): [Cascade(("shop.mid",), True, frozenset({"id"}))]}
    assert cascades_of([LEAF], ["shop.leaf"]) == {("shop", "mid"): [Cascade(("shop.leaf",), True, frozenset())]}
    assert cascades_of([MID], ["shop.leaf"]) == {}  # a key of a table no captured one reaches


def test_a_cycle_of_keys_ends():
    a = ForeignKey(("s", "a"), "a_b", ("s", "b"), "CASCADE", "", ("id",))
    b = ForeignKey(("s", "b"), "b_a", ("s", "a"), "CASCADE", "", ("id",))
    assert cascades_of([a, b], ["s.a"]) == {("s", "b"): [Cascade(("s.a",), True, frozenset())],
                                            ("s", "a"): [Cascade(("s.a",), True, frozenset())]}


def test_which_changes_of_a_parent_reach_which_tables():
    cascades = [Cascade(("s.a",), True, frozenset({"code"})), Cascade(("s.b",), False, None),
                Cascade(("s.c",), False, frozenset())]
    assert cascaded_tables(cascades, True, lambda: pytest.fail("not asked")) == ["s.a"]
    assert cascaded_tables(cascades, False, lambda: {"note"}) == ["s.b"]
    assert cascaded_tables(cascades, False, lambda: {"code"}) == ["s.a", "s.b"]


LATE = ForeignKey(("shop", "late"), "late_parent", ("shop", "parent"), "SET NULL", "", ("code",))


@pytest.mark.parametrize("query, gone, adding", [
    ("alter table child drop foreign key child_parent", {CHILD}, False),
    ("ALTER TABLE `shop`.`child` DROP FOREIGN KEY IF EXISTS `CHILD_PARENT`", {CHILD}, False),
    ("alter table shop.mid drop constraint mid_ibfk_1, drop foreign key other", {MID}, False),
    ("/* tool */ alter online table child wait 5 drop foreign key child_parent", {CHILD}, False),
    ("alter table other.child drop foreign key child_parent", set(), False),  # another database's table
    ("alter table child drop foreign key staff_boss", set(), False),  # a key of another table
    ("alter table child drop index child_parent", set(), False),
    ("alter table child comment 'drop foreign key child_parent'", set(), False),
    ("drop table if exists `child`, shop.mid", {CHILD, MID}, False),
    ("drop temporary table child", set(), False),
    ("drop database shop", set(KEYS), False),
    ("create or replace table staff (id int primary key, boss int references staff (id))", {STAFF}, True),
    ("rename table child to child_old, child_new to child", set(), True),
    ("truncate table child", set(), False),
    ("alter table child add column n int", set(), False),
])
def test_keys_a_statement_drops_and_whether_it_may_add_some(query, gone, adding):
    kept, may_add = after_statement(KEYS, query, b"shop")
    assert kept == [key for key in KEYS if key not in gone]
    assert may_add is adding


@pytest.mark.parametrize("query, gone, added", [
    ("alter table late add constraint late_parent foreign key (p) references parent (code) on delete set null",
     set(), [LATE]),
    ("ALTER TABLE `late` ADD CONSTRAINT `late_parent` FOREIGN KEY IF NOT EXISTS `i` (`p`) REFERENCES `shop`.`parent` "
     "(`code`) MATCH FULL ON UPDATE RESTRICT ON DELETE SET  NULL", set(), [LATE]),
    ("alter table child drop foreign key child_parent, add constraint child_parent foreign key (parent_id) "
     "references parent (id) on delete cascade",
     {CHILD}, [ForeignKey(("shop", "child"), "child_parent", ("shop", "parent"), "CASCADE", "", ("id",))]),
    ("create table x.t (id int primary key, a int, b int, constraint t_ab foreign key (a, b) references u (c, d) "
     "on update cascade, constraint t_u foreign key (a) references u (c) on delete restrict)",
     set(), [ForeignKey(("x", "t"), "t_ab", ("shop", "u"), "", "CASCADE", ("c", "d"))]),
    ("alter table late add constraint late_parent foreign key (p) references parent (code)", set(), []),
    # Unnamed: the server names it <table>_ibfk_<n>, from 1 in a CREATE TABLE.
    ("create table late (id int primary key, p int, foreign key (p) references parent (id) on delete cascade)",
     set(), [ForeignKey(("shop", "late"), "late_ibfk_1", ("shop", "parent"), "CASCADE", "", ("id",))]),
    # Without a CONSTRAINT name, MariaDB names the key as its index.
    ("alter table late add foreign key i (p) references parent (code) on delete set null", set(),
     [ForeignKey(("shop", "late"), "i", ("shop", "parent"), "SET NULL", "", ("code",))]),
])
def test_keys_a_statement_adds_are_known_as_it_states_them(query, gone, added):
    kept, may_add = after_statement(KEYS, query, b"shop")
    assert kept == [key for key in KEYS if key not in gone] + added
    assert may_add


def test_a_parents_columns_compare_as_mariadb_compares_names():
    key = ForeignKey(("s", "c"), "c_p", ("s", "p"), "", "CASCADE", ("Code",))
    assert cascaded_tables(cascades_of([key], ["s.c"])[("s", "p")], False, lambda: {"CODE"}) == ["s.c"]


def test_the_state_keeps_the_keys_and_a_state_from_before_has_none():
    state = json.loads(json.dumps(keys_to_state(KEYS)))
    assert keys_from_state(state) == KEYS
    assert keys_from_state(None) == []
    assert union([CHILD, MID], [MID, STAFF, CHILD]) == [CHILD, MID, STAFF]


def test_keys_an_alter_table_adds_without_a_name_are_named_as_the_server_names_them():
    """n one above the highest of the table's <table>_ibfk_<n> keys, known or in the catalog now, each
    unnamed key in turn; a named one takes no number."""
    query = ("alter table {} add constraint foreign key (a) references top (id) on delete cascade, "
             "add constraint named foreign key (b) references top (id) on delete cascade, "
             "add foreign key (c) references top (id) on update cascade")
    asked = []
    kept, _ = after_statement(KEYS, query.format("mid"), b"shop", catalog_ibfk=lambda table: asked.append(table) or 0)
    assert [(key.name, key.columns) for key in kept if key not in KEYS] == [
        ("mid_ibfk_2", ("id",)), ("named", ("id",)), ("mid_ibfk_3", ("id",))]  # one above the known mid_ibfk_1
    assert asked == [("shop", "mid")]
    kept, _ = after_statement(KEYS, query.format("MID"), b"shop", FOLDED, lambda table: 6)
    assert [key.name for key in kept if key not in KEYS] == ["mid_ibfk_7", "named", "mid_ibfk_8"]
    # Dropped again by that name before the capture read it: known till then, as the catalog no longer has it.
    kept, _ = after_statement(kept, "alter table Mid drop foreign key mid_ibfk_7", b"shop", FOLDED)
    assert [key.name for key in kept if key not in KEYS] == ["named", "mid_ibfk_8"]
