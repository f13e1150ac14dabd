"""The pipeline's status (python_jobs/status/): the registry's figures, /metrics as Prometheus' text
format reads them back, the page's content, secrets kept out, the capture's and verify's files."""

from __future__ import annotations

import json
import logging
import time

from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics_families
from prometheus_client.parser import text_string_to_metric_families

from python_jobs.capture.output import FollowProgress, lost_connection_status, stopped_status, write_status
from python_jobs.capture.postgres_persistence import unlogged_warnings
from python_jobs.capture.snapshot_pages import Pages
from python_jobs.capture.snapshot_requests import refuse, taken_requests, write_request
from python_jobs.status import metrics, page
from python_jobs.status.model import CaptureStatus, RedactingStream, VerifyStatus, redact
from python_jobs.status.registry import Registry, relation_name
from python_jobs.status.status_files import capture_name, read_capture_status, read_verify_report, state_file
from python_jobs.status.text import render_text


def run_row(inserted=5, updated=3, deleted=2, lag=5.0, **more):
    finished = time.time()
    stamp = (lambda epoch: time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(epoch)))
    return {"source_table": "shop.orders", "finished_at": stamp(finished), "newest_source_ts": stamp(finished - lag),
            "run_seconds": 1.25, "events_read": inserted + updated + deleted, "inserted": inserted, "updated": updated,
            "deleted": deleted, "skipped": 1, **more}


def registry_with_runs() -> Registry:
    registry = Registry()
    registry.enabled = True
    registry.observe_run_row("`shop`.`orders`", run_row())
    registry.observe_run_row("shop.orders", run_row(inserted=1, updated=0, deleted=0, key_index_keys=1204))
    registry.observe_run_row("shop.lines", run_row(consistency_group="shop", cut_lag_seconds=2.5))
    registry.observe_cycle(True, 3.0)
    registry.observe_cycle(False, 4.0, [("shop.customers", "Compilation Error: set unique_key on the model", "public.customers")])
    registry.observe_landing(files=3, events=300, quarantined=2, size_bytes=4096, seconds=0.75, input_files=12,
                             transaction_ends=40)
    return registry


def samples(text: str) -> dict:
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def test_runs_add_up_per_mirror_and_operation_and_read_back_through_the_prometheus_parser():
    registry = registry_with_runs()
    text, content_type = metrics.render(lambda: registry.snapshot())
    assert content_type.startswith("text/plain; version=0.0.4")
    found = samples(text.decode())
    orders = (("mirror", "shop.orders"), ("source_table", "shop.orders"))
    assert found[("cdc_mirror_events_applied_total", (*orders[:1], ("operation", "insert"), orders[1]))] == 6
    assert found[("cdc_mirror_events_read_total", orders)] == 11
    assert abs(found[("cdc_mirror_lag_seconds", orders)] - 5.0) < 1.5
    # A mirror whose first run failed: its source table from the model's config, as it has no runs row.
    assert found[("cdc_mirror_last_run_success", (("mirror", "shop.customers"), ("source_table", "public.customers")))] == 0
    assert found[("cdc_mirror_failures_total", (("mirror", "shop.customers"), ("source_table", "public.customers")))] == 1
    assert found[("cdc_group_cut_lag_seconds", (("group", "shop"),))] == 2.5
    assert found[("cdc_mirror_key_index_keys", orders)] == 1204
    assert not any(name == "cdc_mirror_key_index_keys" and ("mirror", "shop.lines") in labels for name, labels in found)
    assert found[("cdc_landing_events_total", ())] == 300 and found[("cdc_landing_bytes_total", ())] == 4096
    assert found[("cdc_landing_transaction_ends_total", ())] == 40
    assert (found[("cdc_landing_last_seconds", ())], found[("cdc_landing_input_files", ())]) == (0.75, 12)
    assert (found[("cdc_run_cycles_total", ())], found[("cdc_run_failures_total", ())]) == (2, 1)
    # A scraper that asks for OpenMetrics gets it, and its stricter parser reads every family.
    text, content_type = metrics.render(lambda: registry.snapshot(), "application/openmetrics-text; version=1.0.0")
    assert content_type.startswith("application/openmetrics-text")
    families = {family.name: family for family in openmetrics_families(text.decode())}
    assert families["cdc_mirror_events_applied"].type == "counter" and len(families) >= 20


def test_a_group_whose_mirror_fails_shows_its_cut_falling_behind():
    """The others' runs record a cut lag of 0 (nothing of theirs waits), but no cut is written while one
    mirror of the group fails: the group's lag grows from that mirror's last successful run."""
    registry = Registry()
    registry.enabled = True
    registry.observe_run_row("shop.orders", run_row(consistency_group="shop", cut_lag_seconds=0.0))
    registry.observe_run_row("shop.order_items", run_row(lag=4.0, consistency_group="shop", cut_lag_seconds=0.0))
    registry.observe_cycle(True, 1.0)
    assert registry.snapshot().groups() == {"shop": 0.0}
    registry.mirrors["shop.order_items"].last_run_at -= 120  # its last success, two minutes ago
    registry.observe_cycle(False, 1.0, [("shop.order_items", "Runtime Error: decimal(12,1) cannot hold 2.25")])
    snapshot = registry.snapshot()
    lag = snapshot.groups()["shop"]
    assert 123.0 <= lag < 130.0
    assert f"  consistency group shop: cut lag {lag:,.1f} s" in render_text(snapshot, 1)
    assert samples(metrics.render(lambda: snapshot)[0].decode())[("cdc_group_cut_lag_seconds", (("group", "shop"),))] == lag


