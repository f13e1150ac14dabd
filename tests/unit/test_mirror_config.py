"""A mirror model's configs checked before any SQL (python_jobs/apply/mirror_config.py): each error says
what to change; tests/test_materialization.py shows one reaching `dbt run` before any statement."""

from __future__ import annotations

import pytest

from python_jobs.apply.mirror_config import (ConfigError, cdc_history_config, cdc_merge_config, config_names, maintenance_config,
                                            misspelled_names)

PREFIX = "cdc_merge model 'products': "
GOOD = {"unique_key": "id", "source_table": "inventory.products", "offsets_schema": "mirror"}
DEBEZIUM = {"path": "landing.yml", "format": "debezium", "tables": ["inventory.products"]}


def merge_config(settings, landings=(), upstream=1, change_streams=False, on_schema_change_set=False):
    return cdc_merge_config(PREFIX, settings, landings, upstream, change_streams, "cdc_spark", on_schema_change_set)


@pytest.mark.parametrize(
    "settings, upstream, message",
    [
        ({"source_table": "inventory.products"}, 1, "set unique_key to the primary-key column"),
        ({**GOOD, "unique_key": ["id", "id; drop table x"]}, 1, "unique_key entry id; drop table x is not a column name"),
        ({**GOOD, "source_table": "products"}, 1, "set source_table to the schema-qualified source table whose events this model applies"),
        ({"unique_key": "id", "offsets_schema": "m"}, 1, "(got None)"),
        ({**GOOD, "deletes": "archive"}, 1, "deletes must be 'hard' (remove the row) or 'soft'"),
        ({**GOOD, "max_events_per_chunk": 0}, 1, "max_events_per_chunk must be a positive whole number of raw events, got 0"),
        ({**GOOD, "max_events_per_chunk": "lots"}, 1, "got lots"),
        ({**GOOD, "max_events_per_chunk": 2.5}, 1, "got 2.5"),
        ({**GOOD, "table_properties": "fast"}, 1, "table_properties must be a mapping"),
        ({**GOOD, "offsets_schema": ""}, 1, "offsets_schema must name the schema"),
        (GOOD, 2, "a cdc_merge model reads exactly one raw table, through {{ cdc_merge.cdc_events(ref('raw_events')) }}; "
                  "it depends on 2 relations"),
        ({**GOOD, "change_source": "kafka"}, 1, "change_source must be 'changes'"),
        ({**GOOD, "change_source": "stream"}, 1, "change_source='stream' is for Databend targets; on cdc_spark remove it"),
        ({**GOOD, "consistency_group": "shop-1"}, 1, "consistency_group must be a name"),
        ({**GOOD, "maintenance": "weekly"}, 1, "maintenance must be 'auto'"),
        ({**GOOD, "orphan_file_min_age_hours": 12}, 1, "orphan_file_min_age_hours must be hours: at least 24"),
        ({**GOOD, "maintenance_max_snapshots": 2.5}, 1, "maintenance_max_snapshots must be a whole number"),
        ({**GOOD, "maintenance_max_files": 0}, 1, "maintenance_max_files must be"),
        ({**GOOD, "runs_history_days": True}, 1, "runs_history_days must be days"),
    ],
)
def test_each_bad_config_is_refused_with_what_to_change(settings, upstream, message):
    with pytest.raises(ConfigError) as refused:
        merge_config(settings, upstream=upstream)
    assert str(refused.value).startswith(PREFIX) and message in str(refused.value)


def test_a_good_config_gets_the_package_defaults():
    config = merge_config(GOOD)
    assert config["unique_key"] == ["id"] and config["deletes"] == "hard" and config["change_source"] == "changes"
    assert config["max_events_per_chunk"] == 1_000_000 and config["table_properties"] == {}
    # dbt gives every model on_schema_change 'ignore' when nothing sets it: only a setting counts.
    assert config["on_schema_change"] == "append_new_columns"
    assert merge_config({**GOOD, "on_schema_change": "ignore"}, on_schema_change_set=True)["on_schema_change"] == "ignore"
    assert config["maintenance"]["maintenance_max_files"] == 100 and config["maintenance"]["raw_retention_hours"] is None


