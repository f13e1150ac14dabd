"""The key index's map in primitive arrays (jvm/iceberg/cdc_merge/iceberg/KeyRows.java) answers as
a map of objects does: random puts, removes and look-ups against a Python dict, through its
rebuilds, with keys that share a hash, differ only in a character's width, are empty or null."""

from __future__ import annotations

import random

from py4j.java_gateway import get_field

from dbt.adapters.cdc_spark.iceberg_jvm import jvm_class

KEY_ROWS_CLASS = "cdc_merge.iceberg.KeyRows"

# Same String.hashCode in Java ("Aa" and "BB" collide, and so do their concatenations; "A\u2000"
# and "\u0141\u0100" too, with the same low byte in each character), one character wider than a
# byte, one that fits a byte but not ASCII, surrogate pairs, empty.
CHOSEN_KEYS = ["Aa", "BB", "AaAa", "BBBB", "AaBB", "BBAa", "A\u2000", "\u0141\u0100", "\u00e9t\u00e9", "\u0113t\u0113",
               "\u00ff", "\u0100", "\U0001f600x", "x\U0001f600", "", "0", "00", "k\x00", "k"]


def row_of(stored) -> tuple | None:
    return None if stored is None else tuple(get_field(stored, name) for name in ("seq", "fileHash", "pos"))


def random_key(chance: random.Random) -> str:
    if chance.random() < 0.2:
        return chance.choice(CHOSEN_KEYS)
    alphabet = "abc123" if chance.random() < 0.7 else "a\u00e9\u4e2d\U0001f600"
    return "".join(chance.choice(alphabet) for _ in range(chance.randint(1, 6)))


def test_the_map_answers_as_a_dict_through_its_rebuilds(spark):
    key_rows = jvm_class(spark, KEY_ROWS_CLASS)(8)
    expected: dict = {}
    chance = random.Random(20261203)
    for step in range(6000):
        key = None if chance.random() < 0.01 else random_key(chance)
        roll = chance.random()
        if roll < 0.55:
            seq = None if chance.random() < 0.1 else f"{step:020d}" + chance.choice(["", "\u00e9", "\u4e2d"])
            row = (seq, chance.getrandbits(63) - (1 << 62), step)
            assert key_rows.put(key, *row) == (key in expected), (step, key)
            expected[key] = row
        elif roll < 0.8:
            assert key_rows.remove(key) == (key in expected), (step, key)
            expected.pop(key, None)
        else:
            assert row_of(key_rows.get(key)) == expected.get(key), (step, key)
        assert key_rows.size() == len(expected), step
    assert len(expected) > 300
    for key, row in expected.items():
        assert row_of(key_rows.get(key)) == row, key
    for key in CHOSEN_KEYS + [None, "absent", "\u00e9", "Ab"]:
        assert row_of(key_rows.get(key)) == expected.get(key), key


def test_keys_of_one_hash_and_of_either_width_stay_apart_after_removals(spark):
    key_rows = jvm_class(spark, KEY_ROWS_CLASS)(1000)
    for number, key in enumerate(CHOSEN_KEYS):
        assert not key_rows.put(key, f"seq {key}", number, number)
    for key in ["AaAa", "BB", "\u0100", ""]:
        assert key_rows.remove(key)
        assert not key_rows.remove(key)
    kept = [key for key in CHOSEN_KEYS if key not in ("AaAa", "BB", "\u0100", "")]
    assert key_rows.size() == len(kept)
    for key in kept:
        assert row_of(key_rows.get(key)) == (f"seq {key}", CHOSEN_KEYS.index(key), CHOSEN_KEYS.index(key))
    for key in ["AaAa", "BB", "\u0100", ""]:
        assert key_rows.get(key) is None
    assert not key_rows.put("BB", None, -1, 2**40)
    assert row_of(key_rows.get("BB")) == (None, -1, 2**40)