def test_nothing_is_recorded_until_a_status_endpoint_enables_it():
    registry = Registry()
    registry.observe_run_row("shop.orders", run_row())
    registry.observe_cycle(True, 1.0)
    assert registry.snapshot().mirrors == [] and registry.snapshot().cycles == 0


def test_the_page_shows_mirrors_failures_with_what_to_do_captures_and_checks_escaped():
    registry = registry_with_runs()
    capture = CaptureStatus("cdc-capture-postgres data/state.json", connected=False, lost="server closed the connection",
                            running=True, position="0/1A2B", changes=10)
    verify = [VerifyStatus("shop.orders", "2026-11-28 10:00:00.874631", False, 1, 0, 2)]
    registry.observe_cycle(False, 1.0, [("shop.<script>", "boom <b>")])
    html = page.render(registry.snapshot([capture], verify))
    assert "shop.orders" in html and "shop.customers" in html
    assert "set unique_key on the model" in html and "What to do: do what the message says" in html
    assert "disconnected" in html and "server closed the connection" in html
    assert "DIFFERS" in html and 'id="history"' in html and "<polyline" in html
    assert "2026-11-28 10:00:00 UTC" in html  # cdc-verify writes UTC without a zone
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert 'http-equiv="refresh"' in html


def test_secrets_are_redacted_from_commands_messages_and_urls():
    for text, secret in [("cdc-capture-postgres --dsn 'host=db password=hunter2 user=cdc'", "hunter2"),
                         ("PGPASSWORD=s3cr3t cdc-capture-postgres", "s3cr3t"),
                         ('{"user": "cdc", "password": "tok-123"}', "tok-123"),
                         ("databend://cdc:pa55@localhost:8000/db", "pa55"),
                         ("token=abc.def failed", "abc.def")]:
        assert secret not in redact(text), text
    assert redact("host=db user=cdc") == "host=db user=cdc"


def test_the_capture_and_verify_files_are_read_as_the_processes_write_them(tmp_path):
    state = tmp_path / "capture-state.json"
    progress = FollowProgress()
    progress.written(120, 4, "0/16B3F10", int(time.time() * 1000) - 2000)
    write_status(state, progress.status("slot cdc", "0/16B4000", 240, [{"table": "shop.items", "reason": "added",
                                                                           "rows": 5000, "pages": 3, "after": ["9"]}]))
    command = f"cdc-capture-postgres --dsn 'host=db password=x' --tables shop.items --state {state}"
    assert state_file(command) == state and "password" not in capture_name(command)
    status = read_capture_status(capture_name(command), state_file(command), running=True)
    assert (status.connected, status.changes, status.behind_bytes, status.position) == (True, 120, 240, "0/16B3F10")
    assert status.snapshots[0].table == "shop.items" and status.snapshots[0].rows == 5000
    lost_connection_status(state, "server closed the connection")
    assert read_capture_status("c", state).connected is False
    stopped_status(state)
    stopped = read_capture_status("c", state)
    assert (stopped.connected, stopped.running, stopped.lost, stopped.changes) == (False, False, None, 120)
    assert "capture c: stopped at" in "\n".join(render_text(Registry().snapshot([stopped], []), 1.0))
    assert read_capture_status("c", state, running=True).running is True  # cdc-run knows its process better
    assert read_capture_status("c", tmp_path / "none.json").connected is None
    report = tmp_path / "cdc_verify.json"
    report.write_text(json.dumps({"checks": [{"mirror": "shop.orders", "clean": False, "missing": 1, "extra": 0,
                                              "differing": 2, "checked_at": "t", "source_position": "0/1"}]}))
    assert read_verify_report(report)[0].differing == 2 and read_verify_report(tmp_path / "no.json") == []


def test_a_scrape_of_200_mirrors_has_each_mirror():
    registry = Registry()
    registry.enabled = True
    for number in range(200):
        registry.observe_run_row(f"shop.mirror_{number:03d}", run_row())
    for _ in range(720):  # an hour of 5-second cycles
        registry.observe_cycle(True, 5.0)
    text, _ = metrics.render(lambda: registry.snapshot())
    assert text.count(b"cdc_mirror_last_run_seconds{") == 200
    assert len(registry.snapshot().history) == 720  # the page's hour; benchmarks/status/status_endpoint.py times a scrape


def test_relation_names_lose_their_quoting():
    assert relation_name('`shop`.`orders`') == relation_name('"shop"."orders"') == "shop.orders"


