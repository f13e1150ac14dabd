"""The `cluster` target (cdc-cluster: Thrift server, two workers, JDBC catalog) beside the embedded `local`
target: the apply of one batch and the landing of Debezium files (BENCHMARKS.md: cluster). cluster_fill.py
is the bulk data, run in-process or spark-submitted to the cluster.

    .venv/bin/python -m benchmarks.cluster.cluster --scenarios 1000000:100000 --landing-events 200000   # short
"""
