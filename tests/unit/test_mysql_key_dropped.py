"""Which MariaDB/MySQL ALTER TABLEs leave a table without a primary key (mysql_table_changes.key_dropped)."""

from __future__ import annotations

import pytest

from python_jobs.capture.mysql_table_changes import key_dropped


@pytest.mark.parametrize("ddl, dropped", [
    ("alter table shop.t drop primary key", True),
    ("ALTER TABLE `shop`.`t` DROP  PRIMARY\nKEY, ADD COLUMN note text", True),
    ("alter table shop.t drop primary key, add primary key (id, region)", False),  # a key the capture compares
    ("alter table shop.t drop primary key, add constraint pk primary key(id)", False),
    ("alter table shop.t add primary key (id)", False),
    ("alter table shop.t drop index primary_keys", False),
    ("alter table shop.t drop column primary_key", False),
])
def test_a_primary_key_dropped_without_another(ddl, dropped):
    assert key_dropped(ddl) is dropped
