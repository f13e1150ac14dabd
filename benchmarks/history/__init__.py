"""What a cdc_changes() range of one hour costs against a full scan of a larger raw log (docs/history.md).

    .venv/bin/python -m benchmarks.history.changes_range [--hours 48] [--events-per-hour 20000]
"""
