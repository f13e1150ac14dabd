"""Text in the character sets Python decodes otherwise than the server, or not at all (dec8, hp8,
eucjpms's NEC and IBM characters, ujis, every single-byte set's 256 bytes, every code of big5, cp932,
euckr, gb2312, gbk and sjis: mysql_server_charsets.py), captured from a real MariaDB through the
snapshot and through the binlog (the fast row decoder's tables and the library's, ENUM and SET members
too), each value exactly the text the server's own CONVERT(... USING utf8mb4) gives."""

from __future__ import annotations

import json

from test_capture_faults import mariadb  # noqa: F401 - a fixture

from harness.mariadb_server import create_mariadb_capture_user
from python_jobs.capture import mysql as capture_mysql

STREAMED = 100  # the binlog's copy of row n is row n + STREAMED
EVERY_BYTE = "x'" + bytes(range(256)).hex() + "'"
# NEC specials, NEC-selected IBM extensions (row 0xAD and 0xF9-0xFC), IBM extensions (0x8F 0xF3-0xF4),
# JIS X 0212 (0x8F), half-width kana (0x8E), a backslash and eucJP-ms's '～'.
EUCJPMS_TEXT = "①⑳Ⅰⅹ㈱№∵纊褜鍈銈蓜髙ⅰ￢ｱｶﾟ丂\\～"
# ujis: the server's 0xA1C0 is a backslash (Python's euc_jp: '＼'), its user-defined 0xF5A1 U+E000 (an error
# in Python).
UJIS_BYTES = "x'a1c0f5a1c6fccbdc8eb1'"
EUC_JP_COLUMNS = ["e varchar(100) character set eucjpms", "everything mediumtext character set eucjpms",
                  "u varchar(100) character set ujis", "u_everything mediumtext character set ujis"]

# Codes of the double-byte sets that Python decodes otherwise than the server or not at all, and their server
# text: big5's seven U+FFFD (Python: '＼', '╴', '￣', 'ˍ', '十', '卅', '／') and 0xF9D6-0xF9DC; euckr's
# cp949 hangul; sjis's backslash (Python: '＼'); in each a code the server has no character for ('?').
DOUBLE_BYTE_TEXTS = {
    "big5": ("a240a15aa1c3a1c5a2cca2cea1fef9d6f9d7f9d8f9d9f9daf9dbf9dca3c0", "\ufffd" * 7 + "碁銹裏墻恒粧嫺?"),
    "euckr": ("8141824183418441c5a0a5ab", "갂괔귺껦힋?"),
    "sjis": ("815f8540", "\\?"),
    "cp932": ("8240", "?"),
    "gb2312": ("a2a1", "?"),
    "gbk": ("a140", "?"),
}


def _every_double_byte_code(charset: str) -> str:
    """A SELECT of the text of every two bytes led by 0x80-0xFF that the server keeps in `charset`."""
    return ("with recursive b(n) as (select 0 union all select n + 1 from b where n < 255) "
            f"select group_concat(char(h.n * 256 + l.n using {charset}) order by h.n, l.n separator '') "
            f"from b h, b l where h.n >= 128 and char(h.n * 256 + l.n using {charset}) is not null")


def _euc_jp_codes() -> bytes:
    """Every well-formed eucjpms or ujis code, assigned or not (the server keeps each of them)."""
    trail = range(0xA1, 0xFF)
    return (bytes(range(1, 0x80)) + b"".join(bytes([0x8E, kana]) for kana in range(0xA1, 0xE0))
            + b"".join(bytes([lead, byte]) for lead in trail for byte in trail)
            + b"".join(bytes([0x8F, lead, byte]) for lead in trail for byte in trail))


def _single_byte_charsets(cursor) -> list[str]:
    cursor.execute("select character_set_name from information_schema.character_sets "
                   "where maxlen = 1 and character_set_name <> 'binary' order by 1")
    return [name for (name,) in cursor.fetchall()]


def _captured_rows(out) -> dict[str, dict[int, dict]]:
    """Each table's rows as the capture wrote them, the snapshot's first, by id."""
    rows: dict[str, dict[int, dict]] = {}
    for path in sorted(out.glob("*.json"), key=lambda path: ("snapshot" not in path.name, path.name)):
        for line in path.read_bytes().splitlines():  # bytes: a text's U+0085 or U+2028 splits no line
            event = json.loads(line)
            if "op" not in event:
                continue  # a transaction's end
            table = rows.setdefault(event["source"]["table"], {})
            if event.get("after"):
                table[event["after"]["id"]] = event["after"]
            elif event.get("before"):
                del table[event["before"]["id"]]
    return rows


def _server_text(cursor, table: str, columns: list[str]) -> dict[int, dict]:
    cursor.execute(f"select id, {', '.join(f'convert({name} using utf8mb4)' for name in columns)} from shop.{table}")
    return {row[0]: dict(zip(columns, row[1:])) for row in cursor.fetchall()}


