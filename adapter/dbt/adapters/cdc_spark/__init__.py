"""dbt adapter `cdc_spark`: dbt-spark plus Python models in dbt's own SparkSession.

dbt-spark runs Python models only on Databricks clusters. This plugin inherits
everything from dbt-spark (its dependency, so every `spark__` macro and
materialization still applies) and adds one Python submission method, `session`,
which runs the compiled model in the SparkSession that the `session` connection
method already uses. A profile opts in with `type: cdc_spark`.
"""

from dbt.adapters.base import AdapterPlugin

from dbt.adapters.cdc_core import demo_models
from dbt.adapters.cdc_spark.connections import CdcSparkConnectionManager, CdcSparkCredentials  # noqa: F401
from dbt.adapters.cdc_spark.impl import CdcSparkAdapter
from dbt.include import cdc_spark

# A ref or YAML entry of a name only the package's disabled demo models have is one of a missing model (demo_models.py).
demo_models.install()

Plugin = AdapterPlugin(
    adapter=CdcSparkAdapter,  # type: ignore[arg-type]
    credentials=CdcSparkCredentials,
    include_path=cdc_spark.PACKAGE_PATH,
    dependencies=["spark"],
)
