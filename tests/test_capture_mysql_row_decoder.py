"""mysql_row_decoder's unrolled functions against mysql_row_images.decode_each, the column-by-column
loop: the same images, key for key and value for value (with their types), for random columns of
every reading (integers and doubles unpacked together, VARCHAR/TEXT lengths of 1 to 4 bytes in
several character sets, columns read through their readers) and random NULLs. Their events on a
real server: tests/test_capture_mysql_row_images.py."""

from __future__ import annotations

import random
import struct

from test_capture_faults import mariadb  # noqa: F401 - a fixture
from test_capture_mysql_row_images import _events
from test_capture_mysql_rows import COLUMNS

from python_jobs.capture import mysql_rows
from python_jobs.capture.mysql_columns import read_table_info
from python_jobs.capture.mysql_events import float32_value
from python_jobs.capture.mysql_row_decoder import decoder
from python_jobs.capture.mysql_row_images import _then, decimal_text, decode_each, image_with_nulls

_FIXED = ["<b", "<B", "<h", "<H", "<i", "<I", "<q", "<Q", "<d"]
_TEXTS = ["utf8mb4", "latin1", "ascii"]


def _column(r: random.Random, index: int):
    """(name, reader, maker of a value's bytes) of a random column."""
    kind = r.choice(["fixed", "fixed", "fixed", "text", "text", "decimal", "float", "int24"])
    name = r.choice([f"c{index}", f"c'{index}\" é", f"n{{{index}}}"])
    if kind == "fixed":
        layout = r.choice(_FIXED)
        size = struct.calcsize(layout)
        return name, mysql_rows._fixed(layout, size), lambda: r.randbytes(size)
    if kind == "text":
        length_size, charset = r.choice([1, 2, 2, 3, 4]), r.choice(_TEXTS)
        reader = mysql_rows._text(length_size, charset, r.random() < 0.2)
        encoding = "utf-8" if charset == "utf8mb4" else charset

        def text() -> bytes:
            value = "".join(r.choice("az é東🚀\"\\\n%") for _ in range(r.choice([0, 1, 5, 300])))
            data = value.encode(encoding, "ignore")[:255 if length_size == 1 else 70000]
            data = data.decode(encoding, "ignore").encode(encoding)
            return len(data).to_bytes(length_size, "little") + data

        return name, reader, text
    if kind == "decimal":
        precision = r.randint(1, 65)
        decimals = r.randint(0, min(precision, 30))
        _, size = mysql_rows.decimal_layout(precision, decimals)
        return name, decimal_text(precision, decimals), lambda: r.randbytes(size)
    if kind == "float":
        return name, _then(mysql_rows._fixed("<f", 4), float32_value), lambda: struct.pack("<f", r.uniform(-1e6, 1e6))
    return name, mysql_rows._int24(r.random() < 0.5), lambda: r.randbytes(3)


def _typed(images):
    return [[(name, type(value).__name__, repr(value)) for name, value in image.items()] for image in images]


def test_unrolled_images_are_the_column_loops():
    r = random.Random(20261201)
    shapes = set()
    for _ in range(300):
        columns = [_column(r, index) for index in range(r.randint(1, 20))]
        plan = [(name, reader) for name, reader, _ in columns]
        body = bytearray()
        for _ in range(r.randint(0, 30)):
            nulls = [r.random() < (0.3 if r.random() < 0.3 else 0.0) for _ in columns]
            bitmap = bytearray((len(columns) + 7) // 8)
            if r.random() < 0.7:  # the bits past the last column set, as MariaDB writes them
                bitmap[-1] |= (0xFF << (len(columns) % 8 or 8)) & 0xFF
            for index, null in enumerate(nulls):
                bitmap[index >> 3] |= null << (index & 7)
            body += bitmap + b"".join(make() for (_, _, make), null in zip(columns, nulls) if not null)
        body = bytes(body)

        expected = decode_each(body, plan)
        assert _typed(decoder(plan, image_with_nulls)(body)) == _typed(expected)
        shapes.add(tuple(getattr(reader, "inline", ("call",))[0] for _, reader in plan))
    assert len(shapes) > 250


def test_neighbouring_integers_and_doubles_are_unpacked_together():
    plan = [("a", mysql_rows._fixed("<q", 8)), ("b", mysql_rows._fixed("<H", 2)), ("c", mysql_rows._fixed("<d", 8)),
            ("t", mysql_rows._text(1, "utf8mb4", False)), ("d", mysql_rows._fixed("<b", 1))]
    row = b"\0" + struct.pack("<qHd", -5, 65535, 0.1) + b"\x03abc" + struct.pack("<b", -1)
    null_b = bytes([0b10]) + struct.pack("<qd", 7, 2.5) + b"\x00" + struct.pack("<b", 1)
    images = decoder(plan, image_with_nulls)(row + null_b + row)
    assert images == decode_each(row + null_b + row, plan) == [
        {"a": -5, "b": 65535, "c": 0.1, "t": "abc", "d": -1}, {"a": 7, "b": None, "c": 2.5, "t": "", "d": 1},
        {"a": -5, "b": 65535, "c": 0.1, "t": "abc", "d": -1}]


def test_images_without_nulls_on_a_real_server_are_the_general_paths_byte_for_byte(mariadb):
    """Every column of every type the one-pass path reads, no NULL: each image through the unrolled code."""
    r = random.Random(20261202)
    connection = mariadb.connect()
    names = [name for name, _, _ in COLUMNS[1:]]
    with connection.cursor() as cursor:
        cursor.execute("create database shop")
        cursor.execute("create table shop.wide (" + ", ".join(f"{name} {kind} not null" for name, kind, _ in COLUMNS)
                       .replace("id int not null", "id int primary key") + ")")
        cursor.execute("create table shop.other (id int primary key)")
        insert = f"insert into shop.wide (id, {', '.join(names)}) values ({', '.join(['%s'] * (len(names) + 1))})"
        cursor.execute("set session sql_mode = ''")  # the zero dates
        for key in range(60):
            cursor.execute(insert, [key, *(make(r) for _, _, make in COLUMNS[1:])])
        for key in r.sample(range(60), 20):
            name, _, make = r.choice(COLUMNS[1:])
            cursor.execute(f"update shop.wide set {name} = %s where id = %s", (make(r), key))
        cursor.execute("update shop.wide set id = id + 1000 where id < 5")
        cursor.execute("delete from shop.wide where id between 10 and 14")
    connection.commit()
    tables = {name: read_table_info(connection, f"shop.{name}") for name in ("wide", "other")}

    general, _ = _events(mariadb, tables, one_pass=False)
    one_pass, taken = _events(mariadb, tables, one_pass=True)

    assert one_pass == general and set(taken) == {"wide"} and len(taken) > 20
    written = b"\n".join(general)
    assert b'"v":"quote \\" \\\\"' in written and b":null" in written  # zero dates: null, not a NULL bitmap
