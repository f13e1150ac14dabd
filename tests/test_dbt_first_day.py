"""What a dbt user's first day does with cdc_merge models, beyond tests/test_dbt_commands.py: the
command lines and configs a dbt user reaches for, each ending with mirrors that equal the raw log
or a clear error.
Why over 300 lines: twelve short commands of a first day on one project set-up."""

from __future__ import annotations

import shutil

from harness.dbt_project import error_text
from test_dbt_commands import COLUMNS, CONFIG, FLINK_MYSQL, PRODUCTS, PRODUCTS_YML, applied_project, mysql_line, node_statuses

HISTORY_CONFIG = "materialized='cdc_history', " + CONFIG


def count(project, model: str) -> int:
    return project.query(f"select count(*) as n from {project.schema}.{model}")[0]["n"]


def test_a_mirror_or_history_made_again_by_an_empty_run_is_filled_from_the_whole_log_next(conformance_project):
    """`dbt run --empty` creates a missing mirror without rows, and `--full-refresh --empty` a history:
    the offsets they had must not survive them, or the next run starts there and never applies the
    events before it."""
    project = conformance_project
    project.write_model("products", CONFIG, COLUMNS)
    project.write_model("products_history", HISTORY_CONFIG, COLUMNS)
    shutil.copy(FLINK_MYSQL, project.inbox / "part-1.json")
    project.land(PRODUCTS)
    project.dbt("run", "--select", "products", "products_history")
    versions = count(project, "products_history")
    assert (count(project, "products"), versions) == (10, 15)

    # The mirror dropped by hand (its offsets kept) and made again by --empty; the history rebuilt by --empty.
    project.execute(f"drop table {project.schema}.products")
    project.dbt("run", "--select", "products", "--empty")
    project.dbt("run", "--select", "products_history", "--full-refresh", "--empty")
    assert (count(project, "products"), count(project, "products_history")) == (0, 0)

    project.dbt("run", "--select", "products", "products_history")
    assert (count(project, "products"), count(project, "products_history")) == (10, versions)


UNIT_TESTS_YML = """
version: 2
unit_tests:
  - name: products_newest_event_per_key
    model: products
    given:
      - input: ref('raw_events')
        rows:
          - {table_name: inventory.products, key: '[1]', action: insert, seq: 1, raw_data: '{"id": 1, "name": "a"}'}
          - {table_name: inventory.products, key: '[1]', action: update, seq: 3, raw_data: '{"id": 1, "name": "c"}'}
          - {table_name: inventory.products, key: '[1]', action: update, seq: 2, raw_data: '{"id": 1, "name": "b"}'}
          - {table_name: inventory.products, key: '[2]', action: delete, seq: 4, before_data: '{"id": 2, "name": "x"}'}
          - {table_name: inventory.orders, key: '[3]', action: insert, seq: 5, raw_data: '{"id": 3, "name": "o"}'}
    expect:
      rows:
        - {id: 1, name: c, _cdc_action: update}
        - {id: 2, name: x, _cdc_action: delete}
  - name: products_history_every_version
    model: products_history
    given:
      - input: ref('raw_events')
        rows:
          - {table_name: inventory.products, key: '[1]', action: insert, seq: 1, raw_data: '{"id": 1, "name": "a"}'}
          - {table_name: inventory.products, key: '[1]', action: update, seq: 2, raw_data: '{"id": 1, "name": "b"}'}
    expect:
      rows:
        - {id: 1, name: a}
        - {id: 1, name: b}
"""


