"""The captures on real PostgreSQL and MariaDB servers: throughput beside the servers' own decoding
(capture_throughput), capture + landing + apply as one service under a steady load (pipeline_lag), and
online snapshots (online_snapshot, online_snapshot_mariadb) (BENCHMARKS.md).

    .venv/bin/python -m benchmarks.capture.capture_throughput
    .venv/bin/python -m benchmarks.capture.pipeline_lag
    .venv/bin/python -m benchmarks.capture.online_snapshot
    .venv/bin/python -m benchmarks.capture.online_snapshot_mariadb
"""
