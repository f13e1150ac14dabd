"""The product applying a batch to a mirror against a hand-written MERGE and a key-column scan, dbt's own cost
on idle mirrors, and the landing of Debezium files, in one process (BENCHMARKS.md: apply, idle, landing).

    .venv/bin/python -m benchmarks.apply.run --quick     # smoke run of every suite, about 2 minutes
    .venv/bin/python -m benchmarks.apply.plot            # benchmarks/results/apply_time.png from apply.json
"""
