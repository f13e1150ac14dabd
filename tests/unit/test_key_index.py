"""Whether a process keeps key indexes (python_jobs/apply/key_index.py): off for a plain `dbt run`,
on in cdc-run unless the environment says otherwise, and a value that is not a number stops
cdc-run before any run, naming the variable."""

import pytest

from python_jobs.apply import key_index
from python_jobs.scheduler import run_loop

ENV = key_index.KEY_INDEX_MAX_KEYS_ENV


@pytest.mark.parametrize("environ, expected", [
    ({}, 0),
    ({ENV: ""}, 0),
    ({ENV: "0"}, 0),
    ({ENV: " 250000 "}, 250_000),
    ({ENV: "5_000_000"}, 5_000_000),
])
def test_the_index_is_off_unless_the_environment_sets_it(environ, expected):
    assert key_index.max_keys(environ) == expected


def test_the_service_keeps_an_index_unless_told_otherwise():
    environ = {}
    assert key_index.keep_in_service(environ) == key_index.SERVICE_MAX_KEYS
    assert environ[ENV] == str(key_index.SERVICE_MAX_KEYS)
    assert key_index.keep_in_service({ENV: "0"}) == 0


@pytest.mark.parametrize("value", ["lots", "-1", "1e6"])
def test_a_value_that_is_not_a_number_of_keys_is_refused(value):
    with pytest.raises(ValueError, match=f"{ENV}='{value}': set it to the most keys"):
        key_index.max_keys({ENV: value})


def test_cdc_run_stops_before_any_run_on_a_bad_value(monkeypatch, capsys):
    monkeypatch.setenv(ENV, "lots")
    monkeypatch.setattr(run_loop, "run_every", lambda *args: pytest.fail("a run started"))
    assert run_loop.main(["--every", "1", "--runs", "1"]) == 2
    assert f"{ENV}='lots'" in capsys.readouterr().err
