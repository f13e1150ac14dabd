"""Many land + apply cycles in one long-lived process, with and without maintenance: cycle time, files,
snapshots, memory, lag, a rate ramp, each mirror against a Python replay (BENCHMARKS.md: soak).

    .venv/bin/python -m benchmarks.soak.soak --cycles 8 --tables 4 --events-per-cycle 500 --ramp 1000,4000,16000 --ramp-cycles 1
    .venv/bin/python -m benchmarks.soak.soak_plot
"""