def test_a_redacting_stream_redacts_whole_lines_written_in_pieces():
    import io

    out = io.StringIO()
    stream = RedactingStream(out)
    stream.write("connecting to host=db pass")
    stream.write("word=hunter2 user=cdc\nnext line\npartial token=abc")
    stream.flush()
    assert "hunter2" not in out.getvalue() and "abc" not in out.getvalue()
    assert out.getvalue().startswith("connecting to host=db password=*** user=cdc\nnext line\n")


def test_lines_quarantined_once_are_counted_once_whatever_the_number_of_mirrors():
    """Each mirror's run counts the lines quarantined since its previous run: four mirrors that saw the
    same 3 lines are 3 lines, not 12."""
    from python_jobs.status.tables import snapshot_from_tables
    from python_jobs.status.text import render_text

    runs = [{"target_table": f"mirror.m{index}", "invocation_id": invocation, "finished_at": f"2026-01-01 00:0{minute}:00",
             "run_seconds": 1, "lines_quarantined": quarantined}
            for index in range(4) for invocation, minute, quarantined in (("a", 1, 3), ("b", 2, 0), ("c", 3, 2))]
    status = snapshot_from_tables(runs, [])
    assert status.landing.quarantined == 5
    assert "  5 lines quarantined (the quarantine table says why)" in render_text(status, 1)


def test_a_captures_warning_reaches_the_verdict_the_page_the_metrics_and_cdc_status(tmp_path):
    state = tmp_path / "capture-state.json"
    write_status(state, FollowProgress().status("slot cdc", "0/1", 0, [], unlogged_warnings(["shop.items"])))
    capture = read_capture_status("cdc-capture-postgres", state, running=True)
    assert capture.warnings == ["shop.items is unlogged: its changes are not in the log, so the mirror misses them "
                                "until ALTER TABLE shop.items SET LOGGED"]
    registry = Registry()
    registry.enabled = True
    registry.observe_run_row("shop.orders", run_row())
    snapshot = registry.snapshot([capture], [])
    kind, verdict = snapshot.verdict()
    assert kind == "warn" and "shop.items is unlogged" in verdict
    assert '<div class="warning">shop.items is unlogged' in page.render(snapshot)
    assert any("WARNING: shop.items is unlogged" in line for line in render_text(snapshot, 1))
    text, _ = metrics.render(lambda: registry.snapshot([capture], []))
    assert samples(text.decode())[("cdc_capture_warnings", (("capture", "cdc-capture-postgres"),))] == 1
    # Logged again: no warning, and the verdict is the runs' own.
    write_status(state, FollowProgress().status("slot cdc", "0/1", 0, [], unlogged_warnings([])))
    assert registry.snapshot([read_capture_status("c", state)], []).verdict()[0] == "ok"


def test_a_refused_repair_request_is_a_capture_warning_until_removed(tmp_path):
    """A range the capture refused to read again stays unrepaired: the page, the metrics and cdc-status say so."""
    state = tmp_path / "capture-state.json"
    write_status(state, FollowProgress().status("slot cdc", "0/1", 0, []))
    state.write_text("{}")
    assert read_capture_status("c", state).warnings == []
    write_request(state, "shop.items", ["c0ffee"], None)
    with taken_requests(state, Pages()) as requests:
        refuse(state, requests[0], "c0ffee: invalid input syntax for type uuid", logging.getLogger("test"))
    [warning] = read_capture_status("c", state, running=True).warnings
    assert warning.startswith("cdc-snapshot of shop.items keys c0ffee to end was refused: c0ffee: invalid input "
                              "syntax for type uuid; that range is not read again"), warning
    registry = Registry()
    registry.enabled = True
    assert registry.snapshot([read_capture_status("c", state)], []).verdict()[0] == "warn"
    for path in (state.parent / "capture-state.json.requests" / "refused").glob("*.json"):
        path.unlink()
    assert read_capture_status("c", state).warnings == []


def test_a_difference_whose_ranges_were_asked_again_says_so_on_the_page_and_in_cdc_status():
    """cdc-verify --repair asked the capture to read the ranges again: the check still says what it found,
    and when the re-read was asked, so that an operator runs cdc-verify again instead of repairing twice."""
    registry = Registry()
    registry.enabled = True
    asked = VerifyStatus("shop.orders", "2026-01-01 00:00:00", False, 0, 1, 2, repair_asked_at="2026-01-01 00:00:05.5")
    equal = VerifyStatus("shop.items", "2026-01-01 00:00:00", True, 0, 0, 0, repair_asked_at="2026-01-01 00:00:05")
    status = registry.snapshot([], [asked, equal])
    html = page.render(status)
    assert "DIFFERS<br><span class=\"muted\">re-read asked 2026-01-01 00:00:05 UTC: run cdc-verify again once applied" in html
    assert html.count("re-read asked") == 1
    text = "\n".join(render_text(status, 1.0))
    assert "ranges asked to be read again at 2026-01-01 00:00:05 UTC: run cdc-verify again once they are applied" in text
    assert text.count("asked to be read again") == 1
