"""What operators watch (python_jobs/status/): a running `cdc-run` service with a real PostgreSQL
capture serves /metrics, the status page and /status.json; headless Chromium loads the page while it
runs; cdc-status reads the same from the tables once it has stopped. No secret appears anywhere."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from harness.postgres_server import create_capture_user
from test_capture_faults import postgres  # noqa: F401 - fixture
from test_starter import BIN, PROJECT_DIR, run

SECRET = "s3cret-Pa55-9f2"
BROKEN_MODEL = """{{ config(materialized='table') }}
{% if execute %}
    {{ exceptions.raise_compiler_error("cannot reach the warehouse databend://cdc:" ~ var('secret') ~ "@db:8000 (password=" ~ var('secret') ~ ")") }}
{% endif %}
select 1 as one
"""
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def get(url: str, accept: str = "") -> str:
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return answer.read().decode()


def wait_for(condition, seconds: float, what: str, service: subprocess.Popen, log: Path):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        assert service.poll() is None, f"cdc-run ended while waiting for {what}:\n{log.read_text()[-6000:]}"
        time.sleep(1)
    raise AssertionError(f"no {what} within {seconds} s:\n{log.read_text()[-6000:]}")


def browser(url: str, home: Path, *what: str) -> str:
    """Headless Chromium on the page: its DOM once loaded (--dump-dom) or a screenshot (--screenshot=...)."""
    if CHROMIUM is None:
        pytest.fail("no chromium: `make test-dbs` installs Debian's (the Makefile's DEBIAN_TEST_PACKAGES)")
    done = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                           "--hide-scrollbars", f"--user-data-dir={home / 'chromium'}", "--window-size=1280,1500", *what, url],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_a_running_service_is_watched_by_its_metrics_and_page_and_cdc_status_after_it(postgres, tmp_path):  # noqa: F811
    connection = postgres.connect()
    connection.autocommit = True
    with connection.cursor() as cursor:
        cursor.execute("create schema shop; create table shop.items (id int primary key, note text)")
        cursor.execute("insert into shop.items select g, 'note ' || g from generate_series(1, 40) g")
    dsn = create_capture_user(postgres, ["shop"])
    project, home = tmp_path / "watched", tmp_path / "home"
    home.mkdir()
    run(["cdc-init", str(project), "--postgres", dsn, "--tables", "shop.items", "--package-local", str(PROJECT_DIR)],
        tmp_path, home)
    run(["dbt", "deps", "--profiles-dir", "."], project, home)
    (project / "models" / "broken_report.sql").write_text(BROKEN_MODEL)
    # A history of the same table: its runs are watched as a mirror's are.
    mirror_model = next(project.glob("models/**/shop_items.sql"))
    (mirror_model.parent / "shop_items_history.sql").write_text(
        mirror_model.read_text().replace("config(\n", "config(\n        materialized='cdc_history',\n", 1))
    capture = (f"cdc-capture-postgres --dsn '{dsn}' --tables shop.items --slot watched --out data/inbox "
               "--state data/capture-state.json --max-wait-seconds 1 --progress-seconds 1")
    log = tmp_path / "service.log"
    environment = {"PATH": f"{BIN}:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8", "TZ": "UTC",
                   "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", "PGPASSWORD": SECRET, "MYSQL_PWD": SECRET}
    service = subprocess.Popen(
        [BIN / "cdc-run", "--every", "2", "--keep-going", "--status-port", "0", "--capture", capture, "--",
         "run", "--profiles-dir", ".", "--vars", json.dumps({"secret": SECRET})],
        cwd=project, env=environment, stdout=open(log, "w"), stderr=subprocess.STDOUT)
    try:
        address = wait_for(lambda: re.search(r"status page at (http://127\.0\.0\.1:\d+)/", log.read_text()), 120,
                           "status endpoint", service, log).group(1)
        status = lambda: json.loads(get(f"{address}/status.json"))  # noqa: E731
        applied = (lambda: [mirror for mirror in status()["mirrors"]
                            if mirror["mirror"] == "mirror.shop_items" and mirror["inserted"] >= 40])
        wait_for(applied, 240, "the snapshot applied", service, log)
        history = (lambda: [mirror for mirror in status()["mirrors"]
                            if mirror["mirror"] == "mirror.shop_items_history" and mirror["inserted"] >= 40])
        wait_for(history, 60, "the history's runs", service, log)
        with connection.cursor() as cursor:
            cursor.execute("update shop.items set note = 'changed' where id <= 5; delete from shop.items where id > 35")
        wait_for(lambda: [m for m in status()["mirrors"] if m["mirror"] == "mirror.shop_items" and m["deleted"] >= 5],
                 120, "the changes applied", service, log)
        # Each update and delete closes a version: 10 version rows rewritten, 5 more versions added.
        wait_for(lambda: [m for m in status()["mirrors"] if m["mirror"] == "mirror.shop_items_history" and m["updated"] >= 10],
                 120, "the changes in the history", service, log)
        wait_for(lambda: all(c["connected"] for c in status()["captures"]) and status()["captures"], 30,
                 "the capture's status", service, log)
        # A table set UNLOGGED writes no WAL: the capture's warning reaches the metrics, the page and cdc-status.
        with connection.cursor() as cursor:
            cursor.execute("alter table shop.items set unlogged; insert into shop.items values (100, 'not in the log')")
        wait_for(lambda: any(c["warnings"] for c in status()["captures"]), 60, "the capture's warning", service, log)

        metrics = get(f"{address}/metrics")
        found = {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
                 for family in text_string_to_metric_families(metrics) for sample in family.samples}
        items = (("mirror", "mirror.shop_items"), ("source_table", "shop.items"))
        assert found[("cdc_mirror_events_applied_total", (items[0], ("operation", "insert"), items[1]))] == 40
        assert found[("cdc_mirror_events_applied_total", (items[0], ("operation", "update"), items[1]))] == 5
        assert found[("cdc_mirror_events_applied_total", (items[0], ("operation", "delete"), items[1]))] == 5
        assert found[("cdc_mirror_last_run_success", items)] == 1
        assert 0 <= found[("cdc_mirror_lag_seconds", items)] < 120
        capture_label = (("capture", "cdc-capture-postgres data/capture-state.json"),)
        assert found[("cdc_capture_connected", capture_label)] == 1
        assert found[("cdc_capture_changes_total", capture_label)] >= 10
        assert found[("cdc_landing_events_total", ())] >= 50
        assert found[("cdc_run_failures_total", ())] >= 1  # the broken model fails every run
        assert found[("cdc_capture_warnings", capture_label)] == 1

        dom = browser(f"{address}/", home, "--dump-dom")
        assert "mirror.shop_items" in dom and 'class="state-ok"' in dom
        assert "mirror.broken_report" in dom or "broken_report" in dom
        assert "What to do:" in dom and "cannot reach the warehouse" in dom
        assert 'class="state-connected"' in dom and "cdc-capture-postgres data/capture-state.json" in dom
        assert "shop.items is unlogged" in dom and "SET LOGGED" in dom
        assert "<polyline" in dom and 'class="throughput"' in dom
        assert 'id="verdict" class="verdict bad"' in dom  # a mirror fails: the page says so first
        for shown in (dom, metrics, json.dumps(status())):
            assert SECRET not in shown
        # The page as a laptop shows it (docs/images/status_page.png is one of these).
        screenshot = tmp_path / "status_page.png"
        browser(f"{address}/", home, f"--screenshot={screenshot}")
        assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and screenshot.stat().st_size > 20_000
        if os.environ.get("CDC_MERGE_STATUS_SCREENSHOT"):
            shutil.copy(screenshot, os.environ["CDC_MERGE_STATUS_SCREENSHOT"])
    finally:
        service.send_signal(signal.SIGTERM)
        try:
            service.wait(timeout=120)
        finally:
            if service.poll() is None:
                service.kill()
    output = log.read_text()
    assert "cdc-run:" in output and SECRET not in output, output[-4000:]

    # With the service stopped, cdc-status tells the same from the tables and the capture's status file.
    shown = run(["cdc-status", "--profiles-dir", ".", "--capture-state", "data/capture-state.json"], project, home,
                expect_success=False, PGPASSWORD=SECRET)  # exit status 1: the capture warns
    assert "mirror.shop_items" in shown and "40 inserted, 5 updated, 5 deleted" in shown
    assert "mirror.shop_items_history" in shown and "45 inserted, 10 updated, 0 deleted" in shown, shown
    assert "WARNING: shop.items is unlogged" in shown
    assert "cdc-capture-postgres" not in shown or "data/capture-state.json" in shown
    assert SECRET not in shown
