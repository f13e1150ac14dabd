"""cdc-verify on a 10M-row mirror against its PostgreSQL source (verify), and beside a pipeline under a live
load, where every difference it reports is a false one (verify_under_load) (BENCHMARKS.md).

    .venv/bin/python -m benchmarks.verify.verify
    .venv/bin/python -m benchmarks.verify.verify_under_load
"""
