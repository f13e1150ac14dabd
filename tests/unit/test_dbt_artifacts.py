"""cdc-run's choice of when dbt writes its JSON artifacts (python_jobs/scheduler/dbt_artifacts.py):
plain Python on files in a temporary folder, milliseconds."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from python_jobs.scheduler.dbt_artifacts import NO_WRITE_JSON, JsonArtifacts

RUN = ["run", "--select", "m"]


def dbt_wrote(artifacts: JsonArtifacts, target: Path) -> None:
    """What a run that writes its artifacts leaves: the files, and its ArtifactWritten event."""
    for name in ("manifest.json", "run_results.json"):
        (target / name).write_text("{}")
    artifacts.callback(SimpleNamespace(info=SimpleNamespace(name="ArtifactWritten"),
                                       data=SimpleNamespace(artifact_path=str(target / "run_results.json"))))


class Result:
    def __init__(self) -> None:
        self.written: list[str] = []

    def write(self, path: str) -> None:
        self.written.append(path)


def test_after_a_run_that_wrote_them_the_next_skips_them_and_run_results_is_written_from_the_result(tmp_path):
    (tmp_path / "partial_parse.msgpack").write_bytes(b"parsed")
    artifacts = JsonArtifacts()

    assert artifacts.args_for(RUN) == RUN  # nothing known yet: dbt writes them
    dbt_wrote(artifacts, tmp_path)
    artifacts.after(Result())

    assert artifacts.args_for(RUN) == [*RUN, NO_WRITE_JSON]
    result = Result()
    artifacts.after(result)
    assert result.written == [str(tmp_path / "run_results.json")]


def test_a_new_parse_or_a_missing_manifest_lets_dbt_write_them_again(tmp_path):
    parsed = tmp_path / "partial_parse.msgpack"
    parsed.write_bytes(b"parsed")
    artifacts = JsonArtifacts()
    artifacts.args_for(RUN)
    dbt_wrote(artifacts, tmp_path)
    artifacts.after(Result())

    parsed.write_bytes(b"parsed again, a model changed")
    assert artifacts.args_for(RUN) == RUN
    result = Result()
    artifacts.after(result)
    assert result.written == []  # dbt wrote them (had it, its event would have set the mark)

    dbt_wrote(artifacts, tmp_path)
    artifacts.after(Result())
    assert artifacts.args_for(RUN) == [*RUN, NO_WRITE_JSON]
    (tmp_path / "manifest.json").unlink()
    assert artifacts.args_for(RUN) == RUN


def test_the_user_s_own_choice_wins_and_without_partial_parsing_dbt_writes_every_time(tmp_path):
    artifacts = JsonArtifacts()
    artifacts.args_for(RUN)
    dbt_wrote(artifacts, tmp_path)  # no partial_parse.msgpack: parsing is not known to be unchanged
    artifacts.after(Result())
    assert artifacts.args_for(RUN) == RUN

    (tmp_path / "partial_parse.msgpack").write_bytes(b"parsed")
    dbt_wrote(artifacts, tmp_path)
    artifacts.after(Result())
    for own in (["--write-json"], [NO_WRITE_JSON]):
        assert artifacts.args_for([*RUN, *own]) == [*RUN, *own]
        result = Result()
        artifacts.after(result)
        assert result.written == []
