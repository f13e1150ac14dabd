"""The local Databend endpoint (python_jobs/devtools/databend_local/): the real embedded engine behind
Databend's HTTP API, reached through the client dbt-databend-cloud uses (databend-sqlalchemy's
connector on databend-py) and through `dbt run` itself.
Why over 300 lines: fifteen short checks of one endpoint."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from decimal import Decimal
from urllib.parse import urlparse

import pytest
import requests

from python_jobs.devtools.databend_local import serve

# One worker runs the module: its tests share one endpoint (Makefile: --dist loadgroup).
pytestmark = pytest.mark.xdist_group("databend_local")
PAGE_ROWS = 100  # small pages, so a 1,000-row result needs ten of them
AUTH = ("root", "")


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    with serve(tmp_path_factory.mktemp("databend_local"), page_rows=PAGE_ROWS) as endpoint:
        yield endpoint


def connect(url: str, database: str = "default"):
    """A DB-API connection exactly as dbt-databend-cloud opens one (secure: false)."""
    from databend_sqlalchemy import connector

    address = urlparse(url)
    return connector.connect(f"http://root:@{address.hostname}:{address.port}/{database}?secure=false ")


def query(connection, sql: str) -> list[tuple]:
    cursor = connection.cursor()
    cursor.execute(sql)
    return cursor.fetchall()


def post_query(url: str, sql: str, **body) -> dict:
    response = requests.post(f"{url}/v1/query", json={"sql": sql, **body}, auth=AUTH, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


def test_values_arrive_typed_as_the_client_parses_them(url):
    connection = connect(url)
    # Typed columns: this engine narrows the types of constant expressions (42::int64 is UInt8).
    query(connection, "create or replace table typed (i int64, n int64, d decimal(10, 2), s string, ts timestamp, "
                      "dt date, t boolean, f boolean not null, v variant, arr array(int32 not null) not null)")
    query(connection, "insert into typed values (42, null, 1.5, 'café', '2024-03-01 12:34:56.5', "
                      "'2024-03-01', true, false, parse_json('{\"a\": [1, 2.5]}'), [1, 2])")
    cursor = connection.cursor()
    cursor.execute("select * from typed")
    # databend-py strips Nullable(...) (and the tail of Decimal's) from the server's type names;
    # it cannot parse a nullable array, hence the NOT NULL above.
    assert [(name, kind) for name, kind in cursor.description] == [
        ("i", "Int64"), ("n", "Int64"), ("d", "Decimal(10, 2"), ("s", "String"), ("ts", "Timestamp"),
        ("dt", "Date"), ("t", "Boolean"), ("f", "Boolean"), ("v", "Variant"), ("arr", "Array"),
    ]
    # databend-py's own conversions: NULL stays the string "NULL", decimals stay strings.
    assert cursor.fetchall() == [
        (42, "NULL", "1.50", "café", "2024-03-01 12:34:56.500000", "2024-03-01", True, False,
         '{"a":[1,2.5]}', [1, 2])
    ]


def test_values_are_written_as_databend_writes_them(url):
    response = post_query(url, "select [] as a, {} as m, 0.1::float as f32, 1.0::double as f64, "
                               "['x''y'] as s, {'k': [1, 2]} as nested, (1, 'a') as t, to_binary('ab') as b")
    assert [f["type"] for f in response["schema"]] == [
        "EmptyArray", "EmptyMap", "Float32", "Float64", "Array(String)", "Map(String, Array(UInt8))",
        "Tuple(UInt8, String)", "Binary",
    ]
    assert response["data"] == [["[]", "{}", "0.1", "1", "['x\\'y']", "{'k':[1,2]}", "(1,'a')", "6162"]]
    # The largest float32, whose shortest text (3.4028235e38) is a little above it.
    extremes = post_query(url, "select 3.4028235e38::float as top, -3.4028235e38::float as bottom, 3.4028229e38::float as near")
    assert extremes["data"] == [["340282350000000000000000000000000000000", "-340282350000000000000000000000000000000",
                                 "340282290000000000000000000000000000000"]]


def test_variant_text_matches_the_engines_own_rendering(url):
    document = {"b": 1.0, "a": 'x"y\n', "c": [True, False, None, -5, 1e300, 0.5, 18446744073709551615],
                "ä": {}, "nested": {"deep": [{"k": "v"}]}}
    literal = json.dumps(document).replace("\\", "\\\\").replace("'", "\\'")
    rows = query(connect(url), f"select v, v::string from (select parse_json('{literal}') as v)")
    assert rows[0][0] == rows[0][1]
    assert json.loads(rows[0][0]) == document


def test_results_larger_than_a_page_are_paged(url):
    rows = query(connect(url), "select number from numbers(1000) order by number")
    assert [row[0] for row in rows] == list(range(1000))

    first = post_query(url, "select number from numbers(25) order by number", pagination={"max_rows_per_page": 10})
    pages, response = [first["data"]], first
    while response["next_uri"] and "/page/" in response["next_uri"]:
        response = requests.get(url + response["next_uri"], auth=AUTH, timeout=30).json()
        pages.append(response["data"])
    assert [len(page) for page in pages] == [10, 10, 5]
    assert first["schema"] == [{"name": "number", "type": "UInt64"}]
    assert pages[2][-1] == ["24"]
    assert response["next_uri"] == response["final_uri"] == f"/v1/query/{first['id']}/final"
    final = requests.get(url + response["final_uri"], auth=AUTH, timeout=30).json()
    assert final["state"] == "Succeeded" and final["next_uri"] is None
    gone = requests.get(url + first["next_uri"], auth=AUTH, timeout=30)
    assert gone.status_code == 404 and "not found" in gone.json()["error"]["message"]


def test_engine_errors_surface_with_their_message(url):
    connection = connect(url)
    with pytest.raises(Exception, match=r"Unknown table `default`.`no_such_table`"):
        query(connection, "select * from no_such_table")
    failed = post_query(url, "selec 1")
    assert failed["state"] == "Failed" and failed["error"]["code"] == 1005
    assert "unexpected `selec`" in failed["error"]["message"]
    # An engine panic while converting a result is an error, and the endpoint stays up.
    panicked = post_query(url, "select (1, null) as t")
    assert "panicked converting the result" in panicked["error"]["message"]
    assert query(connection, "select 1") == [(1,)]


def test_each_session_runs_in_its_own_database(url):
    admin = connect(url)
    for database, value in (("sess_a", "from a"), ("sess_b", "from b")):
        query(admin, f"create or replace database {database}")
        query(admin, f"create table {database}.t (v string)")
        query(admin, f"insert into {database}.t values ('{value}')")
    in_a, in_b = connect(url, "sess_a"), connect(url, "sess_b")
    for _ in range(2):  # interleaved: each statement switches the one engine session over
        assert query(in_a, "select v from t") == [("from a",)]
        assert query(in_b, "select v from t") == [("from b",)]
    query(in_a, "use sess_b")
    assert query(in_a, "select current_database(), v from t") == [("sess_b", "from b")]
    assert query(admin, "select current_database()") == [("default",)]

    response = post_query(url, "use sess_a", session={"database": "default"})
    assert response["session"]["database"] == "sess_a"
    assert post_query(url, "select v from t", session=response["session"])["data"] == [["from a"]]


def test_settings_round_trip_in_the_session(url):
    first = post_query(url, "set max_threads = 3")
    assert first["session"]["settings"] == {"max_threads": "3"}
    sql = "select value from system.settings where name = 'max_threads'"
    assert post_query(url, sql, session=first["session"])["data"] == [["3"]]
    assert post_query(url, sql)["data"] != [["3"]]  # another session does not inherit it
    no_null_strings = post_query(url, "select null::int as n", session={"settings": {"format_null_as_str": "0"}})
    assert no_null_strings["data"] == [[None]]


def test_merge_is_reported_as_success_with_its_counts(url):
    connection = connect(url)
    query(connection, "create or replace table merge_target (id int, v string)")
    query(connection, "insert into merge_target values (1, 'a'), (2, 'b')")
    merge = (
        "merge into merge_target as t using (select 1 as id, 'z' as v union all select 3, 'c') as s "
        "on t.id = s.id when matched then update set v = s.v when not matched then insert (id, v) values (s.id, s.v)"
    )
    cursor = connection.cursor()
    cursor.execute(merge)
    assert cursor.description == [("number of rows inserted", "Int32"), ("number of rows updated", "Int32")]
    assert cursor.fetchall() == [(1, 1)]
    assert query(connection, "select id, v from merge_target order by id") == [(1, "z"), (2, "b"), (3, "c")]
    delete = post_query(url, "merge into merge_target as t using (select 2 as id) as s on t.id = s.id "
                             "when matched then delete")
    assert delete["state"] == "Succeeded" and delete["data"] == [["1"]]
    assert delete["stats"]["write_progress"]["rows"] == 1


def test_cdc_building_blocks_work_through_the_endpoint(url):
    connection = connect(url)
    query(connection, "create or replace table raw_events (k int, seq string, payload variant) change_tracking = true")
    query(connection, "insert into raw_events values (1, '001', parse_json('{\"op\": \"c\"}'))")
    (snapshot,) = query(connection, "select snapshot_id from fuse_snapshot('default', 'raw_events') limit 1")[0]
    query(connection, "insert into raw_events values (1, '002', parse_json('{\"op\": \"u\"}')), (2, '001', null)")
    appended = query(
        connection,
        "select k, seq, payload:op::string from raw_events "
        f"changes(information => append_only) at (snapshot => '{snapshot}') order by k, seq",
    )
    assert appended == [(1, "002", "u"), (2, "001", "NULL")]
    newest = query(connection, "select k, seq from raw_events "
                               "qualify row_number() over (partition by k order by seq desc) = 1 order by k")
    assert newest == [(1, "002"), (2, "001")]

    query(connection, "begin")
    query(connection, "insert into raw_events values (3, '001', null)")
    query(connection, "commit")
    query(connection, "begin")
    query(connection, "insert into raw_events values (4, '001', null)")
    query(connection, "rollback")
    assert query(connection, "select k from raw_events where k > 2") == [(3,)]


def test_an_open_transaction_keeps_other_sessions_out(url):
    owner, other = connect(url), connect(url)
    query(owner, "begin")
    with pytest.raises(Exception, match="another client session has an open transaction"):
        query(other, "select 1")
    query(owner, "rollback")
    assert query(other, "select 1") == [(1,)]


def test_session_endpoints_and_basic_auth(url):
    login = requests.post(f"{url}/v1/session/login", json={}, auth=AUTH, timeout=30)
    assert login.status_code == 200 and login.json()["version"].startswith("1.2.453")
    heartbeat = requests.post(f"{url}/v1/session/heartbeat", json={"node_to_queries": {"n": ["gone"]}},
                              auth=AUTH, timeout=30)
    assert heartbeat.json() == {"queries_to_remove": ["gone"]}
    assert requests.post(f"{url}/v1/verify", auth=AUTH, timeout=30).status_code == 200
    rejected = requests.post(f"{url}/v1/query", json={"sql": "select 1"}, auth=("bob", "x"), timeout=30)
    assert rejected.status_code == 401 and "root" in rejected.json()["error"]["message"]

    started = post_query(url, "select number from numbers(25)", pagination={"max_rows_per_page": 10})
    assert requests.post(url + started["kill_uri"], auth=AUTH, timeout=30).status_code == 200
    assert requests.get(url + started["next_uri"], auth=AUTH, timeout=30).status_code == 404


def test_the_rust_driver_works_too(url):
    from databend_driver import BlockingDatabendClient

    address = urlparse(url)
    connection = BlockingDatabendClient(
        f"databend://root:@{address.hostname}:{address.port}/default?sslmode=disable"
    ).get_conn()
    row = connection.query_row("select 1::int64, null::int, 2.50::decimal(5, 2)").values()
    assert row == (1, None, Decimal("2.50"))
    assert sum(1 for _ in connection.query_iter("select number from numbers(250)")) == 250


DBT_PROJECT = "name: tiny\nversion: '1.0'\nprofile: tiny\nmodels:\n  tiny:\n    +materialized: table\n"
ORDERS_MODEL = """
select number as order_id, number % 3 as customer_id, (number * 1.5)::decimal(10, 2) as amount,
       parse_json('{"source": "numbers"}') as payload
