"""The Python codec of a MariaDB/MySQL character set, for the text values of binlog rows events
(python-mysql-replication decodes them by PyMySQL's table, and mysql_rows.py by the same answer).

PyMySQL's table lacks utf16, utf16le, ucs2 and utf32, whose names Python reads as UTF-16/32 led
by a byte-order mark (little-endian without one) or does not know, while the server writes them
big-endian (utf16le little-endian) without a mark; and its latin1 is Python's cp1252, which has no
character for five bytes (0x81, 0x8D, 0x8F, 0x90, 0x9D) that the server's latin1 keeps as the C1
controls of the same number: a value holding one stopped the capture.

The library also decodes the ENUM and SET members a table map event carries as UTF-8, and leaves a
member it cannot decode empty, while the server writes them in the column's character set: a
`latin1` or `sjis` member that is not ASCII arrived as ''. `use_server_charsets` has it keep their
bytes and decode them by the column's character set.

Once the capture has read them from the server (mysql_server_charsets.load_server_charsets), every
single-byte character set, eucjpms, ujis and the double-byte sets (big5, cp932, euckr, gb2312, gbk,
sjis) decode by the server's own mapping, which Python's codecs lack or differ from."""

from __future__ import annotations

import codecs

from python_jobs.capture.mysql_server_charsets import server_encoding

_LATIN1 = "cdc_merge_latin1"
# By the names the library gives a column's character set: the server's, but cp1252 for latin1.
_CODECS = {"utf16": "utf-16-be", "ucs2": "utf-16-be", "utf16le": "utf-16-le", "utf32": "utf-32-be", "cp1252": _LATIN1,
           "latin1": _LATIN1}
# The server's name of a character set the library names after Python's codec.
_SERVER_NAMES = {"cp1252": "latin1", "koi8_r": "koi8r", "koi8_u": "koi8u"}
_LATIN1_DECODING = "".join(bytes([byte]).decode("cp1252", errors="ignore") or chr(byte) for byte in range(256))
_LATIN1_ENCODING = codecs.charmap_build(_LATIN1_DECODING)


def _latin1(name: str) -> codecs.CodecInfo | None:
    if name != _LATIN1:
        return None
    return codecs.CodecInfo(name=_LATIN1,
                            encode=lambda text, errors="strict": codecs.charmap_encode(text, errors, _LATIN1_ENCODING),
                            decode=lambda data, errors="strict": codecs.charmap_decode(data, errors, _LATIN1_DECODING))


codecs.register(_latin1)


def binlog_encoding(charset: str) -> str:
    """The codec name of a column's character set as the library names it: the server's mapping
    where it was read, else the tables here (its own name where neither table knows it)."""
    from pymysql.charset import charset_by_name

    from_server = server_encoding(_SERVER_NAMES.get(charset, charset))
    if from_server is not None:
        return from_server
    if charset in _CODECS:
        return _CODECS[charset]
    found = charset_by_name(charset)
    return found.encoding if found else charset


def use_server_charsets() -> None:
    """The library decodes row values and ENUM/SET members by the server's character sets, as
    mapped here (for the events it decodes, and those mysql_rows.py decodes, which ask it the same)."""
    from pymysqlreplication.row_event import RowsEvent, TableMapEvent

    RowsEvent.charset_to_encoding = staticmethod(binlog_encoding)
    if getattr(TableMapEvent, "_cdc_merge_members", False):
        return
    sync_columns = TableMapEvent._sync_column_info

    def members_kept(event, length):
        """The library's _read_type_values, each member's undecodable bytes kept as surrogates."""
        packet, values = event.packet, []
        end = packet.read_bytes + length
        while packet.read_bytes < end:
            count = packet.read_length_coded_binary()
            values.append([packet.read_variable_length_string().decode("utf-8", "surrogateescape")
                           for _ in range(count)])
        return values or None

    def columns_with_members(event):
        sync_columns(event)
        for column in event.columns:
            encoding = binlog_encoding(column.character_set_name) if column.character_set_name else "utf-8"
            for attribute in ("enum_values", "set_values"):
                members = getattr(column, attribute, None)
                if members:
                    setattr(column, attribute, [_member(member, encoding) for member in members])

    TableMapEvent._read_type_values = members_kept
    TableMapEvent._sync_column_info = columns_with_members
    TableMapEvent._cdc_merge_members = True


def _member(member: str, encoding: str) -> str:
    return member.encode("utf-8", "surrogateescape").decode(encoding)