def test_numbers_written_as_text_in_dbt_project_yml_are_read_as_numbers():
    config = merge_config({**GOOD, "max_events_per_chunk": "5000", "maintenance_max_age_hours": "1.5",
                           "raw_retention_hours": "none"})
    assert config["max_events_per_chunk"] == 5000 and config["maintenance"]["maintenance_max_age_hours"] == 1.5
    assert config["maintenance"]["raw_retention_hours"] is None


def test_a_table_the_debezium_landing_does_not_capture_is_named():
    assert merge_config(GOOD, landings=[DEBEZIUM])["source_table"] == "inventory.products"
    with pytest.raises(ConfigError, match="source_table inventory.orders is not captured by the landing config landing.yml"):
        merge_config({**GOOD, "source_table": "inventory.orders"}, landings=[DEBEZIUM])
    # Other formats carry their table in each event: any table lands.
    assert merge_config({**GOOD, "source_table": "inventory.orders"}, landings=[{**DEBEZIUM, "format": "canal"}])


def test_a_unique_key_that_is_not_the_captured_key_is_refused():
    """The raw log keys events by the landing config's key; cdc-verify and online snapshot ranges read unique_key."""
    landing = {**DEBEZIUM, "keys": {"inventory.products": ["id"]}}
    with pytest.raises(ConfigError, match=r"unique_key \['name'\] is not the key landing.yml captures inventory.products by "
                                          r"\(\['id'\]\).*Set unique_key='id'"):
        merge_config({**GOOD, "unique_key": "name"}, landings=[landing])
    assert merge_config({**GOOD, "unique_key": "ID"}, landings=[landing])["unique_key"] == ["ID"]
    pair = {**DEBEZIUM, "keys": {"inventory.products": ["a", "b"]}}
    assert merge_config({**GOOD, "unique_key": ["b", "a"]}, landings=[pair])["unique_key"] == ["b", "a"]
    with pytest.raises(ConfigError, match=r"Set unique_key=\['a', 'b'\]"):
        merge_config({**GOOD, "unique_key": ["a"]}, landings=[pair])
    # Configured keys win in every format (Canal's pkNames, Maxwell's, GoldenGate's, wal2json's pk are not asked).
    for form in ("canal", "maxwell", "ogg", "wal2json", "auto"):
        with pytest.raises(ConfigError, match=r"unique_key \['name'\] is not the key"):
            merge_config({**GOOD, "unique_key": "name"}, landings=[{**landing, "format": form}])
    # A table whose key the config leaves to the events: each event names its own, not known before a run.
    assert merge_config({**GOOD, "unique_key": "name"}, landings=[{**landing, "format": "canal", "keys": {}}])


def test_streams_and_groups_need_what_they_need():
    assert merge_config({**GOOD, "change_source": "stream"}, change_streams=True)["change_source"] == "stream"
    with pytest.raises(ConfigError, match="consistency_group needs change_source='changes'"):
        merge_config({**GOOD, "change_source": "stream", "consistency_group": "shop"}, change_streams=True)


def test_a_history_model_has_its_own_configs():
    prefix = "cdc_history model 'h': "
    config = cdc_history_config(prefix, {**GOOD, "track_columns": "status"}, [], 1)
    assert config["track_columns"] == ["status"] and config["allow_trimmed_log"] is False
    # dbt gives every model on_schema_change 'ignore': only a setting counts; a history adds new columns.
    assert config["on_schema_change"] == "append_new_columns"
    assert cdc_history_config(prefix, {**GOOD, "on_schema_change": "fail"}, [], 1, True)["on_schema_change"] == "fail"
    with pytest.raises(ConfigError, match="on_schema_change must be 'append_new_columns'"):
        cdc_history_config(prefix, {**GOOD, "on_schema_change": "drop"}, [], 1, True)
    for settings, message in (({**GOOD, "track_columns": []}, "track_columns must be a non-empty list"),
                              ({**GOOD, "allow_trimmed_log": "yes"}, "allow_trimmed_log must be true or false"),
                              ({**GOOD, "deletes": "x"}, "a delete closes the key's current version"),
                              ({**GOOD, "source_table": "x"}, "whose events this model records")):
        with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
            cdc_history_config(prefix, settings, [], 1)


