"""Run by `cdc-cluster up` with spark-submit: the catalog's `default` namespace, which every Thrift
session uses first (`use default`)."""

from pyspark.sql import SparkSession

if __name__ == "__main__":
    spark = SparkSession.builder.appName("cdc_merge_default_namespace").getOrCreate()
    spark.sql("create namespace if not exists default")
    spark.stop()
