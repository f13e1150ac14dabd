"""N mirrors over one raw table in a warm process: idle runs against dbt's own cost, small batches on the
shared path against the per-mirror path, the demo's cycle (BENCHMARKS.md: many_mirrors).

    .venv/bin/python -m benchmarks.many_mirrors.many_mirrors --mirrors 10 --small 10 --repeat 3
    .venv/bin/python -m benchmarks.many_mirrors.many_mirrors_plot benchmarks/results/many_mirrors_{10,50,200}.json
"""
