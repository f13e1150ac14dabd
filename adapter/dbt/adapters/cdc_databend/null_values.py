"""NULL as None, and the text 'NULL' as that text, in what dbt's Databend connection reads.

dbt-databend-cloud reads results with databend-py, which asks the server for NULL as the string
"NULL" (the server's format_null_as_str default) and so hands a NULL and the text 'NULL' over
alike. The connection here asks for NULL as a JSON null (the session setting format_null_as_str=0)
and keeps it as None, which databend-py would otherwise convert with the column's type (str(None)
is 'None').
"""

from __future__ import annotations

from typing import Any

from databend_py.result import QueryResult


class NullKeepingResult(QueryResult):
    """databend-py's result, with a JSON null read as None."""

    def get_result(self):
        self.store_data(self.first_data)
        self.store_columns(self.first_data)
        for data in self.data_generator:
            self.store_data(data)
        rows = [
            tuple(None if value is None else self.type_convert(self.column_type_dic[column])(value)
                  for column, value in row.items())
            for row in self.column_data_dict_list
        ]
        return (self.columns_with_types if self.with_column_types else []), rows


def keep_nulls(handle: Any, database: str) -> None:
    """Make a databend-sqlalchemy connection (dbt-databend-cloud's handle) read NULL as None."""
    client = handle.client
    client.query_result_cls = NullKeepingResult
    # timezone: a timestamp without a zone is read as UTC, as on Spark, whatever the server's or the
    # user's default (in another zone a skipped wall time fails the cast, and the instants would
    # depend on who ran the apply).
    client.connection.client_session = {"database": database, "settings": {"format_null_as_str": "0", "timezone": "UTC"}}
