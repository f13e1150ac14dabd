"""The server's own decoding of character sets that Python decodes otherwise or not at all, for the
text values and ENUM/SET members of binlog rows events (mysql_charsets.py). The snapshot needs none
of this: its SELECT gets every value converted to utf8mb4 by the server.

Python has no codec for dec8, hp8, swe7, keybcs2, macce, armscii8, geostd8 or eucjpms: the binlog
reader kept such a value as bytes, and the capture stopped reading them as UTF-8 (or, where they
happened to be UTF-8, wrote other text than the server's). Where Python has one it may map bytes
otherwise than the server: koi8u's 0x95, cp866's 0xFC and 0xFD, greek's 0xA1 and 0xA2, bytes of
cp1256 and hebrew that the server has no character for. And Python's euc_jp is neither eucJP-ms,
whose NEC and IBM extensions (①, Ⅰ, ㈱, 髙) it cannot decode, nor quite the server's ujis (0xA1C0
is '\\' there, '＼' in Python; the user-defined rows 0xF5-0xFE are the Private Use Area there, an
error in Python).

The double-byte sets big5, cp932, euckr, gb2312, gbk and sjis: Python's codecs cannot decode a code
the server keeps but has no character for (it converts it to '?'): such a value stopped the capture,
in every one of them (big5 256 codes, cp932 1,676, euckr 5,380, gb2312 733, gbk 2,149, sjis 4,401 on
MariaDB 10.11). The server's euckr is also Microsoft's extension of it (cp949: 0x81-0xFE, then
0x41-0x5A, 0x61-0x7A or 0x81-0xFE), whose 8,823 further hangul Python's euc_kr cannot decode; its
big5 has seven more (0xF9D6-0xF9DC, 碁 to 嫺), and seven that it converts to U+FFFD where Python
has '＼', '╴', '￣', 'ˍ', '十', '卅', '／'; its sjis 0x815F is '\\', Python's '＼'.

So each mapping is the server's: CONVERT(... USING utf8mb4) of every byte of a single-byte
character set, of every code of eucjpms or ujis (ASCII, 0x8E and a half-width kana, two bytes
of 0xA1-0xFE, 0x8F and two such bytes: 17,863 codes), and of every byte and every two bytes led by
0x80-0xFF that a double-byte set takes for one character (its codes: which those are the server
says, not a table here), as the server converts them, '?' for a code it has no character for. One
query a character set, when a column of it is first decoded, once a process and server version: a
few milliseconds, some tens for eucjpms and ujis, up to some hundred for a double-byte set."""

from __future__ import annotations

import codecs
import itertools
import re
from typing import Any, Callable

_PREFIX = "cdc_merge_server_"
# The code structure of eucjpms and ujis (MariaDB's ctype-eucjpms.c and ctype-ujis.c, MySQL's alike).
_EUC_JP_SETS = ("eucjpms", "ujis")
_EUC_JP_QUERY = """
with recursive b(n) as (select 161 union all select n + 1 from b where n < 254),
  a(n) as (select 0 union all select n + 1 from a where n < 127)
select hex(char(code)), convert(char(code using {name}) using utf8mb4) from (
  select n as code from a
  union all select 142 * 256 + n from b where n <= 223
  union all select h.n * 256 + l.n from b h, b l
  union all select (143 * 256 + h.n) * 256 + l.n from b h, b l) codes"""
# A byte or a lead byte and a trail byte: a code where the server keeps it (CHAR(... USING) is NULL
# where it would refuse it) and counts it as one character (a half-width kana of sjis and the ASCII
# byte after it are two).
_DOUBLE_BYTE_SETS = ("big5", "cp932", "euckr", "gb2312", "gbk", "sjis")
# Python's codec nearest each multi-byte set, which decodes at C speed the values it decodes as the server does.
_NATIVE = {"big5": "big5", "cp932": "cp932", "euckr": "euc_kr", "gb2312": "gb2312", "gbk": "gbk", "sjis": "shift_jis",
           "ujis": "euc_jp", "eucjpms": "euc_jp"}
