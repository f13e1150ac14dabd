"""cdc-verify: a mirror compared with its live source table (docs/operating.md, "Verify and repair").

    sources.py   the source side: row count, sampled rows and rows by key, rendered as the capture writes them
    compare.py   a source row against the mirror's row, value by value in the mirror column's type
    ranges.py    the range search: key ranges compared by counts and checksums, split where they differ
    row_hash.py  a row's checksum as each engine (PostgreSQL, MySQL, Spark, Databend) renders it
    source_ranges.py, mirror_ranges.py   each side's range queries
    check.py     one mirror's check, by ranges or by a sample; the differences; its cdc_merge_verify row
    cli.py       the cdc-verify command (a dbt run-operation of macros/verify.sql)
"""
