"""Which MariaDB/MySQL ALTER TABLEs have their table read again (mysql_retypes.py): every retype but
the known widenings, and a character set conversion told by the statement. The lossy pairs are those
a throwaway MariaDB changed values for with no rows event (tests/test_mariadb_lossy_retypes.py)."""

import pytest

from python_jobs.capture.mysql_retypes import charset_converted, converted_columns, lossless_retype, stated_types

WIDENINGS = [
    ("int(11)", "bigint(20)"), ("tinyint(4)", "int(11)"), ("int(10) unsigned", "bigint(20)"),
    ("mediumint(8) unsigned", "int(10) unsigned"), ("int(11)", "int(5)"), ("int", "bigint"),
    ("smallint(5) unsigned zerofill", "int(10) unsigned"),
    ("decimal(10,2)", "decimal(12,2)"), ("decimal(10,2) unsigned", "decimal(12,2)"), ("float", "double"),
    ("datetime", "datetime(6)"), ("datetime(3)", "datetime(6)"), ("time", "time(3)"), ("timestamp", "timestamp(6)"),
    ("varchar(10)", "varchar(20)"), ("char(5)", "char(10)"), ("varbinary(4)", "varbinary(8)"), ("bit(4)", "bit(8)"),
    ("varchar(10)", "text"), ("varchar(16383)", "text"), ("tinytext", "mediumtext"), ("text", "longtext"),
    ("varbinary(255)", "tinyblob"), ("blob", "longblob"),
    ("enum('a','b')", "enum('a','b','c')"), ("enum('a','b','c')", "enum('c','b','a')"),
    ("set('a','b')", "set('a','b','c')"), ("set('a','c')", "set('a','b','c')"),
]
LOSSY = [
    # rounded or clipped numbers
    ("decimal(10,2)", "decimal(10,1)"), ("decimal(10,2)", "decimal(12,4)"), ("decimal(12,2)", "decimal(10,2)"),
    ("decimal(10,2)", "decimal(10,2) unsigned"), ("float", "int(11)"), ("double", "decimal(10,2)"),
    ("double", "float"), ("float(7,3)", "double"), ("int(11)", "int(10) unsigned"), ("int(10) unsigned", "int(11)"),
    ("int(11)", "tinyint(4)"), ("bigint(20) unsigned", "bigint(20)"), ("bit(8)", "bit(4)"),
    # fractions of a second dropped or rounded
    ("datetime(6)", "datetime"), ("time(6)", "time"), ("timestamp(6)", "timestamp"), ("datetime(6)", "datetime(3)"),
    ("date", "datetime"), ("datetime", "date"), ("datetime", "timestamp"),
    # text truncated, padded, or changed between text and base64
    ("varchar(10)", "varchar(3)"), ("varchar(10)", "char(10)"), ("char(5)", "varchar(5)"), ("text", "char(20)"),
    ("char(10)", "char(5)"), ("varbinary(4)", "binary(4)"), ("binary(4)", "binary(8)"), ("varchar(4)", "binary(4)"),
    ("varbinary(10)", "varchar(10)"), ("varchar(10)", "varbinary(10)"), ("blob", "text"), ("text", "blob"),
    ("varchar(16384)", "text"), ("varchar(100)", "tinytext"), ("text", "varchar(100)"), ("mediumtext", "text"),
    ("longblob", "blob"), ("varbinary(300)", "tinyblob"), ("json", "longtext"), ("longtext", "json"),
    ("int(11)", "varchar(10)"), ("varchar(10)", "int(11)"), ("inet4", "inet6"),
    # members dropped, renamed or reordered
    ("enum('a','b','c')", "enum('a','c')"), ("enum('a','b')", "enum('A','b')"), ("set('a','b','c')", "set('c','b','a')"),
    ("set('a','b','c')", "set('a','c')"), ("enum('a','b')", "set('a','b')"), ("enum('x','y')", "varchar(10)"),
]


@pytest.mark.parametrize(("before", "after"), WIDENINGS)
def test_a_widening_keeps_every_value(before, after):
    assert lossless_retype(before, after)


@pytest.mark.parametrize(("before", "after"), LOSSY)
def test_any_other_retype_may_change_values(before, after):
    assert not lossless_retype(before, after)


def test_a_character_set_conversion_is_told_by_the_statement():
    for ddl in ("ALTER TABLE shop.codes CONVERT TO CHARACTER SET latin1",
                "alter table `shop`.`codes` convert to charset utf8mb4 collate utf8mb4_bin",
                "alter table codes modify label varchar(10) character set latin1",
                "alter table codes add column n int, change label label varchar(10) charset ascii not null",
                "alter table codes modify `label` text collate latin1_bin"):
        assert charset_converted(ddl), ddl
    for ddl in ("alter table codes character set latin1", "alter table codes default charset = latin1 collate latin1_bin",
                "alter table codes add column note varchar(10) character set latin1",
                "alter table codes modify label varchar(20) comment 'convert to character set latin1'",
                "alter table codes modify label enum('charset', 'collate'), modify n bigint",
                "alter table `convert to charset x` modify n bigint"):
        assert not charset_converted(ddl), ddl


def test_a_modify_or_change_is_judged_by_its_stated_type_too():
    before = {"price": "decimal(10,2)", "Qty": "int(11)", "kind": "enum('x','y')", "note": "varchar(10)"}
    # A capture far behind: the catalog has a later ALTER's decimal(12,2), which widens decimal(10,1) back.
    assert converted_columns(before, {**before, "price": "decimal(12,2)"}, ["price"],
                             "alter table t modify column price DECIMAL(10, 1) not null") == ["price"]
    assert converted_columns(before, before, [], "ALTER TABLE `t` CHANGE `qty` q2 tinyint default 0") == ["Qty"]
    assert converted_columns(before, before, [], "alter table t modify kind enum('x', 'y', 'y,z') comment 'a, b'") == []
    assert converted_columns(before, before, [], "alter table t modify kind enum('y')") == ["kind"]
    for ddl in ("alter table t modify price numeric(12,2), modify qty integer unsigned, modify note varchar(20)",
                "alter table t modify qty bigint, add column n int, modify note character varying(10) not null"):
        assert converted_columns(before, before, [], ddl) == [name for name in ("Qty",) if "unsigned" in ddl], ddl
    assert stated_types("alter table t modify a double precision, change b c bool, modify `x``y` set('a','b') binary") \
        == {"a": "double", "b": "tinyint(1)", "x`y": "set('a','b')"}
