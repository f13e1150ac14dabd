"""A statement Databend refused reads as the server's message, not its whole HTTP response
(adapter/dbt/adapters/cdc_databend/server_errors.py)."""

from __future__ import annotations

import json

from dbt.adapters.cdc_databend.server_errors import statement_error


def report(error: dict) -> str:
    """databend-py's text of a refused statement: the response's bytes, as Python prints them."""
    response = {"id": "3eb3384c", "session_id": "18019", "session": {"database": "mirror", "settings": {}},
                "schema": [], "data": [], "state": "Failed", "error": error,
                "stats": {"scan_progress": {"rows": 0, "bytes": 0}}, "next_uri": None}
    return "Unexpected:  failed to query: %s" % json.dumps(response, ensure_ascii=False).encode()


def test_the_servers_message_code_and_query_id_only():
    text = report({"code": 1006, "message": "InvalidCast while evaluating function `to_boolean('1')`.",
                   "detail": "BadArguments"})

    assert statement_error(text) == (
        "Databend refused the statement: InvalidCast while evaluating function `to_boolean('1')`. "
        "(error code 1006, BadArguments; query id 3eb3384c)")


def test_quotes_and_letters_beyond_ascii_read_as_the_server_wrote_them():
    message = "unable to cast to type Int32 while evaluating function `to_int32('\"12.0\"')` of 'héllo 中文' \\ end"
    assert statement_error(report({"code": 1006, "message": message})) == (
        f"Databend refused the statement: {message} (error code 1006; query id 3eb3384c)")


def test_any_other_text_is_left_as_it_is():
    assert statement_error("Unexpected status code 401 when post query, content: b'...'") is None
    assert statement_error("Unexpected:  failed to query: b'not json'") is None
    assert statement_error("Runtime Error: something else") is None


def test_the_clients_record_of_a_failed_request_is_dropped_and_its_others_kept(caplog):
    import logging

    from dbt.adapters.cdc_databend.server_errors import CLIENT_LOGGER, quiet_client_log

    quiet_client_log()
    quiet_client_log()
    client = logging.getLogger(CLIENT_LOGGER)
    with caplog.at_level(logging.WARNING):
        client.error("http error on http://127.0.0.1:8000/v1/query, SQL: merge into ... error msg:Unexpected: ...")
        client.warning("after waited for 60 secs, query still not finished (next uri not none)!")
    assert [record.getMessage()[:12] for record in caplog.records] == ["after waited"]
    assert len(client.filters) == 1