from numbers(10)
"""
# dbt-databend-cloud's incremental materialization needs an explicit strategy with unique_key.
TOTALS_MODEL = """
{{ config(materialized='incremental', unique_key='customer_id', incremental_strategy='delete_insert') }}
select customer_id, sum(amount) as total, count(*) as orders
from {{ ref('orders') }}
group by customer_id
"""


def test_dbt_run_with_dbt_databend_cloud(url, tmp_path):
    address = urlparse(url)
    (tmp_path / "models").mkdir()
    (tmp_path / "dbt_project.yml").write_text(DBT_PROJECT)
    (tmp_path / "models" / "orders.sql").write_text(ORDERS_MODEL)
    (tmp_path / "models" / "customer_totals.sql").write_text(TOTALS_MODEL)
    (tmp_path / "profiles.yml").write_text(textwrap.dedent(f"""\
        tiny:
          target: dev
          outputs:
            dev:
              type: databend
              host: {address.hostname}
              port: {address.port}
              schema: dbt_tiny
              user: root
              pass: ""
              secure: false
              threads: 1
        """))
    dbt = os.path.join(os.path.dirname(sys.executable), "dbt")
    env = {**os.environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", "PYTHONWARNINGS": "ignore"}
    for _ in range(2):  # the second run takes the incremental (delete + insert) path
        run = subprocess.run([dbt, "run", "--project-dir", str(tmp_path), "--profiles-dir", str(tmp_path)],
                             capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        assert "PASS=2" in run.stdout

    connection = connect(url, "dbt_tiny")
    assert query(connection, "select customer_id, total, orders from customer_totals order by customer_id") == [
        (0, "27.00", 4), (1, "18.00", 3), (2, "22.50", 3)
    ]
    assert query(connection, "select count(*), max(payload:source::string) from orders") == [(10, "numbers")]


def test_data_outlives_a_restart(tmp_path):
    with serve(tmp_path) as first:
        query(connect(first), "create table kept (v int)")
        query(connect(first), "insert into kept values (7)")
    with serve(tmp_path) as second:
        assert query(connect(second), "select v from kept") == [(7,)]


def test_without_the_engine_package_it_says_what_to_install(tmp_path):
    """A cdc-init project's venv (the wheel's extras) lacks PyPI's databend: the command ended in a
    traceback, ModuleNotFoundError: No module named 'databend'."""
    script = textwrap.dedent('''
        import sys
        class WithoutDatabend:  # as in a venv without the package
            def find_spec(self, name, path=None, target=None):
                if name == "databend":
                    raise ModuleNotFoundError("No module named 'databend'")
        sys.meta_path.insert(0, WithoutDatabend())
        from python_jobs.devtools.databend_local.server import main
        sys.exit(main(["--port", "0", "--data-dir", sys.argv[1]]))
    ''')
    result = subprocess.run([sys.executable, "-c", script, str(tmp_path / "data")], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stderr
    assert "pip install databend==1.2.453" in result.stderr and "Traceback" not in result.stderr
