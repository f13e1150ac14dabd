"""The Databend relation (adapter/dbt/adapters/cdc_databend/relation.py): the type dbt's macros give
`api.Relation.create` is kept, and the database is none as in dbt-databend-cloud."""

from __future__ import annotations

from dbt.adapters.cdc_databend.relation import CdcDatabendRelation
from dbt.adapters.contracts.relation import RelationType


def test_the_type_a_macro_gives_is_kept():
    relation = CdcDatabendRelation.create(database=None, schema="mirror", identifier="snap", type="table")
    assert relation.type == RelationType.Table and relation.is_table
    assert relation.render() == "mirror.snap"


def test_rt_still_sets_the_type_and_wins():
    assert CdcDatabendRelation.create(schema="mirror", identifier="v", rt=RelationType.View).is_view
    assert CdcDatabendRelation.create(schema="mirror", identifier="v", rt=RelationType.View, type="table").is_view


def test_no_type_stays_none_and_the_database_is_dropped():
    relation = CdcDatabendRelation.create(database="mirror", schema="mirror", identifier="t")
    assert relation.type is None and relation.database is None


def test_a_result_columns_type_is_named_as_the_cursor_describes_it():
    from dbt.adapters.cdc_databend.impl import CdcDatabendConnectionManager

    assert CdcDatabendConnectionManager.data_type_code_to_name("Timestamp") == "Timestamp"
