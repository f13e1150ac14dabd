"""Landing config errors name the file and the field, before Spark starts."""

from __future__ import annotations

import pytest
import yaml

from python_jobs.landing.config import ConfigError, load_config

VALID = {
    "input": "inbox",
    "checkpoint": "checkpoint",
    "raw_table": "cdc_raw.raw_events",
    "quarantine_table": "cdc_raw.quarantine",
    "tables": {"shop.orders": {"key": "id"}, "shop.order_lines": {"key": ["order_id", "line_no"]}},
}


def write(tmp_path, document):
    path = tmp_path / "landing.yml"
    path.write_text(yaml.safe_dump(document) if isinstance(document, dict) else document)
    return path


def test_valid_config_resolves_paths_next_to_the_file(tmp_path):
    config = load_config(write(tmp_path, VALID))
    assert config.input_dir == tmp_path / "inbox"
    assert config.key_columns == {"shop.orders": ("id",), "shop.order_lines": ("order_id", "line_no")}
    assert config.max_files_per_batch == 1000
    assert config.landed_dir is None  # landed files stay in the input folder unless landed is set
    assert load_config(write(tmp_path, {**VALID, "landed": "landed"})).landed_dir == tmp_path / "landed"


@pytest.mark.parametrize(
    "change, message",
    [
        ({"input": None}, "field 'input' is required"),
        ({"raw_table": "raw_events"}, "field 'raw_table' must be schema.table"),
        ({"format": "avro"}, "field 'format' must be one of auto, debezium, canal, maxwell, ogg"),
        ({"max_files_per_batch": 0}, "field 'max_files_per_batch' must be an integer from 1 to 999999"),
        ({"max_files_per_batch": 1_000_000}, "field 'max_files_per_batch' must be an integer from 1 to 999999"),
        ({"tables": ["shop.orders"]}, "field 'tables' must map each source table"),
        ({"tables": {"orders": {"key": "id"}}}, "field 'tables.orders' must be named schema.table"),
        ({"tables": {"shop.orders": {"key": []}}}, "field 'tables.shop.orders.key' must be a column name"),
        ({"tables": {"shop.orders": {"key": ["id; drop"]}}}, "field 'tables.shop.orders.key'"),
        ({"checkpoints": "x"}, "field 'checkpoints' is not a landing setting"),
        ({"sink": "kafka"}, "field 'sink' must be one of iceberg, databend"),
        ({"sink": "databend"}, "field 'databend_stage_dir' is required with sink: databend"),
        ({"databend_dsn_env": "my dsn"}, "field 'databend_dsn_env' must name an environment variable"),
        ({"landed": "inbox"}, "field 'landed' must be a folder outside the input folder"),
        ({"landed": "inbox/done"}, "field 'landed' must be a folder outside the input folder"),
        ({"landed": ["done"]}, "field 'landed' must be a folder for the files once landed"),
    ],
)
def test_errors_name_the_file_and_the_field(tmp_path, change, message):
    path = write(tmp_path, {**VALID, **change})
    with pytest.raises(ConfigError) as error:
        load_config(path)
    assert str(path) in str(error.value)
    assert message in str(error.value)


def test_unreadable_and_invalid_yaml(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.yml")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(write(tmp_path, "input: [unclosed"))
