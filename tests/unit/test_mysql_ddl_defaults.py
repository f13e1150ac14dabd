"""added_column_defaults: the plain literal default an ALTER TABLE statement gives each column it
adds, as the statement writes it; anything else is left to the catalog."""

from __future__ import annotations

from python_jobs.capture.mysql_ddl_defaults import added_column_defaults


def test_the_literal_defaults_of_added_columns_in_every_form_of_add():
    ddl = ("ALTER TABLE shop.items ADD COLUMN tier varchar(10) NOT NULL DEFAULT 'it''s gold', add x int default -5 after id, "
           "ADD COLUMN IF NOT EXISTS (`y z` decimal(8,2) DEFAULT 1.5, w enum('default','b') default 'b' comment 'x'), "
           "add b bit(3) default b'101', add h varbinary(2) default 0x4142, add n text default null")
    assert added_column_defaults(ddl) == {"tier": "'it''s gold'", "x": "-5", "y z": "1.5", "w": "'b'", "b": "b'101'",
                                          "h": "0x4142", "n": "null"}


def test_expressions_introducers_and_other_clauses_are_left_to_the_catalog():
    ddl = ("alter table t add index (x), add e int default (1 + 1), add t timestamp default current_timestamp, "
           "add s varchar(5) default _utf8mb4'x', add column plain int, modify m int default 4, "
           "alter column c set default 'add'")
    assert added_column_defaults(ddl) == {}
