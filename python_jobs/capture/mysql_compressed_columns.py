"""MariaDB's COMPRESSED columns in the binlog's table maps.

Their types there (140, a compressed BLOB or TEXT; 141, a compressed VARCHAR) are unknown to the
binlog reader, which reads no metadata for them and every field after out of step: any event of a
table with such a column, captured or not, failed the capture ("0 is not a valid
MetadataFieldType"). Their metadata is read as the uncompressed type's, so that every table map
parses. Their values are still not decoded: a captured table's rows event holding them stops the
capture, saying to read the table again (mysql_server.py); a table that is not captured is skipped
as any other.
"""

from __future__ import annotations

import struct
from typing import Any

BLOB_COMPRESSED = 140
VARCHAR_COMPRESSED = 141


def read_compressed_columns_metadata() -> None:
    """Teach the reader's column definitions the two compressed types' metadata (once per process)."""
    from pymysqlreplication.column import Column

    if getattr(Column, "_cdc_merge_compressed", False):
        return
    parse = Column._Column__parse_column_definition

    def parse_column_definition(column: Any, column_type: int, packet: Any) -> None:
        parse(column, column_type, packet)
        if column_type == VARCHAR_COMPRESSED:  # a VARCHAR's: its length in two bytes
            column.max_length = struct.unpack("<H", packet.read(2))[0]
        elif column_type == BLOB_COMPRESSED:  # a BLOB's: the size of its length
            column.length_size = packet.read_uint8()

    Column._Column__parse_column_definition = parse_column_definition
    Column._cdc_merge_compressed = True