def test_unit_tests_of_a_mirror_and_a_history_read_the_raw_rows_they_give(dbt_project):
    """A unit test's model is the unit test, not the mirror: cdc_events() must still find the mirror's
    config, or the test fails and `dbt build` skips the mirror it tests. Spark only: the local Databend
    stand-in cannot plan a fixture's CTE read from inside the batch query's own WITH."""
    project = dbt_project
    project.write_model("products", CONFIG, COLUMNS)
    project.write_model("products_history", HISTORY_CONFIG, COLUMNS)
    (project.project_dir / "models" / "mirrors" / "_unit_tests.yml").write_text(UNIT_TESTS_YML)
    result = project.dbt("build", "--select", "products", "products_history", expect_success=False)
    assert {r.node.name: str(r.status) for r in result.result.results} == {
        "products_newest_event_per_key": "pass", "products_history_every_version": "pass",
        "products": "success", "products_history": "success"}, error_text(result)


CONTRACTS_YML = """
version: 2
models:
  - name: products_contract_kept
    config: {contract: {enforced: true}}
    columns:
      - {name: id, data_type: integer}
      - {name: name, data_type: varchar(20)}
      - {name: _cdc_key, description: the materialization's own column}
  - name: products_contract_broken
    config: {contract: {enforced: true}}
    columns:
      - {name: id, data_type: bigint}
      - {name: name, data_type: string}
"""


def test_an_enforced_contract_of_a_mirror_is_checked_before_it_is_written(conformance_project):
    """dbt's table materialization fails a model whose columns differ from its enforced contract; so
    does a mirror, before it is created, rather than take the types its model casts to."""
    project = conformance_project
    for name in ("products_contract_kept", "products_contract_broken"):
        project.write_model(name, CONFIG, COLUMNS)
    (project.project_dir / "models" / "mirrors" / "_contracts.yml").write_text(CONTRACTS_YML)
    shutil.copy(FLINK_MYSQL, project.inbox / "part-1.json")
    project.land(PRODUCTS)
    result = project.dbt("run", "--select", "products_contract_kept", "products_contract_broken", expect_success=False)
    assert {r.node.name: str(r.status) for r in result.result.results} == {
        "products_contract_kept": "success", "products_contract_broken": "error"}
    assert "id is int in the model but declared bigint" in error_text(result), error_text(result)
    assert count(project, "products_contract_kept") == 10
    assert not project.query(f"select * from information_schema.tables where table_schema = '{project.schema}'"
                             " and table_name = 'products_contract_broken'") if project.on_databend else not \
        project.spark.catalog.tableExists(f"{project.schema}.products_contract_broken")


def test_a_mirror_whose_deletes_mode_changed_is_refused_until_rebuilt(conformance_project):
    """A soft mirror applied as hard would keep its deleted rows as live ones (10 rows where the log
    has 9); a hard one applied as soft fails on a column it lacks. dbt_project.yml sets deletes from a var."""
    project = conformance_project
    project.write_model("was_soft", CONFIG + ", deletes='soft'", COLUMNS)
    project.write_model("was_hard", CONFIG + ", deletes='hard'", COLUMNS)
    shutil.copy(FLINK_MYSQL, project.inbox / "part-1.json")
    project.land(PRODUCTS)
    project.dbt("run", "--select", "was_soft", "was_hard")
    # The fixture deletes 111; 102 deleted now.
    (project.inbox / "part-2.json").write_text(mysql_line("d", 20, {"id": 102, "name": "car battery"}) + "\n")
    project.land(PRODUCTS)
    project.write_model("was_soft", CONFIG + ", deletes='hard'", COLUMNS)
    project.write_model("was_hard", CONFIG + ", deletes='soft'", COLUMNS)
    failed = project.dbt("run", "--select", "was_soft", "was_hard", expect_success=False)
    message = error_text(failed)
    assert "was built with deletes='soft' and the model now says deletes='hard'" in message, message
    assert "was built with deletes='hard' and the model now says deletes='soft'" in message, message
    assert (count(project, "was_soft"), count(project, "was_hard")) == (11, 10)

    project.dbt("run", "--select", "was_soft", "was_hard", "--full-refresh")
    assert count(project, "was_soft") == 9
    assert project.query(f"select count(*) as n from {project.schema}.was_hard where not _cdc_deleted")[0]["n"] == 9


