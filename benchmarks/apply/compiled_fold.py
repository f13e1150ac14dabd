"""What folding the driver's rows by generated code costs or saves a small batch
(adapter/dbt/adapters/cdc_spark/compiled_fold.py): the demo's cycles, landing included, alternating
with the compiled fold and with Spark's own interpreted one ($CDC_MERGE_COMPILED_FOLD=0), in one
process with one SparkSession; maintenance cycles left out of both medians. A batch of many rows:
`benchmarks.apply.key_index --modes index_kept,index_kept_spark_fold`.

    .venv/bin/python -m benchmarks.apply.compiled_fold [--cycles 24]

Writes benchmarks/results/compiled_fold.json and .log.
"""

from __future__ import annotations

import contextlib
import os

from benchmarks.common import demo_ab
from benchmarks.common.results import RESULTS_DIR


@contextlib.contextmanager
def spark_fold():
    """The baseline: Spark's ConvertToLocalRelation, as without the helpers' jar."""
    from dbt.adapters.cdc_spark.compiled_fold import SWITCH_ENV

    os.environ[SWITCH_ENV] = "0"
    try:
        yield
    finally:
        del os.environ[SWITCH_ENV]


def main(argv: list[str] | None = None) -> int:
    return demo_ab.alternate(__doc__.split("\n\n")[0], argv, RESULTS_DIR / "compiled_fold.json",
                             "compiled_fold", "spark_fold", spark_fold)


if __name__ == "__main__":
    raise SystemExit(main())
