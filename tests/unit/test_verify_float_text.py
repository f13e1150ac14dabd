"""The exact text of a double in cdc-verify's checksums (python_jobs/verify/row_hash.float_sql): its
arithmetic, done here as the engines do it, gives back every double, so no two are written alike."""

from __future__ import annotations

import math
import random
import struct
from fractions import Fraction

from python_jobs.verify.row_hash import value_sql


def float_text(x: float, nudge: int = 0) -> str:
    """float_sql's steps in Python; nudge: an engine whose ln picks the power of two next to it."""
    if x == 0:
        return "0"
    power = math.floor(math.log(abs(x)) / math.log(2) + 0.5) + nudge
    half = math.floor((54 - power) / 2)
    scaled = x * 2.0 ** half * 2.0 ** (54 - power - half)
    assert scaled == int(scaled) and abs(scaled) < 2 ** 56, (x, scaled)
    return f"{power}:{int(scaled)}"


def test_every_double_is_given_back_by_its_text():
    generator = random.Random(7)
    doubles = [struct.unpack("<d", struct.pack("<Q", generator.getrandbits(64)))[0] for _ in range(2000)]
    doubles += [5e-324, -5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 1.0000001, 1.0000004, 1e35, 2e35, 0.1]
    for x in (value for value in doubles if math.isfinite(value)):
        for nudge in (-1, 0, 1):
            power, scaled = float_text(x, nudge).split(":")
            assert Fraction(int(scaled)) * Fraction(2) ** (int(power) - 54) == Fraction(x)
    assert len({float_text(x) for x in (1.0000001, 1.0000004, 1e35, 2e35)}) == 4


def test_no_engine_caps_floats_or_rounds_them_to_decimals():
    for engine in ("postgres", "mysql", "spark", "databend"):
        for family in ("float", "double"):
            rendered = value_sql(engine, "c", family)
            assert "1e31" not in rendered and "decimal" not in rendered and ", 6)" not in rendered, (engine, rendered)