def test_a_history_whose_deletes_mode_changed_is_refused_until_rebuilt(conformance_project):
    """A history always has is_deleted, so it records its deletes mode (a table property; on Databend a row of
    cdc_merge_table_settings): applied in the other mode it would hold both modes' versions. One built before
    the mode was recorded is applied as configured, and records it."""
    project = conformance_project
    project.write_model("hist_soft", HISTORY_CONFIG + ", deletes='soft'", COLUMNS)
    project.write_model("hist_hard", HISTORY_CONFIG + ", deletes='hard'", COLUMNS)
    shutil.copy(FLINK_MYSQL, project.inbox / "part-1.json")
    project.land(PRODUCTS)
    project.dbt("run", "--select", "hist_soft", "hist_hard")
    # hist_hard as a history stored before the mode was recorded; then 102 deleted.
    project.execute(f"delete from {project.schema}.cdc_merge_table_settings where target_table = '{project.schema}.hist_hard'"
                    if project.on_databend else
                    f"alter table {project.schema}.hist_hard unset tblproperties ('cdc-merge.deletes')")
    (project.inbox / "part-2.json").write_text(mysql_line("d", 20, {"id": 102, "name": "car battery"}) + "\n")
    project.land(PRODUCTS)
    project.dbt("run", "--select", "hist_soft", "hist_hard")
    versions = (count(project, "hist_soft"), count(project, "hist_hard"))

    (project.inbox / "part-3.json").write_text(mysql_line("u", 30, {"id": 101, "name": "e-scooter"}) + "\n")
    project.land(PRODUCTS)
    project.write_model("hist_soft", HISTORY_CONFIG + ", deletes='hard'", COLUMNS)
    project.write_model("hist_hard", HISTORY_CONFIG + ", deletes='soft'", COLUMNS)
    failed = project.dbt("run", "--select", "hist_soft", "hist_hard", expect_success=False)
    message = error_text(failed)
    assert "cdc_history model 'hist_soft'" in message and "hist_soft was built with deletes='soft' and the model now says" \
        " deletes='hard'. Rebuild it from the raw log in the new mode with `dbt run --full-refresh --select hist_soft`" in message, message
    assert "hist_hard was built with deletes='hard' and the model now says deletes='soft'" in message, message
    assert (count(project, "hist_soft"), count(project, "hist_hard")) == versions

    project.dbt("run", "--select", "hist_soft", "hist_hard", "--full-refresh")
    deleted = "select count(*) as n from {}.{} where is_deleted"
    assert [project.query(deleted.format(project.schema, name))[0]["n"] for name in ("hist_soft", "hist_hard")] == [0, 2]
    project.dbt("run", "--select", "hist_soft", "hist_hard")


HISTORY_CONTRACTS_YML = """
version: 2
models:
  - name: history_contract_kept
    config: {contract: {enforced: true}}
    columns:
      - {name: id, data_type: integer}
      - {name: name, data_type: varchar(20)}
      - {name: valid_from, description: the materialization's own column}
      - {name: is_current, data_type: boolean}
  - name: history_contract_broken
    config: {contract: {enforced: true}}
    columns:
      - {name: id, data_type: %s}
      - {name: name, data_type: string}
"""


