"""Which steps of a history's chain (macros/materializations/cdc_history/chain.sql) Spark computes
first, each once, before the changes that read them.

Spark inlines every deterministic CTE where it is read, so a CTE read by three others is computed
three times, and those it reads again beneath each: the chain of a resnapshot's 200,000 keys read
the raw log 55 times and the history 17. A step computed beforehand (a local checkpoint) is read
from memory instead. Each costs a Spark job of its own, so a batch of few events stays one statement.
The keys an online snapshot's ranges close are always staged: their chain reads the whole history
(chain_stored) however few keys close, and that is one scan a step instead of one a reference.
"""

from typing import List

# Below this many events in a batch its chain stays one statement. Measured on 2 cores (resnapshot
# benchmark, --history, a batch of every row): 5,000 events 16.0 s one statement, 11.1 s in steps;
# 20,000 events 26.5 s and 15.8 s. Batches of about 200 events: even (19.6 s and 21.1 s a test).
STAGED_FROM_ROWS = 1_000


def chain_stages(rows: int, checkpoints: bool, from_range_deletes: bool, ranged: bool) -> List[str]:
    """The chain's CTEs to compute first, in order (each reads only those before it or its inputs).

    rows: the events of the batch, or the keys the ranges close (from_range_deletes); checkpoints:
    whether the engine keeps a computed relation in this process; ranged: whether the batch's chain
    finds the deletes of online snapshot ranges (chain_range_closed, read by the chain and the
    deletes table's rows)."""
    if not checkpoints or (rows < STAGED_FROM_ROWS and not from_range_deletes):
        return []
    events = "chain_range_deletes" if from_range_deletes else "chain_model_events"
    return [events, "chain_stored", "chain_filled", *(["chain_range_closed"] if ranged else []), "chain_computed"]
