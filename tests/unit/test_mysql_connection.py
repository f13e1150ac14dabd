"""The capture's connections share one TLS context in PyMySQL's PREFERRED mode (no TLS option), with
the settings PyMySQL gives each connection of its own; a TLS option still gets a context of its own."""

from __future__ import annotations

import pymysql

from python_jobs.capture import mysql_connection
from python_jobs.capture.mysql_connection import connect


def _settings(ctx):
    return (ctx.verify_mode, ctx.check_hostname, ctx.options, ctx.verify_flags, ctx.minimum_version,
            ctx.maximum_version, sorted(cert["serialNumber"] for cert in ctx.get_ca_certs()))


def test_preferred_mode_connections_share_one_context_with_pymysqls_settings(monkeypatch):
    monkeypatch.setattr(mysql_connection, "_preferred", None)
    first, second = (connect(host="127.0.0.1", user="cdc", defer_connect=True) for _ in range(2))
    own = pymysql.connect(host="127.0.0.1", user="cdc", defer_connect=True)

    assert first.ctx is second.ctx is mysql_connection._preferred
    assert first.ctx is not own.ctx and _settings(first.ctx) == _settings(own.ctx)
    # PREFERRED: TLS when the server offers it, plain when not (pymysql's _request_authentication).
    assert (first.ssl, first._ssl_required) == (second.ssl, second._ssl_required) == (own.ssl, own._ssl_required) == (True, False)


def test_a_tls_option_or_tls_disabled_is_pymysqls_own(monkeypatch):
    monkeypatch.setattr(mysql_connection, "_preferred", None)
    shared = connect(host="127.0.0.1", user="cdc", defer_connect=True).ctx
    required = connect(host="127.0.0.1", user="cdc", ssl_verify_cert=True, defer_connect=True)
    own = pymysql.connect(host="127.0.0.1", user="cdc", ssl_verify_cert=True, defer_connect=True)

    assert required.ctx is not shared and (required.ssl, required._ssl_required) == (True, True)
    assert _settings(required.ctx) == _settings(own.ctx)
    disabled = connect(host="127.0.0.1", user="cdc", ssl_disabled=True, defer_connect=True)
    assert not disabled.ssl and not hasattr(disabled, "ctx")
