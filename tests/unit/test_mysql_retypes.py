"""Which retyped MariaDB/MySQL columns have their table read again (mysql_table_changes.padding_changed):
those whose values the server's conversion may have changed with no rows event."""

from python_jobs.capture.mysql_events import Column
from python_jobs.capture.mysql_table_changes import padding_changed


def column(column_type: str) -> Column:
    return Column("c", column_type.split("(")[0], column_type)


def test_values_made_char_or_binary_or_out_of_char_may_have_changed_and_widened_ones_not():
    for before, after in (("varchar(10)", "char(10)"), ("text", "char(20)"), ("char(5)", "varchar(5)"),
                          ("varbinary(4)", "binary(4)"), ("binary(4)", "binary(8)"), ("varchar(4)", "binary(4)")):
        assert padding_changed(before, column(after)), (before, after)
    for before, after in (("varchar(10)", "varchar(20)"), ("char(5)", "char(10)"), ("int(11)", "bigint(20)"),
                          ("varchar(10)", "text"), ("decimal(10,2)", "decimal(12,2)"), ("int(10) unsigned", "bigint(20)")):
        assert not padding_changed(before, column(after)), (before, after)
