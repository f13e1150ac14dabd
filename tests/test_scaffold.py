"""cdc-scaffold writes mirror models from a real server's information_schema that mirror it as they are."""

from __future__ import annotations

import shutil
import tempfile
from decimal import Decimal
from pathlib import Path

import pytest
import yaml

from harness.mariadb_server import start_mariadb
from harness.postgres_server import start_postgres
from python_jobs import scaffold
from python_jobs.capture import postgres as capture_postgres


@pytest.fixture
def server_directory():
    directory = Path(tempfile.mkdtemp(prefix="cdc-merge-scaffold-"))
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def test_scaffolded_models_mirror_a_postgres_table(conformance_project, server_directory, tmp_path):
    """On both engines: a column whose name is not plain, or is a word Databend takes as SQL (order),
    is mirrored under a plain name."""
    dbt_project = conformance_project
    server = start_postgres(server_directory)
    try:
        connection = server.connect()
        with connection.cursor() as cursor:
            cursor.execute("create schema shop")
            cursor.execute("create table shop.line_items (order_id int, line_no smallint, sku text, qty bigint, "
                           "price numeric(10,3), shipped boolean, placed_at timestamptz, \"unit price-eur\" numeric(8,2), "
                           "\"order\" text, \"from\" int, primary key (order_id, line_no))")
            cursor.execute("insert into shop.line_items values (1, 1, 'a', 5000000000, 1.5, true, '2026-01-02 03:04:05+00', 2.5, "
                           "'o', 7), (1, 2, null, -1, 0.001, false, null, null, null, null)")
        connection.commit()
        mirrors = dbt_project.project_dir / "models" / "mirrors"
        assert scaffold.main(["--postgres", server.dsn, "--tables", "shop.line_items", "--out", str(mirrors),
                              "--yaml", str(mirrors / "_mirrors__models.yml")]) == 0
        models = yaml.safe_load((mirrors / "_mirrors__models.yml").read_text())["models"]
        (entry,) = [model for model in models if model["name"] == "shop_line_items"]
        assert [column["name"] for column in entry["columns"]] == [
            "order_id", "line_no", "sku", "qty", "price", "shipped", "placed_at", "unit_price_eur", "order_", "from_"]
        assert scaffold.main(["--postgres", server.dsn, "--tables", "shop.line_items", "--out", str(mirrors)]) == 2

        capture_postgres.run(capture_postgres.CaptureConfig(
            dsn=server.dsn, tables=("shop.line_items",), slot="scaffold", out=dbt_project.inbox,
            state=tmp_path / "state.json"))
        dbt_project.land({"shop.line_items": ["order_id", "line_no"]})
        dbt_project.dbt("run", "--select", "shop_line_items")
        dbt_project.dbt("test", "--select", "shop_line_items")
        rows = [tuple(row.values()) for row in dbt_project.query(
            f"select order_id, line_no, sku, qty, price, shipped, unit_price_eur, order_, from_ from "
            f"{dbt_project.schema}.shop_line_items order by line_no")]
        assert rows == [(1, 1, "a", 5000000000, Decimal("1.500"), True, Decimal("2.50"), "o", 7),
                        (1, 2, None, -1, Decimal("0.001"), False, None, None, None)]
        connection.close()
    finally:
        server.stop()


def test_a_mysql_table_scaffolds_with_its_types(server_directory, tmp_path):
    server = start_mariadb(server_directory)
    try:
        connection = server.connect()
        with connection.cursor() as cursor:
            cursor.execute("create database shop")
            cursor.execute("create table shop.items (id bigint unsigned primary key, name varchar(20), "
                           "active tinyint(1), price decimal(8,2), at datetime(6), weight double)")
        connection.commit()
        (table,) = scaffold.mysql_tables("127.0.0.1", server.port, "root", "", ["shop.items"])
        assert {column.name: scaffold.model_type(column) for column in table.columns} == {
            "id": "decimal(20,0)", "name": "string", "active": "int", "price": "decimal(8,2)", "at": "timestamp",
            "weight": "double"}
        assert "unique_key='id'" in scaffold.model_sql(table)
        with pytest.raises(scaffold.ScaffoldError, match="shop.missing does not exist"):
            scaffold.mysql_tables("127.0.0.1", server.port, "root", "", ["shop.missing"])
        connection.close()
    finally:
        server.stop()