def test_an_enforced_contract_of_a_history_is_checked_before_it_is_written(conformance_project):
    """As a mirror's: a history whose model breaks its enforced contract is not created, and a stored one
    is not dropped by --full-refresh; its own columns (valid_from, is_current, ...) need no entry."""
    project = conformance_project
    for name in ("history_contract_kept", "history_contract_broken"):
        project.write_model(name, HISTORY_CONFIG, COLUMNS)
    contracts = project.project_dir / "models" / "mirrors" / "_contracts.yml"
    contracts.write_text(HISTORY_CONTRACTS_YML % "bigint")
    shutil.copy(FLINK_MYSQL, project.inbox / "part-1.json")
    project.land(PRODUCTS)
    result = project.dbt("run", "--select", "history_contract_kept", "history_contract_broken", expect_success=False)
    assert {r.node.name: str(r.status) for r in result.result.results} == {
        "history_contract_kept": "success", "history_contract_broken": "error"}, error_text(result)
    assert "cdc_history model 'history_contract_broken': its enforced contract differs from the model's columns: id is int" \
        " in the model but declared bigint" in error_text(result), error_text(result)
    assert count(project, "history_contract_kept") == 15
    assert not project.query(f"select * from information_schema.tables where table_schema = '{project.schema}'"
                             " and table_name = 'history_contract_broken'") if project.on_databend else not \
        project.spark.catalog.tableExists(f"{project.schema}.history_contract_broken")

    # Kept, then broken: --full-refresh fails before it drops the history.
    contracts.write_text(HISTORY_CONTRACTS_YML % "int")
    project.dbt("run", "--select", "history_contract_broken")
    contracts.write_text(HISTORY_CONTRACTS_YML % "bigint")
    project.dbt("run", "--select", "history_contract_broken", "--full-refresh", expect_success=False)
    assert count(project, "history_contract_broken") == 15


SNAPSHOT_YML = """
snapshots:
  - name: products_snapshot
    relation: ref('products')
    config: {schema: "%s", unique_key: id, strategy: check, check_cols: all, file_format: iceberg}
"""


def test_a_snapshot_of_a_mirror_keeps_its_rows_versions(conformance_project):
    """dbt's check strategy reads an unset `query_columns` the first time, which a root project's macro
    of that name would fill in: the first `dbt snapshot` of any model would fail ('MacroGenerator'
    object is not iterable). On Databend dbt-databend-cloud has no snapshot of its own, and dbt's named
    now() where each call differs: a new row could be stored with a dbt_valid_to, not current."""
    project = conformance_project
    project.write_model("products", CONFIG, COLUMNS)
    (project.project_dir / "snapshots").mkdir()
    (project.project_dir / "snapshots" / "products_snapshot.yml").write_text(SNAPSHOT_YML % project.schema)
    shutil.copy(FLINK_MYSQL, project.inbox / "part-1.json")
    project.land(PRODUCTS)
    project.dbt("build", "--select", "products+")
    current = f"select count(*) as n from {project.schema}.products_snapshot where dbt_valid_to is null"
    assert project.query(current)[0]["n"] == 10
    (project.inbox / "part-2.json").write_text(mysql_line("u", 10, {"id": 101, "name": "e-scooter"}) + "\n")
    project.land(PRODUCTS)
    project.dbt("build", "--select", "products+")
    versions = project.query(f"select name, dbt_valid_to is null as current from {project.schema}.products_snapshot "
                             "where id = 101 order by dbt_valid_from")
    assert [(row["name"], row["current"]) for row in versions] == [("scooter", False), ("e-scooter", True)]
    assert project.query(current)[0]["n"] == 10


def test_an_empty_build_lands_no_file_and_the_next_run_lands_and_applies_them(conformance_project):
    """`dbt run --empty` runs models without their data: landing the new files then would move the
    checkpoint on (and the files out of the inbox where landed_dir is set) in a run meant to apply nothing."""
    project = conformance_project
    project.write_model("products", CONFIG, COLUMNS)
    shutil.copy(FLINK_MYSQL, project.inbox / "part-1.json")
    project.landing_config(PRODUCTS)
    project.dbt("run", "--select", "raw_events", "products", "--empty")
    raw = f"{project.raw_schema}.raw_events"
    assert (project.query(f"select count(*) as n from {raw}")[0]["n"], count(project, "products")) == (0, 0)
    project.dbt("run", "--select", "raw_events", "products")
    assert project.query(f"select count(*) as n from {raw}")[0]["n"] > 0 and count(project, "products") == 10


CHANGES_MODEL = """
{{ config(materialized='table') }}
select * from ({{ cdc_merge.cdc_changes('inventory.products', '2020-01-01 00:00:00', mirror=ref('products')) }}) as changes
"""


