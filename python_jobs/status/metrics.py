"""/metrics: a StatusSnapshot in Prometheus' text format, through prometheus_client's own
exposition (docs/observability.md lists every metric). Built at each scrape from the snapshot, so a
scrape costs no query and the runs nothing."""

from __future__ import annotations

from typing import Callable, Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from python_jobs.status.model import StatusSnapshot


def _gauge(name: str, documentation: str, labels: list[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, labels=labels)


def _counter(name: str, documentation: str, labels: list[str]) -> CounterMetricFamily:
    return CounterMetricFamily(name, documentation, labels=labels)


class SnapshotCollector:
    def __init__(self, snapshot: Callable[[], StatusSnapshot]) -> None:
        self._snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        status = self._snapshot()
        yield from _mirror_metrics(status)
        yield from _capture_metrics(status)
        yield from _landing_metrics(status)
        yield from _verify_metrics(status)
        yield from _service_metrics(status)


def _mirror_metrics(status: StatusSnapshot) -> Iterator[Metric]:
    labels = ["mirror", "source_table"]
    lag = _gauge("cdc_mirror_lag_seconds", "Age of the newest source commit the mirror's last applying run applied, at its end", labels)
    applied = _counter("cdc_mirror_events_applied", "Events applied to the mirror, by operation: rows inserted, updated and deleted", [*labels, "operation"])
    read = _counter("cdc_mirror_events_read", "Keys the mirror's runs changed or skipped: each key's newest event of a "
                    "batch, as cdc_merge_runs' events_read counts them", labels)
    skipped = _counter("cdc_mirror_events_skipped", "Events skipped as older than the mirror's row (replays, late events)", labels)
    seconds = _gauge("cdc_mirror_last_run_seconds", "Duration of the mirror's last run", labels)
    success = _gauge("cdc_mirror_last_run_success", "1 when the mirror's last run succeeded, 0 when it failed", labels)
    finished = _gauge("cdc_mirror_last_run_timestamp_seconds", "When the mirror's last run ended (Unix time)", labels)
    failures = _counter("cdc_mirror_failures", "Runs of the mirror that failed", labels)
    indexed = _gauge("cdc_mirror_key_index_keys", "Keys of the mirror and its tombstones kept in the process's key index (0: none kept)", labels)
    for mirror in status.mirrors:
        values = [mirror.mirror, mirror.source_table or ""]
        if mirror.lag_seconds is not None:
            lag.add_metric(values, mirror.lag_seconds)
        for operation, count in (("insert", mirror.inserted), ("update", mirror.updated), ("delete", mirror.deleted)):
            applied.add_metric([*values, operation], count)
        read.add_metric(values, mirror.events_read)
        skipped.add_metric(values, mirror.skipped)
        if mirror.last_run_seconds is not None:
            seconds.add_metric(values, mirror.last_run_seconds)
        if mirror.last_run_success is not None:
            success.add_metric(values, 1.0 if mirror.last_run_success else 0.0)
        if mirror.last_run_at is not None:
            finished.add_metric(values, mirror.last_run_at)
        failures.add_metric(values, mirror.failures)
        if mirror.key_index_keys is not None:
            indexed.add_metric(values, mirror.key_index_keys)
    groups = _gauge("cdc_group_cut_lag_seconds", "A consistency group's cut lag: the newest landed commit minus the cut", ["group"])
    for group, cut_lag in status.groups().items():
        if cut_lag is not None:
            groups.add_metric([group], cut_lag)
    yield from (lag, applied, read, skipped, seconds, success, finished, failures, indexed, groups)


def _capture_metrics(status: StatusSnapshot) -> Iterator[Metric]:
    labels = ["capture"]
    connected = _gauge("cdc_capture_connected", "1 while the capture streams from its source, 0 while it reconnects", labels)
    behind = _gauge("cdc_capture_behind_bytes", "How far the source's log is ahead of what the capture has written", labels)
    changes = _counter("cdc_capture_changes", "Changes the capture has written since it started", labels)
    rate = _gauge("cdc_capture_changes_per_second", "Changes a second between the capture's last two progress lines", labels)
    since = _gauge("cdc_capture_seconds_since_last_event", "Age of the newest source commit the capture wrote", labels)
    updated = _gauge("cdc_capture_status_timestamp_seconds", "When the capture last wrote its status (Unix time)", labels)
    snapshot = _gauge("cdc_capture_snapshot_running", "1 while the capture reads tables or key ranges online", labels)
    remaining = _gauge("cdc_capture_snapshot_tables_remaining", "Tables or key ranges the capture has still to read online", labels)
    snapshot_rows = _counter("cdc_capture_snapshot_rows_read", "Rows of the online snapshots in progress read so far", [*labels, "table"])
    warnings = _gauge("cdc_capture_warnings", "Conditions under which the mirrors miss changes until someone acts "
                      "(a table set UNLOGGED); the status page and cdc-status say which", labels)
    for capture in status.captures:
        values = [capture.name]
        if capture.connected is not None:
            connected.add_metric(values, 1.0 if capture.connected and capture.running is not False else 0.0)
        if capture.behind_bytes is not None:
            behind.add_metric(values, capture.behind_bytes)
        changes.add_metric(values, capture.changes)
        rate.add_metric(values, capture.changes_per_second)
        age = capture.seconds_since_last_event(status.taken_at)
        if age is not None:
            since.add_metric(values, age)
        if capture.updated_at is not None:
            updated.add_metric(values, capture.updated_at)
        snapshot.add_metric(values, 1.0 if capture.snapshots else 0.0)
        remaining.add_metric(values, len(capture.snapshots))
        warnings.add_metric(values, len(capture.warnings))
        for table in capture.snapshots:
            snapshot_rows.add_metric([capture.name, table.table], table.rows)
    yield from (connected, behind, changes, rate, since, updated, snapshot, remaining, snapshot_rows, warnings)


def _landing_metrics(status: StatusSnapshot) -> Iterator[Metric]:
    landing = status.landing
    for name, documentation, value in (
            ("cdc_landing_files", "Files landed into the raw table", landing.files),
            ("cdc_landing_events", "Events landed into the raw table, transaction end markers included", landing.events),
            ("cdc_landing_transaction_ends", "Transaction end markers among the events landed: not row changes",
             landing.transaction_ends),
            ("cdc_landing_quarantined_lines", "Lines put in the quarantine instead of the raw table", landing.quarantined),
            ("cdc_landing_bytes", "Bytes of the files landed", landing.bytes)):
        counter = _counter(name, documentation, [])
        counter.add_metric([], value)
        yield counter
    for name, documentation, gauge_value in (
            ("cdc_landing_last_seconds", "How long the last landing took", landing.last_seconds),
            ("cdc_landing_input_files", "Files in the input folder after the last landing (landed ones kept there too)",
             landing.input_files)):
        gauge = _gauge(name, documentation, [])
        if gauge_value is not None:
            gauge.add_metric([], gauge_value)
        yield gauge


def _verify_metrics(status: StatusSnapshot) -> Iterator[Metric]:
    clean = _gauge("cdc_verify_clean", "1 when cdc-verify's last check found the mirror equal to its source", ["mirror"])
    differences = _gauge("cdc_verify_differences", "Rows cdc-verify's last check found different, by kind", ["mirror", "kind"])
    for check in status.verify:
        clean.add_metric([check.mirror], 1.0 if check.clean else 0.0)
        for kind, count in (("missing", check.missing), ("extra", check.extra), ("differing", check.differing)):
            differences.add_metric([check.mirror, kind], count)
    yield from (clean, differences)


def _service_metrics(status: StatusSnapshot) -> Iterator[Metric]:
    cycles = _counter("cdc_run_cycles", "dbt invocations cdc-run made", [])
    cycles.add_metric([], status.cycles)
    failures = _counter("cdc_run_failures", "dbt invocations of cdc-run that failed", [])
    failures.add_metric([], status.cycle_failures)
    yield from (cycles, failures)
    if status.last_cycle_seconds is not None:
        last = _gauge("cdc_run_last_cycle_seconds", "Duration of cdc-run's last dbt invocation", [])
        last.add_metric([], status.last_cycle_seconds)
        yield last


def render(snapshot: Callable[[], StatusSnapshot], accept: str = "") -> tuple[bytes, str]:
    """The metrics of one snapshot, and their content type: the text format, or OpenMetrics when
    the scraper's Accept header asks for it (as prometheus_client's own endpoint answers)."""
    encoder, content_type = choose_encoder(accept)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SnapshotCollector(snapshot))
    return encoder(registry), content_type
