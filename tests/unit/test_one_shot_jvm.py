"""Which processes' sessions compile with C1 only (session.one_shot_java_options)."""

import re
import subprocess

import pytest

from python_jobs.landing.io.session import ONE_SHOT_JAVA_OPTIONS, ONE_SHOT_JAVA_OPTIONS_VARIABLE, one_shot_java_options

C1 = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"


@pytest.mark.parametrize(
    ("command", "profile_options", "environ", "added"),
    [
        ("/home/me/.venv/bin/dbt", "-XX:+UseParallelGC", {}, C1),
        ("dbt", "", {}, C1),
        ("/venv/bin/cdc-land", "-XX:+UseParallelGC", {}, C1),
        ("/venv/bin/cdc-verify", "", {}, C1),
        # Long-lived: their sessions serve cycle after cycle, where C2's code pays.
        ("/venv/bin/cdc-run", "-XX:+UseParallelGC", {}, ""),
        ("/venv/lib/python3.11/site-packages/pytest/__main__.py", "", {}, ""),
        ("-c", "", {}, ""),
        ("", "", {}, ""),
        # The profile's own choice of JIT wins.
        ("/venv/bin/dbt", "-XX:+UseParallelGC -XX:TieredStopAtLevel=4", {}, ""),
        ("/venv/bin/dbt", "-XX:-TieredCompilation", {}, ""),
        # The variable replaces the options a one-shot process adds; empty adds none.
        ("/venv/bin/dbt", "", {ONE_SHOT_JAVA_OPTIONS_VARIABLE: ""}, ""),
        ("/venv/bin/dbt", "", {ONE_SHOT_JAVA_OPTIONS_VARIABLE: "-XX:CICompilerCount=2 "}, "-XX:CICompilerCount=2"),
        ("/venv/bin/cdc-run", "", {ONE_SHOT_JAVA_OPTIONS_VARIABLE: "-XX:TieredStopAtLevel=1"}, ""),
    ],
)
def test_one_shot_processes_compile_with_c1_only(command, profile_options, environ, added):
    assert one_shot_java_options(profile_options, command, environ) == added


def test_the_driver_options_of_a_dbt_process_end_with_c1_once(monkeypatch):
    from python_jobs.landing.io import session

    monkeypatch.setattr(session.sys, "argv", ["/venv/bin/dbt", "run"])
    monkeypatch.delenv(ONE_SHOT_JAVA_OPTIONS_VARIABLE, raising=False)
    options = session.local_driver_conf("-XX:+UseParallelGC")["spark.driver.extraJavaOptions"]
    assert options.startswith(f"-XX:+UseParallelGC {C1} ")
    # The adapter may build its settings again from those it built.
    assert session.local_driver_conf(options)["spark.driver.extraJavaOptions"] == options


def test_a_one_shot_jvm_keeps_the_code_cache_of_a_jvm_with_c2():
    """C1 alone shrinks the code cache to 48 MB, which a dbt build of 38 nodes filled (a model failed:
    "Out of space in CodeCache for method handle intrinsic"); the options keep the usual 240 MB."""
    def code_cache(options: list[str]) -> int:
        flags = subprocess.run(["java", *options, "-XX:+PrintFlagsFinal", "-version"], capture_output=True, text=True).stdout
        return int(re.search(r"ReservedCodeCacheSize\s+=\s+(\d+)", flags).group(1))

    assert code_cache(ONE_SHOT_JAVA_OPTIONS.split()) >= code_cache([]) >= 240 * 1024 * 1024