_DOUBLE_BYTE_QUERY = """
with recursive b(n) as (select 0 union all select n + 1 from b where n < 255)
select hex(char(code)), convert(char(code using {name}) using utf8mb4) from (
  select n as code from b union all select h.n * 256 + l.n from b h, b l where h.n >= 128) codes
where char_length(char(code using {name})) = 1"""
_ASCII = re.compile(rb"[\x00-\x7f]+")

# Codec name -> CodecInfo, found by the codecs search function below. Python caches what it finds
# by name, so each server version's codecs have names of their own: "cdc_merge_server_2_dec8".
_CODECS: dict[str, codecs.CodecInfo] = {}
# Server character set -> the name of its codec, of those read from the server.
_NAMES: dict[str, str] = {}
# The server read from: its "connection", "version", the character sets it can give ("readable"),
# and the codec names' "prefix", numbered by its reading in the process.
_SERVER: dict[str, Any] = {}
_READINGS = itertools.count(1)


def load_server_charsets(connection: Any) -> None:
    """Decode by this server's mappings (a PyMySQL connection with charset utf8mb4, kept to read
    them): each character set's is read when a column of it is first decoded, once a process and
    server version, so a capture whose columns are all utf8mb4 reads none."""
    with connection.cursor() as cursor:
        cursor.execute("select version()")
        (version,) = cursor.fetchone()
        if version != _SERVER.get("version"):
            cursor.execute("select character_set_name, maxlen from information_schema.character_sets")
            charsets = {name.lower(): int(maxlen) for name, maxlen in cursor.fetchall()}
            readable = {name for name, maxlen in charsets.items() if maxlen == 1 and name != "binary"}
            readable |= set(_EUC_JP_SETS + _DOUBLE_BYTE_SETS) & set(charsets)
            _NAMES.clear()
            _SERVER.update(version=version, prefix=f"{_PREFIX}{next(_READINGS)}_",
                           readable={name for name in readable if re.fullmatch(r"[a-z0-9_]+", name)})
    _SERVER["connection"] = connection


def forget_server_charsets(connection: Any) -> None:
    """The capture closes the connection: later text decodes by Python's codecs and the codecs read so
    far (a process that captures again reads the server's mappings again), not through a closed one."""
    if _SERVER.get("connection") is connection:
        _SERVER.clear()
        _NAMES.clear()


def server_encoding(charset: str) -> str | None:
    """The codec name of a server character set by the server's own mapping, read now if it was
    not yet (None: the server gives none, or none was asked for)."""
    name = _NAMES.get(charset)
    if name is None and charset in _SERVER.get("readable", ()):
        name = _SERVER["prefix"] + charset
        with _SERVER["connection"].cursor() as cursor:
            if charset in _EUC_JP_SETS or charset in _DOUBLE_BYTE_SETS:
                cursor.execute((_EUC_JP_QUERY if charset in _EUC_JP_SETS else _DOUBLE_BYTE_QUERY).format(name=charset))
                codec = multi_byte_codec(name, {bytes.fromhex(code): text for code, text in cursor.fetchall()},
                                         _NATIVE.get(charset))
            else:
                cursor.execute("with recursive b(n) as (select 0 union all select n + 1 from b where n < 255) "
                               f"select n, convert(char(n using {charset}) using utf8mb4) from b order by n")
                codec = single_byte_codec(name, [text for _, text in cursor.fetchall()])
        _CODECS[name] = codec
        _NAMES[charset] = name
    return name


def single_byte_codec(name: str, table: list[str]) -> codecs.CodecInfo:
    """A codec of 256 bytes, each the server's text of it (one character: a string of them decodes
    fastest; a dict where one is not)."""
    decoding: str | dict[int, str] = "".join(table) if all(len(text) == 1 for text in table) else dict(enumerate(table))
    encoding: dict[int, int] = {}
    for byte, text in enumerate(table):
        if len(text) == 1:
            encoding.setdefault(ord(text), byte)
    return codecs.CodecInfo(name=name,
                            encode=lambda text, errors="strict": codecs.charmap_encode(text, errors, encoding),
                            decode=lambda data, errors="strict": codecs.charmap_decode(data, errors, decoding))


