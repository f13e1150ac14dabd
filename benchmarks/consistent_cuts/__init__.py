"""Consistency groups: their cost per run and their cut's lag (consistent_cuts), reads at the cut beside
cdc-run (reads_at_cut), the cluster's catalog transaction (catalog_transaction), and Databend's views at
the cut (cut_views) (BENCHMARKS.md, docs/consistent_cuts.md).

    .venv/bin/python -m benchmarks.consistent_cuts.consistent_cuts
    .venv/bin/python -m benchmarks.consistent_cuts.reads_at_cut
    .venv/bin/python -m benchmarks.consistent_cuts.catalog_transaction
    .venv/bin/python -m benchmarks.consistent_cuts.cut_views
"""
