"""The status page at / (docs/observability.md): one self-contained HTML page from a StatusSnapshot,
no script and nothing fetched from elsewhere; it reloads itself every REFRESH_SECONDS. The last
hour's lag and throughput are drawn as inline SVG. Every text is escaped."""

from __future__ import annotations

from html import escape
from typing import Sequence

from python_jobs.status.model import Sample, StatusSnapshot, VerifyStatus, clock_text, number_text, seconds_text, utc_text

REFRESH_SECONDS = 5
_STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em auto;max-width:1100px;padding:0 1em;color:#1d232a}
h1{font-size:1.4em;margin:0 0 .2em}h2{font-size:1.1em;margin:1.4em 0 .4em}
.verdict{padding:.6em .9em;border-radius:6px;margin:.6em 0 1em;font-weight:600}
.ok{background:#e3f4e6}.warn{background:#fff3cd}.bad{background:#fbe0e0}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.3em .6em;border-bottom:1px solid #e3e6ea}
th{font-weight:600;color:#4a5560}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
.state-ok{color:#1a7f37}.state-failing,.state-disconnected{color:#c62828;font-weight:600}
.warning{color:#8a5a00;font-weight:600}.muted{color:#6b7580}svg{width:100%;height:auto;background:#fafbfc;border:1px solid #e3e6ea;border-radius:6px}
"""


def _plot(history: Sequence[Sample], now: float) -> str:
    """Lag (line, left axis) and events applied a second (bars, right axis) over the last hour."""
    width, height, left, right, top, bottom = 1000, 220, 56, 64, 14, 28
    inner_w, inner_h = width - left - right, height - top - bottom
    start = now - 3600
    parts = [f'<svg id="history" viewBox="0 0 {width} {height}" role="img" aria-label="lag and throughput over the last hour">']
    lags = [sample.lag_seconds for sample in history if sample.lag_seconds is not None]
    rates = [sample.events / max(sample.cycle_seconds, 1e-3) for sample in history]
    lag_top, rate_top = max(lags, default=0) * 1.15 or 1.0, max(rates, default=0) * 1.15 or 1.0
    x = (lambda at: left + inner_w * min(max((at - start) / 3600, 0), 1))
    for fraction in (0, 0.5, 1):
        y = top + inner_h * (1 - fraction)
        parts.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + inner_w}" y2="{y:.1f}" stroke="#e3e6ea"/>')
        parts.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11" fill="#1565c0">{lag_top * fraction:,.1f} s</text>')
        parts.append(f'<text x="{left + inner_w + 6}" y="{y + 4:.1f}" font-size="11" fill="#8a6d00">{rate_top * fraction:,.0f}/s</text>')
    for minutes in (60, 45, 30, 15, 0):
        at = now - minutes * 60
        parts.append(f'<text x="{x(at):.1f}" y="{height - 8}" text-anchor="middle" font-size="11" fill="#6b7580">'
                     f'{"now" if minutes == 0 else f"-{minutes} min"}</text>')
    bar = max(inner_w / 720, 1.5)
    for sample, rate in zip(history, rates):
        bar_h = inner_h * rate / rate_top
        parts.append(f'<rect class="throughput" x="{x(sample.at) - bar / 2:.1f}" y="{top + inner_h - bar_h:.1f}" '
                     f'width="{bar:.1f}" height="{bar_h:.1f}" fill="#f2c94c" opacity="0.7"/>')
    points = " ".join(f"{x(sample.at):.1f},{top + inner_h * (1 - sample.lag_seconds / lag_top):.1f}"
                      for sample in history if sample.lag_seconds is not None)
    if points:
        parts.append(f'<polyline class="lag" points="{points}" fill="none" stroke="#1565c0" stroke-width="2"/>')
    if not history:
        parts.append(f'<text x="{width / 2}" y="{height / 2}" text-anchor="middle" fill="#6b7580">no run finished yet</text>')
    parts.append("</svg>")
    return "".join(parts)


def repair_html(check: VerifyStatus) -> str:
    """A differing check whose ranges cdc-verify --repair asked to be read again: it may be repaired since."""
    if check.clean or not check.repair_asked_at:
        return ""
    return (f'<br><span class="muted">re-read asked {escape(utc_text(check.repair_asked_at))}: '
            'run cdc-verify again once applied</span>')


def render(status: StatusSnapshot) -> str:
    kind, verdict = status.verdict()
    rows = []
    for mirror in status.mirrors:
        rows.append(
            f'<tr class="mirror"><td>{escape(mirror.mirror)}</td><td class="state-{escape(mirror.state.replace(" ", "-"))}">'
            f'{escape(mirror.state)}</td><td class="n">{seconds_text(mirror.lag_seconds)}</td><td>{clock_text(mirror.last_run_at)}</td>'
            f'<td class="n">{seconds_text(mirror.last_run_seconds)}</td><td class="n">{number_text(mirror.inserted)}</td>'
            f'<td class="n">{number_text(mirror.updated)}</td><td class="n">{number_text(mirror.deleted)}</td>'
            f'<td class="n">{number_text(mirror.failures)}</td></tr>')
    mirrors = ('<table id="mirrors"><tr><th>mirror</th><th>state</th><th class="n">lag</th><th>last run</th>'
               '<th class="n">took</th><th class="n">inserted</th><th class="n">updated</th><th class="n">deleted</th>'
               '<th class="n">failures</th></tr>' + "".join(rows) + "</table>") if rows else '<p class="muted">no mirror has run yet</p>'
    captures = []
    for capture in status.captures:
        state = ("stopped" if capture.running is False else "connected" if capture.connected
                 else "disconnected" if capture.connected is False else "starting")
        snapshot = ", ".join(f"{escape(table.table)}: {table.rows:,} rows in {table.pages} pages ({escape(table.reason or '')})"
                             for table in capture.snapshots) or "none"
        age = capture.seconds_since_last_event(status.taken_at)
        warnings = "".join(f'<div class="warning">{escape(warning)}</div>' for warning in capture.warnings)
        captures.append(
            f'<tr class="capture"><td>{escape(capture.name)}</td><td class="state-{state}">{state}'
            f'{" (" + escape(capture.lost) + ")" if capture.lost and capture.connected is False else ""}'
            f'{warnings}</td>'
            f'<td>{escape(capture.position or "-")}</td><td class="n">{number_text(capture.behind_bytes)}</td>'
            f'<td class="n">{capture.changes_per_second:,.0f}</td><td class="n">{seconds_text(age)}</td><td>{snapshot}</td></tr>')
    captures_html = ('<table id="captures"><tr><th>capture</th><th>state</th><th>written through</th><th class="n">bytes behind</th>'
                     '<th class="n">changes/s</th><th class="n">newest commit</th><th>online snapshot</th></tr>'
                     + "".join(captures) + "</table>") if captures else '<p class="muted">no capture runs in this service</p>'
    failures = "".join(f'<li class="failure"><b>{escape(failure.where)}</b> at {clock_text(failure.at)}: {escape(failure.message)}'
                       f'<br><span class="muted">What to do: {escape(failure.what_to_do)}</span></li>'
                       for failure in status.failures[:10])
    groups = "".join(f"<tr><td>{escape(group)}</td><td class='n'>{seconds_text(lag)}</td></tr>" for group, lag in status.groups().items())
    checks = "".join(f"<tr><td>{escape(check.mirror)}</td><td>{'equal' if check.clean else 'DIFFERS'}{repair_html(check)}</td>"
                     f"<td class='n'>{check.missing}</td><td class='n'>{check.extra}</td><td class='n'>{check.differing}</td>"
                     f"<td>{escape(utc_text(check.checked_at))}</td></tr>" for check in status.verify)
    landing = status.landing
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="refresh" content="{REFRESH_SECONDS}"><title>cdc_merge status</title><style>{_STYLE}</style></head>
<body><h1>cdc_merge</h1><div class="muted">{escape(status.service)} at {clock_text(status.taken_at)}: {status.cycles} runs,
{status.cycle_failures} failed; last run {seconds_text(status.last_cycle_seconds)}</div>
<div id="verdict" class="verdict {kind}">{escape(verdict)}</div>
<h2>Mirrors</h2>{mirrors}
<h2>Lag and throughput, last hour</h2>{_plot(status.history, status.taken_at)}
<div class="muted">blue line: the largest mirror lag after each run; bars: events applied a second</div>
<h2>Recent failures</h2>{f'<ul id="failures">{failures}</ul>' if failures else '<p class="muted">none</p>'}
<h2>Captures</h2>{captures_html}
<h2>Landing</h2><p id="landing">{landing.files:,} files, {landing.events:,} events, {landing.quarantined:,} lines
quarantined, {landing.bytes:,} bytes in {landing.landings} landings; last {clock_text(landing.last_at)}</p>
{f'<h2>Consistency groups</h2><table id="groups"><tr><th>group</th><th class="n">cut lag</th></tr>{groups}</table>' if groups else ''}
<h2>Last verify</h2>{f'<table id="verify"><tr><th>mirror</th><th>result</th><th class="n">missing</th><th class="n">extra</th><th class="n">differing</th><th>checked</th></tr>{checks}</table>' if checks else '<p class="muted">no cdc-verify report in the project</p>'}
</body></html>
"""
