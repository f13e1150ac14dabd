"""cdc-run's kept manifest (python_jobs/scheduler/kept_manifest.py): given to a run while the files,
options and environment dbt parsed it from are as they were; parsed again otherwise."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from python_jobs.scheduler.kept_manifest import KeptManifest, parse_args

HOUR_AGO = 3600


@pytest.mark.parametrize("run, parse", [
    (["run", "--select", "a", "b", "--project-dir", "p", "--target", "local"],
     ["parse", "--quiet", "--project-dir", "p", "--target", "local"]),
    (["build", "--exclude=tag:x", "-q", "--vars", "{n: 1}", "--full-refresh", "--no-write-json"],
     ["parse", "--quiet", "--vars", "{n: 1}"]),
    (["run", "--profiles-dir=profiles", "-s", "raw_events+"], ["parse", "--quiet", "--profiles-dir=profiles"]),
    (["test", "--project-dir", "p"], None),  # another command: dbt parses as always
    (["run", "--defer", "--state", "prod"], None),  # an option not known here
    (["run", "--project-dir"], None),  # an option without its value
])
def test_a_runs_options_give_the_parse_those_that_shape_the_manifest(run, parse):
    assert parse_args(run) == parse


class Project:
    """A project folder with dbt_project.yml and models/, its files older than an hour."""

    def __init__(self, root):
        self.root = root
        (root / "models").mkdir()
        self.write("dbt_project.yml", "name: p\n")
        self.write("models/a.sql", "select 1 as id\n")
        self.parses = []

    def write(self, name, text, age=HOUR_AGO):
        path = self.root / name
        path.write_text(text)
        os.utime(path, (path.stat().st_atime - age, path.stat().st_mtime - age))
        os.utime(path.parent, (path.parent.stat().st_atime - age, path.parent.stat().st_mtime - age))

    def parse(self, args):
        self.parses.append(args)
        files = {name: SimpleNamespace(path=SimpleNamespace(project_root=str(self.root), searched_path="models",
                                                           relative_path=name))
                 for name in sorted(os.listdir(self.root / "models"))}
        return SimpleNamespace(success=True, result=SimpleNamespace(files=files, number=len(self.parses)))

    def args(self, *extra):
        return ["run", "--project-dir", str(self.root), "--profiles-dir", str(self.root), *extra]


@pytest.fixture
def project(tmp_path):
    return Project(tmp_path)


def test_an_unchanged_project_is_given_the_manifest_parsed_once(project, monkeypatch):
    kept = KeptManifest()
    first = kept.for_run(project.args(), project.parse)
    assert kept.for_run(project.args("--no-write-json"), project.parse) is first  # cdc-run's own option aside
    assert kept.for_run(project.args(), project.parse) is first
    assert (kept.parsed, kept.given) == (1, 2)
    assert project.parses == [["parse", "--quiet", "--project-dir", str(project.root), "--profiles-dir", str(project.root)]]


@pytest.mark.parametrize("change", [
    lambda project, monkeypatch: project.write("models/a.sql", "select 2 as id\n", age=60),  # a model edited
    lambda project, monkeypatch: project.write("models/b.sql", "select 3 as id\n", age=60),  # a model added
    lambda project, monkeypatch: (project.root / "models" / "a.sql").unlink(),  # a model removed
    lambda project, monkeypatch: project.write("dbt_project.yml", "name: p\nvars: {n: 2}\n", age=60),
    lambda project, monkeypatch: project.write("profiles.yml", "p: {}\n", age=60),  # the profiles appear
    lambda project, monkeypatch: monkeypatch.setenv("DBT_SOMETHING", "new"),  # what env_var() may read
])
def test_a_changed_file_folder_or_environment_is_parsed_again(project, monkeypatch, change):
    kept = KeptManifest()
    first = kept.for_run(project.args(), project.parse)
    change(project, monkeypatch)
    second = kept.for_run(project.args(), project.parse)
    assert second is not first and second.number == 2
    assert kept.for_run(project.args(), project.parse) is second  # kept from then on


def test_other_options_are_parsed_again(project):
    kept = KeptManifest()
    first = kept.for_run(project.args(), project.parse)
    assert kept.for_run(project.args("--vars", "{n: 3}"), project.parse) is not first
    assert kept.parsed == 2


def test_a_file_changed_while_the_parse_read_it_is_not_trusted(project):
    kept = KeptManifest()
    project.write("models/a.sql", "select 4 as id\n", age=0)  # just now: the parse may have read half of it
    first = kept.for_run(project.args(), project.parse)
    assert first is not None  # this run runs on what it parsed
    assert kept.for_run(project.args(), project.parse) is not first  # but the next one parses again
    assert kept.parsed == 2


def test_a_failed_parse_or_another_command_leaves_the_parse_to_the_run(project):
    kept = KeptManifest()
    assert kept.for_run(project.args(), lambda args: SimpleNamespace(success=False, result=None)) is None
    kept.for_run(project.args(), project.parse)
    assert kept.for_run(["test", "--project-dir", str(project.root)], project.parse) is None
    assert kept.manifest is None  # and a later run parses
