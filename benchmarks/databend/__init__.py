"""The product on the Databend target (the embedded engine behind a local endpoint): its apply against a
hand-written MERGE (databend_bench), and `dbt run` of idle mirrors (databend_idle) (BENCHMARKS.md).

    .venv/bin/python -m benchmarks.databend.databend_bench
    .venv/bin/python -m benchmarks.databend.databend_idle
"""
