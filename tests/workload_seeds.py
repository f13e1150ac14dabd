"""The seeds a random workload test runs, from CDC_RANDOM_WORKLOAD_SEEDS: a list, a range or both
("1,2", "1-20", "3,10-12"), read alike by the PostgreSQL and the MariaDB workloads."""

from __future__ import annotations

import os


def workload_seeds(default: str = "1,2") -> list[int]:
    text = os.environ.get("CDC_RANDOM_WORKLOAD_SEEDS", default)
    seeds: list[int] = []
    for part in (part.strip() for part in text.split(",") if part.strip()):
        low, _, high = part.partition("-")
        try:
            seeds.extend(range(int(low), int(high or low) + 1))
        except ValueError:
            raise ValueError(f"CDC_RANDOM_WORKLOAD_SEEDS={text!r}: {part!r} is not a seed or a range of seeds "
                             "(write e.g. 1,2 or 1-20)") from None
    return seeds
