"""The soak's summary (benchmarks/soak/soak.py): cycle-time windows, trends after the first
maintenance, the printed report."""

from __future__ import annotations

from benchmarks.common import warm


def windows(cycles: int) -> tuple[range, range]:
    """Cycles 50-100 against the last 50; proportionally (second fifth, last fifth) for short runs."""
    if cycles >= 150:
        return range(50, 101), range(cycles - 49, cycles + 1)
    fifth = max(1, cycles // 5)
    return range(fifth + 1, 2 * fifth + 1), range(cycles - fifth + 1, cycles + 1)


def slope_per_100(points: list[tuple[int, float]]) -> float | None:
    if len(points) < 3:
        return None
    n = len(points)
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    var = sum((x - mean_x) ** 2 for x, _ in points)
    return round(100 * sum((x - mean_x) * (y - mean_y) for x, y in points) / var, 3) if var else None


def summarize(variant: dict) -> dict:
    cycles = [c for c in variant["cycles"] if c["phase"] == "soak"]
    early, late = windows(len(cycles))
    early_median = warm.median([cycles[n - 1]["seconds"] for n in early])
    late_median = warm.median([cycles[n - 1]["seconds"] for n in late])
    first_maintained = next((c["cycle"] for c in cycles if c["maintained"]), None)
    after = [c for c in cycles if first_maintained and c["cycle"] > first_maintained] or cycles[len(cycles) // 2:]
    last = cycles[-1]
    return {
        "early_cycles": f"{early.start}-{early.stop - 1}", "late_cycles": f"{late.start}-{late.stop - 1}",
        "early_median_seconds": early_median, "late_median_seconds": late_median,
        "late_over_early": round(late_median / early_median, 2) if early_median else None,
        "first_maintained_cycle": first_maintained, "maintained_runs": sum(c["maintained"] for c in cycles),
        "end": {name: last[name] for name in ("mirror_data_files", "mirror_delete_files", "mirror_snapshots", "mirror_snapshots_max",
                                               "raw_data_files", "raw_delete_files", "raw_snapshots")},
        "max_after_first_maintenance": {name: max(c[name] or 0 for c in after) for name in
                                        ("mirror_data_files", "mirror_delete_files", "mirror_snapshots", "raw_data_files", "raw_snapshots")},
        "trend_per_100_cycles_after_first_maintenance": {
            name: slope_per_100([(c["cycle"], c[name] or 0) for c in after])
            for name in ("mirror_data_files", "mirror_delete_files", "mirror_snapshots", "raw_data_files", "raw_snapshots", "seconds")},
        "rss_mb_trend_per_100_cycles_second_half": {
            name: slope_per_100([(c["cycle"], c[name] / 2**20) for c in cycles[len(cycles) // 2:]]) for name in ("python_rss", "jvm_rss")},
        "rss_mb_end": {name: round(last[name] / 2**20) for name in ("python_rss", "jvm_rss")},
        "events_per_second_median": warm.median([c["events_per_second"] for c in cycles]),
        "lag_p50": variant["lag_p50"], "lag_p95": variant["lag_p95"],
        "oracle_equal": all(v["equal"] for v in variant["oracle"].values()),
        "storage": variant["storage"],
    }


def report(results: dict) -> None:
    print("\n== summary", flush=True)
    for name, variant in results["variants"].items():
        s = variant["summary"]
        print(f"{name}: median cycle {s['early_median_seconds']:.2f} s (cycles {s['early_cycles']}) vs {s['late_median_seconds']:.2f} s "
              f"(cycles {s['late_cycles']}) = {s['late_over_early']}x (goal <= 1.2x); maintained {s['maintained_runs']} mirror runs, "
              f"first in cycle {s['first_maintained_cycle']}", flush=True)
        print(f"    at the end: mirrors {s['end']['mirror_data_files']} data + {s['end']['mirror_delete_files']} delete files, "
              f"{s['end']['mirror_snapshots']} snapshots (max per mirror {s['end']['mirror_snapshots_max']}); raw {s['end']['raw_data_files']} files, "
              f"{s['end']['raw_snapshots']} snapshots; trend per 100 cycles after the first maintenance {s['trend_per_100_cycles_after_first_maintenance']}", flush=True)
        print(f"    warehouse / live bytes {s['storage']['ratio']}x; RSS at the end python {s['rss_mb_end']['python_rss']} MB, JVM "
              f"{s['rss_mb_end']['jvm_rss']} MB, trend per 100 cycles (second half) {s['rss_mb_trend_per_100_cycles_second_half']} MB", flush=True)
        print(f"    lag source commit -> mirror commit: median {s['lag_p50']:.1f} s, p95 {s['lag_p95']:.1f} s at a median "
              f"{s['events_per_second_median']:,.0f} events/s; mirrors equal the replay: {'yes' if s['oracle_equal'] else 'NO'}", flush=True)
        ramp = variant.get("ramp")
        if ramp:
            under = [step for step in ramp if step["lag_p95"] < results["lag_goal"]]
            best = max(under, key=lambda step: step["events_per_second"]) if under else None
            results["highest_rate_under_lag_goal"] = best and {k: best[k] for k in ("events_per_cycle", "events_per_second", "lag_p95")}
            print(f"    ramp: highest sustained rate with p95 lag under {results['lag_goal']:.0f} s: "
                  + (f"{best['events_per_second']:,.0f} events/s ({best['events_per_cycle']:,} events per cycle, p95 {best['lag_p95']:.1f} s)"
                     if best else "none of the steps") + ("" if len(under) < len(ramp) else " (every step stayed under: the limit is higher)"),
                  flush=True)
