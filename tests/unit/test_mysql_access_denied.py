"""The hint for a user refused from the server's own host (an anonymous ''@'localhost' matched first)."""

import pymysql

from python_jobs.capture.mysql_connection import access_denied_hint


def test_a_user_refused_from_localhost_is_told_of_the_anonymous_account():
    error = pymysql.err.OperationalError(1045, "Access denied for user 'cdc'@'localhost' (using password: YES)")
    assert "drop user ''@'localhost'" in access_denied_hint(error)


def test_other_refusals_and_errors_get_no_hint():
    assert access_denied_hint(pymysql.err.OperationalError(1045, "Access denied for user 'cdc'@'10.1.2.3' (using password: YES)")) == ""
    assert access_denied_hint(pymysql.err.OperationalError(2003, "Can't connect to MySQL server on 'localhost'")) == ""
    assert access_denied_hint(ValueError("x")) == ""
