"""Fuzzing the parsers with mutated fixture lines: nothing crashes, nothing is lost, and
every rejection has a reason that is not a parser bug."""

from __future__ import annotations

import random

from conftest import FIXTURES
from python_jobs.formats import detect as formats
from python_jobs.formats.records import INTERNAL_ERROR, STATUS_EVENT, STATUS_REJECTED

SEED_FILES = [
    "flink/debezium-data-schema-exclude.txt",
    "flink/debezium-data-schema-include.txt",
    "flink/debezium-postgres-data-schema-exclude.txt",
    "flink/debezium-postgres-data-replica-identity.txt",
    "flink/canal-data.txt",
    "flink/canal-data-filter-table.txt",
    "flink/maxwell-data.txt",
    "flink/ogg-data.txt",
]
KEYS = {"inventory.products": ["id"]}
REPLACEMENTS = ['"x"', "null", "-1", "1e400", "[]", "{}", "true", '"\\ud800"', "123456789012345678901234567890"]


def seed_lines() -> list[str]:
    lines = []
    for name in SEED_FILES:
        lines += [line for line in (FIXTURES / name).read_text().splitlines() if line.strip()]
    return lines


def mutate(line: str, rng: random.Random) -> str:
    kind = rng.randrange(6)
    if kind == 0:  # truncated
        return line[: rng.randrange(len(line))]
    if kind == 1:  # garbage bytes spliced in
        at = rng.randrange(len(line))
        junk = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 8))).decode("latin-1")
        return line[:at] + junk.replace("\n", " ") + line[at:]
    if kind == 2:  # a value of the wrong type
        colons = [i for i, c in enumerate(line) if c == ":"]
        at = rng.choice(colons) + 1
        end = min((line.find(c, at) for c in ",}" if line.find(c, at) > 0), default=len(line))
        return line[:at] + rng.choice(REPLACEMENTS) + line[end:]
    if kind == 3:  # a field removed
        quotes = [i for i, c in enumerate(line) if c == '"']
        start = rng.choice(quotes[::2])
        end = line.find(",", start)
        return line[:start] + line[end + 1 :] if end > 0 else line[:start]
    if kind == 4:  # characters deleted
        at = rng.randrange(len(line))
        return line[:at] + line[at + rng.randrange(1, 5) :]
    return line  # unchanged: still has to land


def test_ten_thousand_mutated_lines_never_crash_and_every_line_is_accounted_for():
    rng = random.Random(20261122)
    seeds = seed_lines()
    lines = [mutate(rng.choice(seeds), rng) for _ in range(12_000)]
    statuses = {}
    for line in lines:
        parsed = formats.parse_line(line, KEYS)
        assert parsed, line
        if len(parsed) > 1:
            assert all(p.status == STATUS_EVENT for p in parsed)
        for p in parsed:
            # Spark's Arrow transfer fails the whole batch on a string that is not UTF-8.
            for value in (p.table_name, p.key, p.raw_data, p.before_data, p.seq, p.reason):
                assert value is None or value.encode("utf-8"), (line, p)
            assert p.source_ts_ms is None or 0 < p.source_ts_ms < 2**63, (line, p)
            if p.status == STATUS_REJECTED:
                assert p.reason and not p.reason.startswith(INTERNAL_ERROR), (line, p.reason)
            if p.status == STATUS_EVENT:
                assert p.table_name and p.key and p.seq and p.action, (line, p)
        statuses[parsed[0].status] = statuses.get(parsed[0].status, 0) + 1
    assert sum(statuses.values()) == len(lines)
    # The mutations must exercise both outcomes, or the test proves nothing.
    assert statuses.get(STATUS_EVENT, 0) > 2000 and statuses.get(STATUS_REJECTED, 0) > 2000, statuses


def test_landing_mutated_files_accounts_for_every_line(dbt_project, spark):
    rng = random.Random(7)
    seeds = seed_lines()
    lines = [mutate(rng.choice(seeds), rng) for _ in range(10_000)]
    for part in range(4):
        chunk = lines[part * 2500 : (part + 1) * 2500]
        (dbt_project.inbox / f"fuzz-{part}.json").write_text("\n".join(chunk) + "\n", encoding="utf-8")

    summary = dbt_project.land(KEYS, format="auto")

    landed_lines = spark.sql(
        f"select count(distinct landed_file, landed_line) from {dbt_project.raw_schema}.raw_events"
    ).first()[0]
    quarantined = spark.sql(f"select count(*) from {dbt_project.raw_schema}.quarantine").first()[0]
    # Each file ends with a newline, which splits into one trailing empty line.
    other = summary.counts["blank"] + summary.counts["tombstone"] - 4
    assert landed_lines + quarantined + other == len(lines)
    assert quarantined == summary.counts["rejected"] + summary.counts["ignored"] > 1000
    reasons = spark.sql(
        f"select count(*) from {dbt_project.raw_schema}.quarantine where reason is null or reason like 'parser error%'"
    ).first()[0]
    assert reasons == 0
