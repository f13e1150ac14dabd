"""A mirror model's output columns, kept between the runs of one process (docs/apply_service.md,
"The design", item 2: a mirror's plan once).

Each run described the model's compiled SQL (`describe query`): Spark parsed and analyzed it, about
a tenth of a small mirror's SQL time, for the same answer run after run. The answer depends on the
SQL's text, on the relations it reads and on the session's settings. A cdc_merge model reads one
relation, its raw table (validate.sql refuses a model that depends on more), through the batch view
the product makes over it; so the answer is kept by the SQL's text and the raw table's identity:
its UUID (a table dropped and made again is another) and its current schema's id. The session's
settings are the profile's: dbt-spark's cursor applies them before every statement.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from typing import Any, List, Optional, Sequence, Tuple

# Models of all processes' projects together; the least recently used dropped first.
MAX_KEPT = 10_000

Key = Tuple[str, str, int]
Columns = List[Tuple[str, str]]

_kept: "OrderedDict[Key, Columns]" = OrderedDict()
_lock = threading.Lock()


def keep_key(sql: str, raw_table: Optional[Any]) -> Optional[Key]:
    """What the model's columns are kept by, or None (described each time) when the raw table is
    not an Iceberg table loaded in this process."""
    if raw_table is None:
        return None
    return hashlib.sha256(sql.encode()).hexdigest(), str(raw_table.uuid()), int(raw_table.schema().schemaId())


def kept(key: Optional[Key]) -> Optional[Columns]:
    if key is None:
        return None
    with _lock:
        columns = _kept.get(key)
        if columns is not None:
            _kept.move_to_end(key)
    return columns


def keep(key: Optional[Key], columns: Sequence[Sequence[str]]) -> None:
    if key is None:
        return
    with _lock:
        _kept[key] = [(str(name), str(data_type)) for name, data_type in columns]
        _kept.move_to_end(key)
        while len(_kept) > MAX_KEPT:
            _kept.popitem(last=False)
