"""The codecs built from a server's own conversion of its character sets (mysql_server_charsets.py),
without a server: from tables as its queries return them."""

from __future__ import annotations

import codecs

import pytest

from python_jobs.capture import mysql_server_charsets
from python_jobs.capture.mysql_charsets import binlog_encoding
from python_jobs.capture.mysql_server_charsets import load_server_charsets, multi_byte_codec, single_byte_codec

EUCJPMS = {bytes([byte]): chr(byte) for byte in range(128)} | {
    b"\x8e\xb1": "ｱ", b"\xad\xa1": "①", b"\xa1\xc0": "\\", b"\x8f\xf4\xfb": "髙", b"\xa3\xa1": "?"}
# As the server gives them: sjis's half-width kana (one byte), 0x815F a backslash (Python's '＼'), 0x8540
# a code it has no character for (an error in Python); big5's 0xA240 U+FFFD (Python's '＼'), 0xF9D6 '碁'
# (an error in Python).
SJIS = {bytes([byte]): chr(byte) for byte in range(128)} | {
    b"\xb1": "ｱ", b"\xdf": "ﾟ", b"\x81\x5f": "\\", b"\x82\xa0": "ぁ", b"\x85\x40": "?", b"\xe0\x40": "漾"}
BIG5 = {bytes([byte]): chr(byte) for byte in range(128)} | {b"\xa2\x40": "\ufffd", b"\xf9\xd6": "碁", b"\xa4\x40": "一"}


def test_a_single_byte_codec_maps_each_byte_to_the_servers_text():
    table = [chr(byte) for byte in range(128)] + ["Œ"] + ["?"] * 127
    codec = single_byte_codec("test_dec8", table)
    assert codec.decode(bytes([0x41, 0x80, 0x81, 0xFF])) == ("AŒ??", 4)
    assert codec.encode("AŒ?") == (b"A\x80?", 3)  # '?' is the byte 0x3F, not one the server has no character for
    with pytest.raises(UnicodeEncodeError):
        codec.encode("é")
    # A byte whose text is not one character (none of the server's tables has one) still decodes.
    assert single_byte_codec("test_wide", table[:255] + ["ab"]).decode(b"\xffA") == ("abA", 2)


def test_eucjpms_codes_are_cut_by_their_structure_and_decoded_by_the_servers_table():
    codec = multi_byte_codec("test_eucjpms", EUCJPMS)
    data = b"ab\x8e\xb1\xad\xa1\xa1\xc0\x8f\xf4\xfbz\xa3\xa1"
    assert codec.decode(data) == ("abｱ①\\髙z?", len(data))
    assert codec.decode(memoryview(b"\xad\xa1")) == ("①", 2)
    assert codec.encode("ｱ①髙x") == (b"\x8e\xb1\xad\xa1\x8f\xf4\xfbx", 4)
    # A byte that begins no code (a column cannot hold one): '?' as the server converts it, or an error.
    for broken in (b"\x80", b"a\xad", b"\x8e\xe0", b"\x8f\xa1"):
        with pytest.raises(UnicodeDecodeError):
            codec.decode(broken)
    assert codec.decode(b"a\xadb", "replace") == ("a?b", 3)
    assert codec.decode(b"a\xadb", "ignore") == ("ab", 3)
    # ASCII decodes by the table too where the server maps a byte of it otherwise.
    assert multi_byte_codec("test_other", EUCJPMS | {b"\\": "¥"}).decode(b"a\\") == ("a¥", 2)


def test_double_byte_codes_are_a_byte_or_two_as_the_server_counts_them():
    codec = multi_byte_codec("test_sjis", SJIS)
    # A kana is one byte also before a byte that would trail a lead byte ('@'); a code the server has no
    # character for is '?' as it converts it.
    data = b"a\xb1@\x81\x5f\x82\xa0\xdf\x85\x40\xe0\x40z"
    assert codec.decode(data) == ("aｱ@\\ぁﾟ?漾z", len(data))
    assert codec.encode("ｱ\\ぁ") == (b"\xb1\\\x82\xa0", 3)  # '\\' the ASCII byte, the first of its codes
    for broken in (b"\x81", b"a\x82", b"\x82\x41", b"\xfd"):  # no code (a column cannot hold one)
        with pytest.raises(UnicodeDecodeError):
            codec.decode(broken)
    assert codec.decode(b"\x82\x41", "replace") == ("?A", 2)  # as the server converts it
    assert multi_byte_codec("test_big5", BIG5).decode(b"\xa2\x40\xf9\xd6\xa4\x40!") == ("\ufffd碁一!", 7)


def _as_python(native: str, leads: list[int], trails: range) -> dict[bytes, str]:
    """A double-byte set's codes as Python's codec decodes them ('?' where it has no character)."""
    codes = {bytes([byte]): bytes([byte]).decode(native) for byte in range(256) if byte not in leads
             and _decodes(bytes([byte]), native)}
    for lead in leads:
        for trail in trails:
            code = bytes([lead, trail])
            codes[code] = code.decode(native) if _decodes(code, native) else "?"
    return codes


def _decodes(code: bytes, native: str) -> bool:
    try:
        code.decode(native)
        return True
    except UnicodeDecodeError:
        return False


