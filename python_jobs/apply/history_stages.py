"""Which steps of a history's chain (macros/materializations/cdc_history/chain.sql) Spark computes
first, each once, before the changes that read them.

Spark inlines every deterministic CTE where it is read, so a CTE read by three others is computed
three times, and those it reads again beneath each: the chain of a resnapshot's 200,000 keys read
the raw log 55 times and the history 17. A step computed beforehand (a local checkpoint) is read
from memory instead; a step's statement ends with the CTE it computes, since Spark analyzes every
CTE of a statement, read or not. Each step costs a Spark job of its own (0.3-0.5 s each with 20 events into
2,000 versions), and yet a batch of any size into a history of any size is faster in steps,
measured on 2 cores (the history's `dbt run` after each batch, medians;
benchmarks.history.small_batches, which alternates the two ways):
    20 events into 2,000 versions       4.91 s one statement, 3.55 s in steps
    200 events into 1M versions         7.95 s and 4.76 s
    5,000 and 20,000 events             16.0 and 26.5 s, 11.1 and 15.8 s (a resnapshot's batch)
A session that keeps no computed relation (Databend, a Thrift server's) keeps one statement.
"""

from typing import List


def chain_stages(checkpoints: bool, from_range_deletes: bool, ranged: bool) -> List[str]:
    """The chain's CTEs to compute first, in order (each reads only those before it or its inputs).

    checkpoints: whether the engine keeps a computed relation in this process; from_range_deletes:
    whether the chain is that of the keys an online snapshot's ranges close (chain_range_deletes in
    place of the batch's events); ranged: whether the batch's chain finds the deletes of online
    snapshot ranges (chain_range_closed, read by the chain and the deletes table's rows)."""
    if not checkpoints:
        return []
    events = "chain_range_deletes" if from_range_deletes else "chain_model_events"
    return [events, "chain_stored", "chain_filled", *(["chain_range_closed"] if ranged else []), "chain_computed"]
