"""The raw event log: each `dbt run` lands the CDC JSON files that are new since the last one.

The landing itself is python_jobs/landing/land.py, the same job spark-submit runs on a cluster.
"""

from python_jobs.landing import land


def model(dbt, session):
    dbt.config(materialized="cdc_landing")
    return land.run_for_dbt(
        session,
        config_path=dbt.config.get("landing_config"),
        raw_table=f"{dbt.this.schema}.{dbt.this.identifier}",
        quarantine_table=dbt.config.get("quarantine_table"),
    )