@pytest.mark.parametrize("native, leads, server", [
    # sjis: 0x815F is the server's '\' (Python's '＼'); 0xA0 one byte the server has, a lead in Python.
    ("shift_jis", [*range(0x81, 0xA0), *range(0xE0, 0xFD)], {b"\x81\x5f": "\\", b"\xa0": "?"}),
    # big5: leads to 0xF9 (0xFA-0xFE only second bytes), 0xA240 the server's U+FFFD.
    ("big5", [*range(0xA1, 0xFA)], {b"\xa2\x40": "\ufffd"}),
    # ujis: 0xA1C0 is the server's '\\' (Python's '＼').
    ("euc_jp", [*range(0xA1, 0xFF)], {b"\xa1\xc0": "\\"}),
    # euckr: 0xA4D4 alone is the filler on the server; Python reads on past it into an eight-byte syllable.
    ("euc_kr", [*range(0xA1, 0xFF)], {b"\xa4\xd4": "\u3164"}),
])
def test_pythons_codec_decodes_only_what_it_decodes_as_the_server_does(native, leads, server):
    import random

    codes = _as_python(native, leads, range(0x40, 0xFF)) | server
    checked = multi_byte_codec(f"test_native_{native}", codes, native)
    alone = multi_byte_codec(f"test_alone_{native}", codes)
    pick = random.Random(7)
    pieces = list(codes)
    for count in (1, 2, 3, 8, 40):
        for _ in range(300):
            data = b"".join(pick.choice(pieces) for _ in range(count))
            assert checked.decode(data) == alone.decode(data), data
    # The syllable Python would make of euc_kr's filler and three jamo is the server's four characters.
    if native == "euc_kr":
        data = b"\xa4\xd4\xa4\xa1\xa4\xbf\xa4\xd4"
        assert checked.decode(data) == alone.decode(data) and len(checked.decode(data)[0]) == 4


def test_a_value_python_decodes_as_the_server_is_decoded_by_python():
    sjis = _as_python("shift_jis", [*range(0x81, 0xA0), *range(0xE0, 0xFD)], range(0x40, 0xFF))
    checked = mysql_server_charsets._native_check(sjis | {b"\x81\x5f": "\\", b"\xa0": "?"}, "shift_jis")
    assert checked("日本語のテキスト abc".encode("shift_jis"))
    assert checked(b"a\\b") and not checked("テ＼".encode("shift_jis"))  # 0x815F: the server's '\\'
    assert not checked(b"a\xa0")  # one byte on the server, a lead in Python


class _Cursor:
    def __init__(self, server: "_Server") -> None:
        self.server = server
        self.rows: list = []

    def __enter__(self) -> "_Cursor":
        return self

    def __exit__(self, *exc) -> None:
        return None

    def execute(self, query: str) -> None:
        self.server.queries.append(query)
        if query == "select version()":
            self.rows = [(self.server.version,)]
        elif "information_schema.character_sets" in query:
            self.rows = [("latin1", 1), ("koi8u", 1), ("dec8", 1), ("binary", 1), ("utf8mb4", 4), ("eucjpms", 3),
                         ("sjis", 2), ("ucs2", 2)]
        elif "using eucjpms" in query or "using sjis" in query:
            table = EUCJPMS if "using eucjpms" in query else SJIS
            self.rows = [(code.hex().upper(), text) for code, text in table.items()]
        else:
            (name,) = (name for name in ("dec8", "koi8u", "latin1") if f"using {name})" in query)
            self.rows = [(byte, self.server.texts.get(name, {}).get(byte, chr(byte))) for byte in range(256)]

    def fetchone(self):
        return self.rows[0]

    def fetchall(self):
        return self.rows


class _Server:
    def __init__(self, version: str, texts: dict[str, dict[int, str]]) -> None:
        self.version, self.texts, self.queries = version, texts, []

    def cursor(self) -> _Cursor:
        return _Cursor(self)


def test_each_mapping_is_read_from_the_server_when_first_used_by_the_librarys_character_set_names(monkeypatch):
    for name, empty in (("_CODECS", {}), ("_NAMES", {}), ("_SERVER", {})):
        monkeypatch.setattr(mysql_server_charsets, name, empty)
    before = binlog_encoding("cp1252")
    server = _Server("10.11.19-MariaDB", {"dec8": {0xD7: "Œ"}, "koi8u": {0x95: "•"}, "latin1": {0x81: "\x81"}})
    load_server_charsets(server)
    assert len(server.queries) == 2  # its version and its character sets: no mapping before one is used
    assert b"\xd7".decode(binlog_encoding("dec8")) == "Œ"
    assert len(server.queries) == 3 and binlog_encoding("dec8") and len(server.queries) == 3
    # The library names latin1 cp1252, koi8u koi8_u: both decode by the server's mapping.
    assert b"\x95".decode(binlog_encoding("koi8_u")) == "•"
    assert binlog_encoding("cp1252") != before and b"\x81".decode(binlog_encoding("cp1252")) == "\x81"
    assert "①".encode(binlog_encoding("eucjpms")) == b"\xad\xa1"
    assert binlog_encoding("utf16") == "utf-16-be"  # none from the server: the table of mysql_charsets
    assert b"\xb1\x81\x5f".decode(binlog_encoding("sjis")) == "ｱ\\" and "using sjis" in server.queries[-1]
    assert binlog_encoding("ucs2") == "utf-16-be"  # two bytes each, not a double-byte set read from the server
    assert binlog_encoding("big5") == "big5"  # nor for one the server does not name here
    # The same server version again: nothing read again.
    queries = len(server.queries)
    load_server_charsets(server)
    assert server.queries[queries:] == ["select version()"]
    # Another: read again, under new codec names (Python keeps a codec it found by its name).
    first = binlog_encoding("dec8")
    load_server_charsets(_Server("11.4.2-MariaDB", {"dec8": {0xD7: "×"}}))
    assert binlog_encoding("dec8") != first
    assert b"\xd7".decode(binlog_encoding("dec8")) == "×" and b"\xd7".decode(first) == "Œ"
    assert codecs.lookup(binlog_encoding("dec8")).name == binlog_encoding("dec8")
