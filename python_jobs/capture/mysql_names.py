"""Database and table names compared as the MariaDB/MySQL server compares them.

With `lower_case_table_names` 1 or 2 (the default on Windows and macOS) the server takes a name in any
case: `ALTER TABLE Orders`, `TRUNCATE SHOP.Orders` and `REFERENCES Parent (id)` name the table whose
binlog rows and catalog entry say `shop.orders` (with 2, maybe `Orders`). With 0 (Linux's default) names
differ by case, as their files do. Every comparison of names the capture makes goes through
TableNames.table, read once per connection (server_table_names), and TablesByName, keyed by it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, MutableMapping
from dataclasses import dataclass
from typing import Any, TypeVar

Table = tuple[str, str]  # (database, table)

V = TypeVar("V")


@dataclass(frozen=True)
class TableNames:
    """How a server compares database and table names: folded, case-insensitively (lower_case_table_names
    1 or 2), else exactly (0)."""

    folded: bool = False

    def name(self, name: str) -> str:
        """A database's or table's name in the form two names the server takes for one are equal in."""
        return name.lower() if self.folded and name else name

    def table(self, table: Table) -> Table:
        """(database, table) in the form two names of one table are equal in."""
        return (self.name(table[0]), self.name(table[1])) if self.folded else table


EXACT = TableNames()  # lower_case_table_names=0


def server_table_names(connection: Any) -> TableNames:
    """How the connection's server compares names (its lower_case_table_names, which is read-only)."""
    with connection.cursor() as cursor:
        cursor.execute("select @@lower_case_table_names")
        row = cursor.fetchone()
    return TableNames(folded=bool(row and int(row[0]) in (1, 2)))


class TablesByName(MutableMapping[Table, V]):
    """A dict of (database, table) keys that finds a table under any name the server takes for it."""

    def __init__(self, names: TableNames, items: Iterable[tuple[Table, V]] = ()) -> None:
        self.names = names
        self._items: dict[Table, V] = {names.table(table): value for table, value in items}

    def __getitem__(self, table: Table) -> V:
        return self._items[self.names.table(table)]

    def __setitem__(self, table: Table, value: V) -> None:
        self._items[self.names.table(table)] = value

    def __delitem__(self, table: Table) -> None:
        del self._items[self.names.table(table)]

    def __contains__(self, table: object) -> bool:
        return isinstance(table, tuple) and len(table) == 2 and self.names.table(table) in self._items

    def __iter__(self) -> Iterator[Table]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"TablesByName({self.names!r}, {self._items!r})"
