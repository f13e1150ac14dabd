from python_jobs.apply.history_stages import chain_stages


def test_nothing_is_staged_where_the_engine_keeps_no_computed_relation():
    assert chain_stages(checkpoints=False, from_range_deletes=False, ranged=True) == []


def test_a_batch_computes_each_step_once_in_the_order_they_read_each_other():
    assert chain_stages(checkpoints=True, from_range_deletes=False, ranged=False) == [
        "chain_model_events", "chain_stored", "chain_filled", "chain_computed"]


def test_a_batch_with_ranges_keeps_the_deletes_they_close_keys_with():
    stages = chain_stages(checkpoints=True, from_range_deletes=False, ranged=True)
    assert stages.index("chain_filled") < stages.index("chain_range_closed") < stages.index("chain_computed")


def test_the_keys_ranges_close_are_staged_from_the_deletes_they_make():
    assert chain_stages(checkpoints=True, from_range_deletes=True, ranged=False)[0] == "chain_range_deletes"
