"""Plot benchmarks/results/soak.json (written by benchmarks.soak.soak), as benchmarks.apply.plot plots apply.json.

    .venv/bin/pip install -e ".[bench]"       # matplotlib, benchmark-only
    .venv/bin/python -m benchmarks.soak.soak_plot [--results benchmarks/results/soak.json] [--out benchmarks/results/soak.png]

Top: cycle time, and the mirrors' data + delete files and snapshots, per cycle, with and without
maintenance. Bottom: lag from source commit to mirror commit (median and 95th percentile of each
cycle's events) and the event rate of each cycle, ramp included.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from benchmarks.common.results import RESULTS_DIR

STYLE = {"maintenance": "tab:blue", "no-maintenance": "tab:orange"}


def plot(results: dict, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ((times, files), (lags, rates)) = plt.subplots(2, 2, figsize=(13, 8))
    for name, variant in results["variants"].items():
        color = STYLE.get(name, "tab:gray")
        cycles = [c for c in variant["cycles"] if c["phase"] == "soak"]
        x = [c["cycle"] for c in cycles]
        times.plot(x, [c["seconds"] for c in cycles], ".", ms=3, color=color, label=name)
        files.plot(x, [c["mirror_data_files"] + c["mirror_delete_files"] for c in cycles], "-", color=color,
                   label=f"{name}: mirrors' data + delete files")
        files.plot(x, [c["mirror_snapshots"] for c in cycles], "--", color=color, label=f"{name}: mirrors' snapshots")
        files.plot(x, [c["raw_snapshots"] or 0 for c in cycles], ":", color=color, label=f"{name}: raw table's snapshots")
        maintained = [c["cycle"] for c in cycles if c["maintained"]]
        if maintained:
            times.plot(maintained, [cycles[n - 1]["seconds"] for n in maintained], "x", color="black", ms=5,
                       label="a mirror maintained" if name == "maintenance" else None)
        every = variant["cycles"]
        lags.plot([c["cycle"] for c in every], [c["lag_p50"] for c in every], "-", color=color, label=f"{name}: median")
        lags.plot([c["cycle"] for c in every], [c["lag_p95"] for c in every], ":", color=color, label=f"{name}: 95th percentile")
        rates.plot([c["cycle"] for c in every], [c["events_per_second"] for c in every], ".", ms=3, color=color, label=name)
        for step in variant.get("ramp") or []:
            ramp_cycles = [c["cycle"] for c in step["cycles"]]
            rates.annotate(f"{step['events_per_cycle']:,}/cycle", (ramp_cycles[0], step["events_per_second"]), fontsize=7)
    lags.axhline(results.get("lag_goal", 30), color="red", lw=0.8, label=f"goal {results.get('lag_goal', 30):.0f} s")
    for ax, title, ylabel in ((times, "cycle time (land + apply, one dbt run)", "seconds"),
                              (files, "files and snapshots at the end of each cycle", "count"),
                              (lags, "lag: source commit -> mirror commit", "seconds"),
                              (rates, "event rate (events per cycle / cycle time); ramp at the end", "events/s")):
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("cycle")
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    machine = results.get("machine", {})
    fig.suptitle(f"cdc_merge soak: {results['cycles']} cycles of {results['events_per_cycle']:,} events over {results['tables']} "
                 f"mirrors ({machine.get('cores', '?')} cores, load average at start {machine.get('load_average_at_start', ['?'])[0]:.1f})",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=100)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Plot benchmarks/results/soak.json")
    parser.add_argument("--results", type=Path, default=RESULTS_DIR / "soak.json")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "soak.png")
    args = parser.parse_args(argv)
    plot(json.loads(args.results.read_text()), args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