def test_an_empty_run_of_a_model_reading_cdc_changes_gives_no_rows(conformance_project):
    """--empty renders ref() as a subquery of no rows; cdc_changes() reads the raw table's and the
    mirror's metadata too, which a subquery has none of (a syntax error at `(select ...).snapshots`)."""
    project = conformance_project
    project.write_model("products", CONFIG, COLUMNS)
    (project.project_dir / "models" / "mirrors" / "product_changes.sql").write_text(CHANGES_MODEL)
    shutil.copy(FLINK_MYSQL, project.inbox / "part-1.json")
    project.land(PRODUCTS)
    project.dbt("run", "--select", "products", "product_changes", "--empty")
    assert (count(project, "products"), count(project, "product_changes")) == (0, 0)
    project.dbt("run", "--select", "products", "product_changes")
    assert count(project, "product_changes") > 0


def test_a_mirror_given_an_offsets_schema_of_its_own_between_runs_applies_on(conformance_project):
    """offsets_schema set on a built mirror: its new schema has no offsets table yet. The run creates it and
    applies the whole log onto the mirror (the seq guard skips what it holds); the idle check read the missing
    table on Spark and failed with TABLE_OR_VIEW_NOT_FOUND."""
    project = applied_project(conformance_project)
    project.write_model("products", CONFIG + f", offsets_schema='{project.schema}_state'", COLUMNS)
    project.dbt("run", "--select", "products")
    rows = project.query(f"select id, name from {project.schema}.products order by id")
    assert len(rows) == 9 and rows[0] == {"id": 101, "name": "e-scooter"} and 102 not in [row["id"] for row in rows]
    project.dbt("run", "--select", "products")
    assert count(project, "products") == 9


def test_an_empty_build_runs_the_mirrors_data_tests(conformance_project):
    """`dbt build --empty` gives each ref of a data test as `(select ... where false limit 0)`: the cdc
    tests described that subquery and read it at a snapshot, and failed with PARSE_SYNTAX_ERROR at its
    parenthesis (every model downstream of the mirror skipped). They read the tables themselves."""
    project = conformance_project
    project.write_model("products", CONFIG, COLUMNS)
    (project.project_dir / "models" / "mirrors" / "_products.yml").write_text(PRODUCTS_YML.replace(
        "            raw_relation: ref('raw_events')\n",
        "            raw_relation: ref('raw_events')\n      - cdc_unmapped_columns:\n          arguments:\n"
        "            source_table: inventory.products\n            raw_relation: ref('raw_events')\n"))
    shutil.copy(FLINK_MYSQL, project.inbox / "part-1.json")
    project.land(PRODUCTS)
    project.dbt("run", "--select", "products")
    statuses = node_statuses(project.dbt("build", "--select", "products", "--empty", expect_success=False))
    assert statuses.pop("products") == "success"
    # The fixture's columns the model leaves out are warned of, as by a build with data.
    assert len(statuses) == 4 and set(statuses.values()) == {"pass", "warn"}, statuses
    assert [name for name, status in statuses.items() if status == "warn"] == [
        "cdc_unmapped_columns_products_ref_raw_events___inventory_products"], statuses
    assert count(project, "products") == 10


def test_a_typo_in_a_declared_column_type_names_the_column_before_any_sql_runs(conformance_project):
    """cdc_columns({'id': 'bigitn'}) reached the engine, whose parser failed naming neither the type nor
    the column (line 16 of the compiled SQL); the compile refuses it, saying which type was meant."""
    project = conformance_project
    project.write_model("typo_typed", CONFIG, COLUMNS.replace("'int'", "'bigitn'", 1))
    failed = project.dbt("run", "--select", "typo_typed", expect_success=False)
    message = error_text(failed)
    assert "model 'typo_typed'" in message and "is declared as 'bigitn'" in message, message
    assert "did you mean 'bigint'?" in message, message