def multi_byte_codec(name: str, codes: dict[bytes, str], native: str | None = None) -> codecs.CodecInfo:
    """A codec of a multi-byte set's codes (eucjpms, ujis, big5...): each the longest code at its
    place, as the server cuts them (no code's first bytes are another's in these sets); a byte that
    begins none (which a column cannot hold) is '?', as the server converts it, or an error with
    errors='strict'. native: Python's codec of a double-byte set, used where it must decode as the
    server does (_native_check)."""
    ascii_as_is = all(codes.get(bytes([byte])) == chr(byte) for byte in range(128))
    native_check = _native_check(codes, native) if native else None
    widths = sorted({len(code) for code in codes}, reverse=True)
    encoding: dict[str, bytes] = {}
    for code, text in codes.items():
        if text != "?" or code == b"?":
            encoding.setdefault(text, code)

    def decode(data: bytes, errors: str = "strict") -> tuple[str, int]:
        data = bytes(data)
        if native and native_check is not None and native_check(data):
            try:
                return data.decode(native), len(data)
            except UnicodeDecodeError:  # a code Python's codec has no character for: the server's '?' below
                pass
        parts: list[str] = []
        at = 0
        while at < len(data):
            ascii_run = _ASCII.match(data, at) if ascii_as_is else None
            if ascii_run:
                parts.append(ascii_run.group().decode("ascii"))
                at = ascii_run.end()
                continue
            for width in widths:
                text = codes.get(data[at:at + width])
                if text is not None:
                    parts.append(text)
                    at += width
                    break
            else:
                parts.append(_undecodable(name, data, at, errors))
                at += 1
        return "".join(parts), len(data)

    def encode(text: str, errors: str = "strict") -> tuple[bytes, int]:
        parts = []
        for index, character in enumerate(text):
            code = encoding.get(character)
            if code is None:
                if errors == "strict":
                    raise UnicodeEncodeError(name, text, index, index + 1, "not in the server's character set")
                code = b"?" if errors == "replace" else b""
            parts.append(code)
        return b"".join(parts), len(text)

    return codecs.CodecInfo(name=name, encode=encode, decode=decode)


def _native_check(codes: dict[bytes, str], native: str) -> Callable[[bytes], bool]:
    """Whether Python's codec decodes a value as the server does, asked before it decodes it: Python's
    codecs of these sets take a byte for a character or the lead of two by the byte alone, so where a
    lead byte leads as many bytes in both and no code of the value has other text in Python, Python
    cuts the value at the server's places and gives the server's text, or fails where it has no
    character (then the value is decoded here). So a value must hold no byte whose length the two
    take otherwise and none of the codes Python decodes to other text."""
    def python_length(byte: int) -> int:
        try:
            bytes([byte]).decode(native)
            return 1
        except UnicodeDecodeError:
            return 2
    server_length = {code[0]: len(code) for code in codes}
    lengths = {byte: python_length(byte) for byte in range(256)}
    # A byte that begins no code of the server's is only ever a code's second in a value the server
    # wrote (a binlog's), where Python cuts as the server does before it: not a hazard.
    hazard_bytes = bytes(byte for byte, length in server_length.items() if length != lengths[byte])
    other_text = []
    for code, text in codes.items():
        if len(code) == lengths[code[0]]:
            try:
                if code.decode(native) != text:
                    other_text.append(code)
            except UnicodeDecodeError as error:
                # No character in Python: a value holding it fails there. But a code Python reads on
                # past (euc_kr's 0xA4D4 begins an eight-byte syllable) may decode otherwise in a value.
                if "incomplete" in error.reason:
                    other_text.append(code)
    single = hazard_bytes + b"".join(code for code in other_text if len(code) == 1)
    hazards = re.compile(b"[" + b"".join(re.escape(bytes([byte])) for byte in single) + b"]") if single else None
    pairs = [code for code in other_text if len(code) > 1]
    return lambda data: not (hazards is not None and hazards.search(data)) and not any(code in data for code in pairs)


def _undecodable(name: str, data: bytes, at: int, errors: str) -> str:
    if errors == "strict":
        raise UnicodeDecodeError(name, data, at, at + 1, "begins no code of the server's character set")
    return "" if errors == "ignore" else "?"


codecs.register(lambda name: _CODECS.get(name) if name.startswith(_PREFIX) else None)
