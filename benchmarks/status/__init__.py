"""What cdc-run's status endpoint costs: a scrape of 200 mirrors, and the demo's cycle with the endpoint
off and on (BENCHMARKS.md: status_endpoint).

    .venv/bin/python -m benchmarks.status.status_endpoint --cycles 22
"""
