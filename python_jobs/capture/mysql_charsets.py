"""The Python codec of a MariaDB/MySQL character set, for the text values of binlog rows events
(python-mysql-replication decodes them by PyMySQL's table, and mysql_rows.py by the same answer).

PyMySQL's table lacks utf16, utf16le, ucs2 and utf32, whose names Python reads as UTF-16/32 led
by a byte-order mark (little-endian without one) or does not know, while the server writes them
big-endian (utf16le little-endian) without a mark; and its latin1 is Python's cp1252, which has no
character for five bytes (0x81, 0x8D, 0x8F, 0x90, 0x9D) that the server's latin1 keeps as the C1
controls of the same number: a value holding one stopped the capture."""

from __future__ import annotations

import codecs

_LATIN1 = "cdc_merge_latin1"
# By the names the library gives a column's character set: the server's, but cp1252 for latin1.
_CODECS = {"utf16": "utf-16-be", "ucs2": "utf-16-be", "utf16le": "utf-16-le", "utf32": "utf-32-be", "cp1252": _LATIN1,
           "latin1": _LATIN1}
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
    """The codec name of a column's character set as the library names it (its own name where
    neither table knows it)."""
    from pymysql.charset import charset_by_name

    if charset in _CODECS:
        return _CODECS[charset]
    found = charset_by_name(charset)
    return found.encoding if found else charset
