"""Plot seconds per run against the number of mirrors, the shared path beside the per-mirror path,
from the results of benchmarks.many_mirrors.many_mirrors at several sizes.

    .venv/bin/pip install -e ".[bench]"       # matplotlib, benchmark-only
    .venv/bin/python -m benchmarks.many_mirrors.many_mirrors_plot benchmarks/results/many_mirrors_10.json benchmarks/results/many_mirrors_50.json

Writes benchmarks/results/many_mirrors.png (--out).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from benchmarks.common.results import RESULTS_DIR


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", nargs="+", type=Path, help="many_mirrors.py results, one per number of mirrors")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "many_mirrors.png")
    args = parser.parse_args(argv)
    # Imported here: matplotlib is the `bench` extra, which the venv of `make test` leaves out.
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = sorted((json.loads(path.read_text()) for path in args.results), key=lambda run: run["mirrors"])
    mirrors = [run["mirrors"] for run in runs]
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    series = [
        ("events, per-mirror path (one thread)", lambda run: run["events"]["per_mirror"]["seconds"], "s-", "tab:orange"),
        ("events, shared path (four threads)", lambda run: run["events"]["shared"]["seconds"], "o-", "tab:blue"),
        ("idle, idle check", lambda run: run["idle"]["mirrors"]["seconds"], "^--", "tab:green"),
        ("no-op models (dbt's own cost)", lambda run: run["idle"]["noop"]["seconds"], "v:", "tab:gray"),
    ]
    for label, value, style, color in series:
        ax.plot(mirrors, [value(run) for run in runs], style, color=color, label=label)
    ax.set_xlabel("mirrors in the run (20-50 new events each)")
    ax.set_ylabel("seconds per dbt run (median, warm process)")
    ax.set_xticks(mirrors)
    ax.grid(alpha=0.3)
    ax.legend()
    ax.set_title(f"Many mirrors over one raw table ({runs[0]['machine']['cores']} cores)")
    fig.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
