"""What the pipeline is doing, for operators: metrics, the status page, cdc-status (docs/observability.md)."""