def test_cdc_maintain_arguments_are_checked_alone():
    assert maintenance_config("cdc_maintain: ", {"maintenance_max_files": "7"})["maintenance_max_files"] == 7
    with pytest.raises(ConfigError, match="cdc_maintain: tombstone_horizon_hours must be hours"):
        maintenance_config("cdc_maintain: ", {"tombstone_horizon_hours": -1})


def test_a_history_is_maintained_without_raw_retention_or_collecting_its_deletes():
    """A history's maintenance settings are checked as a mirror's, but it never trims the raw log
    nor its deletes table, whatever a folder's config or cdc_maintain's arguments for every model set."""
    prefix = "cdc_history model 'customers_versions': "
    config = cdc_history_config(prefix, {**GOOD, "maintenance_max_snapshots": "5", "raw_retention_hours": 0,
                                         "tombstone_horizon_hours": 0}, [], 1)
    assert config["maintenance"]["maintenance_max_snapshots"] == 5
    assert config["maintenance"]["raw_retention_hours"] is None and config["maintenance"]["tombstone_horizon_hours"] is None
    called = maintenance_config("cdc_maintain: ", {"raw_retention_hours": 0, "tombstone_horizon_hours": 0}, "cdc_history")
    assert called["raw_retention_hours"] is None and called["tombstone_horizon_hours"] is None
    assert maintenance_config("cdc_maintain: ", {"raw_retention_hours": 0})["raw_retention_hours"] == 0
    with pytest.raises(ConfigError, match="maintenance_max_files must be"):
        cdc_history_config(prefix, {**GOOD, "maintenance_max_files": 0}, [], 1)
    assert "maintenance_max_files" in config_names("cdc_history")


@pytest.mark.parametrize("name, value", [("partition_by", ["region"]), ("clustered_by", "id"), ("cluster_by", ["id"])])
def test_a_table_layout_config_is_refused_not_ignored(name, value):
    with pytest.raises(ConfigError, match=f"{name} is not applied by cdc_merge: .*Remove it from the model's config"):
        merge_config({**GOOD, name: value})
    with pytest.raises(ConfigError, match=f"{name} is not applied by cdc_history"):
        cdc_history_config(PREFIX, {**GOOD, name: value}, [], 1)


@pytest.mark.parametrize("name, meant", [("delete", "deletes"), ("unique_kee", "unique_key"), ("source_tabel", "source_table"),
                                         ("offset_schema", "offsets_schema"), ("track_column", "track_columns")])
def test_a_misspelled_config_name_is_refused_not_ignored(name, meant):
    """dbt keeps any config name: delete='soft' built a hard mirror without a word."""
    with pytest.raises(ConfigError, match=f"{name} is not a config of cdc_merge, which would ignore it: did you mean {meant}?"):
        misspelled_names(PREFIX, "cdc_merge", ["materialized", name])


def test_dbt_and_adapter_config_names_are_not_taken_for_misspellings():
    from dbt.artifacts.resources import NodeConfig, SnapshotConfig

    names = [*NodeConfig.__dataclass_fields__, *SnapshotConfig.__dataclass_fields__, "file_format", "location_root",
             "options", "merge_update_columns", "landing_config", "quarantine_table", *config_names("cdc_history")]
    misspelled_names(PREFIX, "cdc_merge", names)
