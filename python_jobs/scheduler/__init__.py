"""cdc-run: dbt again and again on a schedule, in one process."""
