"""Throwaway copies of this dbt project for the benchmarks (harness/dbt_project.py makes them).

Each copy has the project's dbt_project.yml, macros and landing model unchanged; its
models/mirrors/ holds only the benchmark's own cdc_merge mirrors. dbt runs in this process,
on the benchmark's SparkSession (dbt-spark's session method picks up the active session).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import yaml

from benchmarks.common.datagen import COLUMNS, SOURCE_TABLE
from harness.dbt_project import PROJECT_DIR, copy_project, error_text, run_dbt

MIRROR_MODEL = """{{{{ config(unique_key='id', source_table='{source_table}'{more_config}) }}}}

with

events as (

    select * from {{{{ cdc_merge.cdc_events(ref('raw_events')) }}}}

),

final as (

    select
{columns},
        {{{{ cdc_merge.cdc_metadata_columns() }}}}
    from events

)

select * from final
"""

# dbt-spark's built-in incremental MERGE, written as a dbt user would for this raw log: new
# events are those after the mirror's newest seq (passed as a var so no extra target scan is
# timed); bench_dedup=true adds the ROW_NUMBER dedup the built-in strategy lacks.
BUILTIN_MODEL = """{{{{ config(
    materialized='incremental',
    incremental_strategy='merge',
    file_format='iceberg',
    unique_key='_cdc_key',
    alias='{alias}',
    on_schema_change='ignore',
) }}}}

with

events as (

    select *
    from {{{{ ref('raw_events') }}}}
    where
        table_name = '{source_table}'
        {{% if is_incremental() %}}
        and seq > '{{{{ var("bench_after_seq") }}}}'
        {{% endif %}}

),

{{% if var('bench_dedup', false) %}}
ranked as (

    select
        *,
        row_number() over (partition by key order by seq desc) as event_rank
    from events

),

newest as (

    select * from ranked where event_rank = 1

),
{{% else %}}
newest as (

    select * from events

),
{{% endif %}}

final as (

    select
        parsed.*,
        key as _cdc_key,
        seq as _cdc_seq,
        source_ts as _cdc_source_ts
    from (
        select
            key,
            seq,
            source_ts,
            from_json(coalesce(raw_data, before_data), '{schema}') as parsed
        from newest
    )

)

select * from final
"""

# Models of this materialization cost what dbt itself does (many_mirrors and databend_idle compare with it).
NOOP_MATERIALIZATION = """{% materialization bench_noop, default %}
    {#- dbt's own cost of a model: no SQL at all. -#}
    {% do store_raw_result('main', message='OK', code='OK', rows_affected=0) %}
    {{ return({'relations': []}) }}
{% endmaterialization %}
"""


def model_columns_sql(indent: str = "        ") -> str:
    entries = "".join(f"\n{indent}    '{name}': '{dtype}'," for name, dtype in COLUMNS)
    return f"{indent}{{{{ cdc_merge.cdc_columns({{{entries}\n{indent}}}) }}}}"


class BenchProject:
    """One copy of the project: write models, run dbt in-process, time it."""

    def __init__(self, root: Path, schema: str, raw_schema: str, inbox: Path, source_tables: int = 100):
        """source_tables: the landing config captures bench.items and bench.items_0 .. _<source_tables - 1>."""
        self.dir = root
        self.schema = schema
        self.raw_schema = raw_schema
        shutil.rmtree(root, ignore_errors=True)
        copy_project(root, root / "landing.yml", mirrors=[], history=False, data_tests=False)
        landing = {
            "input": str(inbox),
            "checkpoint": str(root / "checkpoint"),
            "raw_table": f"{raw_schema}.raw_events",
            "quarantine_table": f"{raw_schema}.quarantine",
            "format": "debezium",
            "max_files_per_batch": 1000,
            "file_glob": "*.json",
            "tables": {SOURCE_TABLE: {"key": ["id"]}, **{f"bench.items_{n}": {"key": ["id"]} for n in range(source_tables)}},
        }
        inbox.mkdir(parents=True, exist_ok=True)
        (root / "landing.yml").write_text(yaml.safe_dump(landing))

    def write_mirror(self, name: str, source_table: str = SOURCE_TABLE, columns: str | None = None, more_config: str = "") -> None:
        """columns: the model's column list (default: datagen's COLUMNS); more_config: e.g. ", deletes='soft'"."""
        sql = MIRROR_MODEL.format(source_table=source_table, columns=columns or model_columns_sql(), more_config=more_config)
        (self.dir / "models" / "mirrors" / f"{name}.sql").write_text(sql)

    def write_builtin(self, name: str, alias: str) -> None:
        folder = self.dir / "models" / "builtin"
        folder.mkdir(exist_ok=True)
        schema = ", ".join(f"{column} {dtype}" for column, dtype in COLUMNS)
        (folder / f"{name}.sql").write_text(BUILTIN_MODEL.format(alias=alias, source_table=SOURCE_TABLE, schema=schema))

    def dbt(self, *args: str, expect_success: bool = True):
        """Run dbt in this process; returns (result, seconds)."""
        started = time.perf_counter()
        # artifacts: dbt writes target/*.json as a user's `dbt run` does; the figures in BENCHMARKS.md include it.
        result = run_dbt(self.dir, *args, schema=self.schema, raw_schema=self.raw_schema, artifacts=True, quiet=True)
        seconds = time.perf_counter() - started
        if expect_success and not result.success:
            raise RuntimeError(f"dbt {' '.join(args)} failed: {error_text(result)}")
        return result, seconds


def demo_project(work: Path, schema: str, raw_schema: str) -> BenchProject:
    """A BenchProject of the demo's four mirrors (models/mirrors/), its landing config taking the demo
    source's tables (python_jobs/demo/generate.py); its inbox is work/inbox_demo. Raw tables not made yet."""
    from python_jobs.demo.generate import KEYS

    project = BenchProject(work / "project_demo", schema, raw_schema, work / "inbox_demo")
    for model in (PROJECT_DIR / "models" / "mirrors").glob("*.sql"):
        shutil.copy(model, project.dir / "models" / "mirrors" / model.name)
    landing = project.dir / "landing.yml"
    config = yaml.safe_load(landing.read_text())
    config["tables"] = {**{table: {"key": list(key)} for table, key in KEYS.items()}, "inventory.products": {"key": ["id"]}}
    landing.write_text(yaml.safe_dump(config))
    return project
