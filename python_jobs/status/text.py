"""A StatusSnapshot as lines for a terminal (cdc-status)."""

from __future__ import annotations

from python_jobs.status.model import StatusSnapshot, clock_text, seconds_text, utc_text


def render_text(status: StatusSnapshot, hours: float) -> list[str]:
    _, verdict = status.verdict()
    lines = [f"{status.service}, last {hours:g} h: {verdict}"]
    for mirror in status.mirrors:
        lines.append(f"  {mirror.mirror}: {mirror.state}, last run {clock_text(mirror.last_run_at)} ({seconds_text(mirror.last_run_seconds)}), "
                     f"lag {seconds_text(mirror.lag_seconds)}; {mirror.inserted} inserted, {mirror.updated} updated, "
                     f"{mirror.deleted} deleted, {mirror.skipped} skipped of {mirror.events_read} keys read")
    if not status.mirrors:
        lines.append("  no mirror ran in this time")
    for group, lag in status.groups().items():
        lines.append(f"  consistency group {group}: cut lag {seconds_text(lag)}")
    for capture in status.captures:
        state = ("stopped" if capture.running is False else "connected" if capture.connected
                 else "not connected" if capture.connected is False else "no status yet")
        age = capture.seconds_since_last_event(status.taken_at)
        lines.append(f"  capture {capture.name}: {state} at {clock_text(capture.updated_at)}, written through "
                     f"{capture.position or '-'}, {capture.behind_bytes if capture.behind_bytes is not None else '?'} bytes "
                     f"behind, newest commit {seconds_text(age)} ago"
                     + "".join(f"; reading {table.table} online: {table.rows:,} rows in {table.pages} pages"
                               for table in capture.snapshots)
                     + "".join(f"; WARNING: {warning}" for warning in capture.warnings))
    for check in status.verify:
        lines.append(f"  verify {check.mirror} at {utc_text(check.checked_at)}: "
                     + ("equal" if check.clean else f"DIFFERS ({check.missing} missing, {check.extra} extra, "
                                                     f"{check.differing} with other values)")
                     + (f"; its ranges asked to be read again at {utc_text(check.repair_asked_at)}: run cdc-verify again "
                        "once they are applied" if check.repair_asked_at and not check.clean else ""))
    if status.landing.quarantined:
        lines.append(f"  {status.landing.quarantined} lines quarantined (the quarantine table says why)")
    return lines
