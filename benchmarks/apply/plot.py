"""Plot apply time from benchmarks/results/apply.json (written by benchmarks.apply.run).

    .venv/bin/pip install "matplotlib>=3.8,<3.11"     # benchmark-only dependency
    .venv/bin/python -m benchmarks.apply.plot [--results benchmarks/results/apply.json] [--out benchmarks/results/apply_time.png]

Left: apply time vs target size at a fixed batch; right: vs batch size at a fixed target.
Each point is the best of the runs of that method in the same process.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from benchmarks.common.results import RESULTS_DIR

SERIES = [
    ("product: dbt run cdc_merge", "product", "o-", "tab:blue"),
    ("  of which SQL in Spark", "product", "o:", "tab:blue"),
    ("hand-written dedup + MERGE (MOR)", "handwritten_merge", "s-", "tab:orange"),
    ("one key-column scan", "key_scan", "^-", "tab:green"),
]


def value(methods: dict, name: str, sql: bool) -> float | None:
    """The best of the method's measurements: name, name_again, name_again_3, ... (benchmarks.apply.run --rounds)."""
    key = "sql_seconds" if sql else "seconds"
    values = [m[key] for n, m in methods.items() if (n == name or n.startswith(name + "_again")) and m.get("ok") and m.get(key)]
    return min(values) if values else None


def panel(ax, scenarios: list[dict], x_key: str, title: str, xlabel: str) -> None:
    scenarios = sorted(scenarios, key=lambda s: s[x_key])
    for label, name, style, color in SERIES:
        points = [(s[x_key], value(s["methods"], name, "SQL" in label)) for s in scenarios]
        points = [(x, y) for x, y in points if y]
        if points:
            ax.plot(*zip(*points), style, color=color, label=label.strip())
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("seconds")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Plot benchmarks/results/apply.json")
    parser.add_argument("--results", type=Path, default=RESULTS_DIR / "apply.json")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "apply_time.png")
    args = parser.parse_args(argv)
    # Imported here: matplotlib is the `bench` extra, which the venv of `make test` leaves out.
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = json.loads(args.results.read_text())
    scenarios = results["scenarios"]
    batch = Counter(s["batch_events"] for s in scenarios).most_common(1)[0][0]
    target = Counter(s["target_rows"] for s in scenarios).most_common(1)[0][0]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8))
    panel(left, [s for s in scenarios if s["batch_events"] == batch], "target_rows",
          f"batch of {batch:,} events", "target rows")
    panel(right, [s for s in scenarios if s["target_rows"] == target], "batch_events",
          f"target of {target:,} rows", "events in the batch")
    machine = results.get("machine", {})
    fig.suptitle(f"cdc_merge apply time ({machine.get('cores', '?')} cores, local Spark {machine.get('pyspark', '')}, "
                 f"Iceberg {machine.get('iceberg', '')}, driver heap {results.get('driver_memory', '?')})", fontsize=10)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
