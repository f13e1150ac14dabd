"""Landing side of cdc_merge: CDC JSON files -> append-only raw table (PySpark)."""
