"""Table properties maintenance sets on a table made before its DDL set them (macros/maintenance/):
the bounded metadata log (metadata_log.sql) and _cdc_seq's whole bounds (target.sql), set through
the Iceberg API in the driver where the table lacks them, with no commit when it has them."""

from typing import Any, Dict, Mapping, Optional

from dbt.adapters.cdc_spark import loaded_tables


def missing_properties(current: Mapping[str, str], wanted: Mapping[str, str]) -> Dict[str, str]:
    """wanted's properties that current does not set at all. A property set to another value (a
    model's table_properties, or a user's ALTER) is the table owner's choice and stays."""
    return {name: str(value) for name, value in wanted.items() if name not in current}


def set_missing(spark: Any, table: str, wanted: Mapping[str, str]) -> Optional[Dict[str, str]]:
    """Sets on table the properties of wanted it lacks, in one commit (none when it lacks none): the
    properties set; None when table is not an Iceberg table of this session, and nothing was done."""
    iceberg_table = loaded_tables.refreshed_table(spark, table)
    if iceberg_table is None:
        return None
    properties = iceberg_table.properties()
    missing = missing_properties({str(name): str(properties.get(name)) for name in properties.keySet()}, wanted)
    if missing:
        update = iceberg_table.updateProperties()
        for name, value in missing.items():
            update = update.set(name, value)
        update.commit()
    return missing
