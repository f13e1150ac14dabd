"""A real MariaDB table gains a column with a default (ALTER TABLE ... ADD COLUMN tier ... DEFAULT 'gold')
after a row was inserted, and the capture file holding that insert lands after the file holding the
ALTER (a late file): the row is older than the addition, so the source holds 'gold' in it, and the
mirror and the history hold it too, though the chunk that applied the row held no schema event. A key
inserted and deleted before the ALTER stays deleted in the mirror; its version, older than the
addition, holds 'gold' as a history's older versions do. On Spark + Iceberg and on embedded Databend."""

from __future__ import annotations

import shutil

from python_jobs.capture import mysql as capture_mysql
from test_capture_faults import mariadb  # noqa: F401 - fixture
from test_capture_mysql_swapped_column_names import captured, source_rows
from test_history_source_columns import models, rows
from test_online_snapshots_mariadb import execute

TABLES = {"shop.items": ["id"]}


def test_a_late_event_older_than_an_added_column_gets_its_default(mariadb, conformance_project, tmp_path):  # noqa: F811
    project = conformance_project
    config = captured(mariadb, project, tmp_path, TABLES,
                      "create table shop.items (id int primary key, name varchar(10), ratio double)",
                      "insert into shop.items values (1, 'a', 1.5)")
    before = set(project.inbox.iterdir())
    execute(mariadb, "insert into shop.items values (2, 'b', 2.5), (4, 'd', 4.5)", "delete from shop.items where id = 4")
    capture_mysql.run(config)
    late = tmp_path / "late"
    late.mkdir()
    for path in set(project.inbox.iterdir()) - before:
        shutil.move(path, late / path.name)
    execute(mariadb, "alter table shop.items add column tier varchar(10) not null default 'gold'",
            "insert into shop.items values (3, 'c', 3.5, 'silver')")
    capture_mysql.run(config)
    models(project)
    project.land(TABLES)
    project.dbt("run", "--select", "items", "item_versions")
    for path in late.iterdir():
        shutil.move(path, project.inbox / ("late-" + path.name))
    project.land(TABLES)
    project.dbt("run", "--select", "items", "item_versions")

    source = source_rows(mariadb, "shop.items", ["id", "name", "ratio", "tier"])
    assert [row[3] for row in source] == ["gold", "gold", "silver"]
    # Was tier null in key 2, whose insert landed after the ALTER.
    assert rows(project, f"select id, name, ratio, tier from {project.schema}.items order by id") == source
    history = f"select id, name, ratio, tier from {project.schema}.item_versions"
    assert rows(project, f"{history} where is_current order by id") == source
    assert rows(project, f"{history} where id = 4") == [(4, "d", 4.5, "gold")]

