"""The apply's decisions in plain Python, called by the adapter plugins (cdc_spark, cdc_databend)."""
