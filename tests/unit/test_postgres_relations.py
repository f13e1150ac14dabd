"""Which captured tables were replaced under their names (python_jobs/capture/postgres_relations.py)."""

from python_jobs.capture.postgres_relations import replaced, resumed


def test_a_name_that_is_another_relation_is_replaced_and_a_table_gone_is_not():
    known = {"shop.a": 10, "shop.b": 20, "shop.c": 30}
    assert replaced(known, {"shop.a": 10, "shop.b": 21}) == ["shop.b"]
    assert replaced(known, {"shop.new": 40}) == []


def test_the_state_relations_win_over_the_current_ones_and_new_tables_take_the_current():
    assert resumed({"relations": {"shop.a": 10}}, {"shop.a": 11, "shop.b": 20}) == {"shop.a": 10, "shop.b": 20}
    assert resumed({}, {"shop.a": 11}) == {"shop.a": 11}