def test_text_of_every_character_set_is_the_servers_both_ways(mariadb, tmp_path):  # noqa: F811
    connection = mariadb.connect(autocommit=True)
    with connection.cursor() as cursor:
        cursor.execute("set session sql_mode = ''")  # a byte a set has no character for is kept, as the server keeps it
        single = _single_byte_charsets(cursor)
        assert {"dec8", "hp8", "swe7", "koi8u", "cp866", "greek"} <= set(single)
        cursor.execute("create database shop")
        # Only text columns: the fast row decoder's (mysql_rows.py).
        texts = [f"s_{name}" for name in single] + ["e", "everything", "u", "u_everything"]
        cursor.execute("create table shop.texts (id int primary key, "
                       + ", ".join(f"s_{name} varchar(256) character set {name}" for name in single)
                       + ", " + ", ".join(EUC_JP_COLUMNS) + ")")
        # ENUM and SET: the library's decoding, with the members the table map event carries.
        members = ["en", "st", "ee", "es", "d", "h", "sr", "ke", "bs"]
        cursor.execute("create table shop.members (id int primary key, "
                       "en enum('Å','é','ÿ','x') character set dec8, st set('é','Õ','£','x') character set hp8, "
                       "ee enum('①','Ⅰ','ｱ','髙') character set eucjpms, es set('㈱','ⅰ','x') character set eucjpms, "
                       "d varchar(256) character set dec8, h varchar(256) character set hp8, sr set('Read','Write'), "
                       "ke enum('갂','힋','x') character set euckr, bs set('碁','嫺','x') character set big5)")
        # The double-byte sets: their codes Python got wrong, and every code.
        wide = [name for charset in DOUBLE_BYTE_TEXTS for name in (charset, f"every_{charset}")]
        cursor.execute("create table shop.wide (id int primary key, " + ", ".join(
            f"{charset} varchar(100) character set {charset}, every_{charset} mediumtext character set {charset}"
            for charset in DOUBLE_BYTE_TEXTS) + ")")
        cursor.execute("insert into shop.wide (id, " + ", ".join(DOUBLE_BYTE_TEXTS) + ") values (1, "
                       + ", ".join(f"x'{code}'" for code, _ in DOUBLE_BYTE_TEXTS.values()) + ")")
        for charset in DOUBLE_BYTE_TEXTS:
            cursor.execute(f"update shop.wide set every_{charset} = ({_every_double_byte_code(charset)})")
        every_code = "x'" + _euc_jp_codes().hex() + "'"
        cursor.execute(f"insert into shop.texts values (1, {', '.join([EVERY_BYTE] * len(single))}, %s, {every_code}, "
                       f"{UJIS_BYTES}, {every_code})", (EUCJPMS_TEXT,))
        cursor.execute("insert into shop.texts (id, e) values (2, %s)", (EUCJPMS_TEXT[::-1],))
        cursor.execute(f"insert into shop.members values (1, 'ÿ', 'é,Õ,£', '①', '㈱,ⅰ', {EVERY_BYTE}, {EVERY_BYTE}, "
                       "'Write,Read', '갂', '嫺,碁'), (2, 'Å', '', 'ｱ', 'x', 'Œ', 'Š', 'Write', '힋', 'x'), "
                       "(3, 'x', 'x', '髙', '', '', '', '', 'x', '')")
        source = {"texts": _server_text(cursor, "texts", texts), "members": _server_text(cursor, "members", members),
                  "wide": _server_text(cursor, "wide", wide)}
        # The server keeps what the test means to capture: all 256 bytes, and nearly every eucjpms code.
        assert len(source["texts"][1]["s_dec8"]) == len(source["members"][1]["h"]) == 256
        assert source["texts"][1]["e"] == EUCJPMS_TEXT and len(source["texts"][1]["everything"]) > 17_000
        assert source["texts"][1]["u"] == "\\\ue000日本ｱ" and len(source["texts"][1]["u_everything"]) > 17_000
        assert source["members"][1]["st"] == "é,Õ,£" and source["members"][1]["ee"] == "①"
        assert source["members"][1]["sr"] == "Read,Write"  # members in their own case, in the definition's order
        assert source["members"][1]["ke"] == "갂" and source["members"][1]["bs"] == "碁,嫺"
        for charset, (_, text) in DOUBLE_BYTE_TEXTS.items():
            assert source["wide"][1][charset] == text, charset
            assert len(source["wide"][1][f"every_{charset}"]) > 8_000, charset

    user, password = create_mariadb_capture_user(mariadb, ["shop"])
    config = capture_mysql.CaptureConfig(host="127.0.0.1", port=mariadb.port, user=user, password=password,
                                         tables=("shop.texts", "shop.members", "shop.wide"), out=tmp_path / "out",
                                         state=tmp_path / "capture-state.json")
    capture_mysql.run(config)  # the snapshot
    with connection.cursor() as cursor:
        # Copies written, then moved to their keys: rows, and the before and after images of updates.
        for table, columns in (("texts", texts), ("members", members), ("wide", wide)):
            cursor.execute(f"insert into shop.{table} select id + {2 * STREAMED}, {', '.join(columns)} from shop.{table}")
            cursor.execute(f"update shop.{table} set id = id - {STREAMED} where id > {2 * STREAMED}")
    capture_mysql.run(config)  # the binlog
    captured = _captured_rows(tmp_path / "out")
    for table, rows in source.items():
        assert sorted(captured[table]) == sorted([*rows, *(row + STREAMED for row in rows)]), table
        for row_id, values in rows.items():
            for copy in (row_id, row_id + STREAMED):  # the snapshot's, the binlog's
                for name, text in values.items():
                    assert captured[table][copy][name] == text, f"{table} row {copy} column {name}"
    connection.close()
