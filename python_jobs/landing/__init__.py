"""The landing job: config -> read new CDC files -> parse -> append to the raw table (Spark + Iceberg, or Databend)."""
