"""cdc-verify: a mirror compared with its live source table (docs/operating.md, "Verify").

    sources.py   the source side: row count, sampled rows and rows by key, rendered as the capture writes them
    compare.py   a source row against the mirror's row, value by value in the mirror column's type
    check.py     one mirror's check: counts, a sample from each side, the differences
    cli.py       the cdc-verify command (a dbt run-operation of macros/verify.sql)
"""
