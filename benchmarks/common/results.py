"""Where the benchmarks write their figures, and the machine they record beside them."""

from __future__ import annotations

import datetime as dt
import os
import platform
import subprocess
import sys
from pathlib import Path

RESULTS_DIR = Path(__file__).resolve().parent.parent / "results"


def machine() -> dict:
    mem = next((line.split()[1] for line in open("/proc/meminfo") if line.startswith("MemTotal")), "0")
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()[0]
    import pyspark
    return {"cores": os.cpu_count(), "memory_gb": round(int(mem) / 1024**2, 1), "cpu": cpu, "java": java,
            "python": platform.python_version(), "pyspark": pyspark.__version__, "iceberg": "1.10.2",
            "load_average_at_start": os.getloadavg()}


def run_header() -> dict:
    """What every results file starts with: when the run started, its command, the machine."""
    return {"started": dt.datetime.utcnow().isoformat(timespec="seconds") + "Z",
            "command": " ".join([Path(sys.executable).name, *sys.orig_argv[1:]]), "machine": machine()}


def write_results(path: Path, result: dict) -> None:
    """result as path's JSON (the folder made if need be), and printed."""
    import json

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
