"""What both adapter plugins (cdc_spark, cdc_databend) share: the capabilities, the methods the
macros ask of either (the apply's decisions, consistency groups, work once per invocation, status,
verify), the run state, the landing's tables and the running of a Python model's code. Not a dbt
adapter of its own; neither plugin imports the other (docs/architecture.md)."""
