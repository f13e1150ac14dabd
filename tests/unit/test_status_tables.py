"""cdc-status from the tables (python_jobs/status/tables.py): only the project's mirrors."""

from __future__ import annotations

from python_jobs.status.tables import snapshot_from_tables
from python_jobs.status.text import render_text


def test_the_tables_of_a_renamed_or_removed_model_are_left_out():
    """A model renamed (shop_orders to orders_mirror) leaves its table's runs and checks behind: cdc-status
    went on showing mirror.shop_orders 'ok', with its last lag and an 'equal' check, 40 minutes after its
    last run, among 'all 4 mirrors' of a project of 3."""
    runs = [{"target_table": name, "invocation_id": "a", "finished_at": "2026-01-01 00:01:00", "run_seconds": 1,
             "lag_seconds": 2} for name in ("mirror.shop_orders", "`mirror`.`orders_mirror`")]
    checks = [{"mirror": name, "checked_at": "2026-01-01 00:02:00", "clean": "true"}
              for name in ("mirror.shop_orders", "mirror.orders_mirror")]
    status = snapshot_from_tables(runs, checks, ["`mirror`.`orders_mirror`"])
    assert [mirror.mirror for mirror in status.mirrors] == ["mirror.orders_mirror"]
    assert [check.mirror for check in status.verify] == ["mirror.orders_mirror"]
    assert "shop_orders" not in "\n".join(render_text(status, 1))
    assert [mirror.mirror for mirror in snapshot_from_tables(runs, checks).mirrors] == ["mirror.orders_mirror", "mirror.shop_orders"]


def test_a_model_with_no_run_in_the_time_is_shown_and_warned_of():
    """A failed run writes no runs row: a mirror failing for the whole hour was missing from cdc-status,
    whose verdict said "all 1 mirrors applied their last run" (and its exit status 0)."""
    runs = [{"target_table": "mirror.shop_orders", "invocation_id": "a", "finished_at": "2026-01-01 00:01:00",
             "run_seconds": 1, "lag_seconds": 2}]
    status = snapshot_from_tables(runs, [], ["mirror.shop_orders", "mirror.shop_order_items"])
    assert [(mirror.mirror, mirror.state) for mirror in status.mirrors] == [
        ("mirror.shop_order_items", "no successful run in the time"), ("mirror.shop_orders", "ok")]
    assert status.verdict() == ("warn", "1 mirror(s) with no successful run in the time (failing, or not run): "
                                        "mirror.shop_order_items")
    assert "  mirror.shop_order_items: no successful run in the time, last run -" in "\n".join(render_text(status, 1))
