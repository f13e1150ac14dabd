"""dbt's manifest kept between a long-lived `cdc-run`'s runs.

Each `dbt run` reads and hashes the project's files and loads its saved partial parse before it
starts a model: 0.2 s of the demo's 1.7 s cycle. A run whose inputs are what they were when the
kept manifest was parsed is given that manifest instead (`dbtRunner(manifest=...)`, dbt's own way
of running on a parsed project). The inputs compared before each run (about a millisecond):

- every file the manifest was parsed from, and every folder under the paths dbt searched for them
  (a file added or removed changes its folder), by modification time and size; each project's
  `dbt_project.yml`, `packages.yml`, `dependencies.yml` and `selectors.yml`, and the profiles;
- the command's options and the process's environment (`env_var()`, `DBT_*`), as they were.

Anything else, or a first run, parses: `dbt parse` with the run's options that bear on the
manifest, then the run on what it parsed. A file changed while the parse read it is not trusted:
the next run parses again. Only `run` and `build` with options known here are given a kept
manifest; any other command or option runs as dbt always does. Installed packages' own macros
(dbt's, the adapters') are not watched: a changed installation needs a new process anyway.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

COMMANDS = ("run", "build")
NO_WRITE_JSON = "--no-write-json"
# Options with one value that `dbt parse` takes too and that shape what it parses.
PARSE_OPTIONS = ("--project-dir", "--profiles-dir", "--profile", "--target", "-t", "--vars", "--target-path",
                 "--log-path", "--log-level", "--log-format", "--threads")
# Flags (no value) passed on to the parse.
PARSE_FLAGS = ("--quiet", "-q", "--partial-parse", "--no-partial-parse", "--use-colors", "--no-use-colors",
               "--debug", "--no-debug")
# The run's own options, which do not change the manifest: left out of the parse. The selection
# options take one or more values.
RUN_ONLY_MULTI = ("--select", "-s", "--exclude", "--selector", "--resource-type", "--exclude-resource-type")
RUN_ONLY_FLAGS = ("--full-refresh", "-f", "--no-full-refresh", "--fail-fast", "-x", "--no-fail-fast",
                  "--write-json", NO_WRITE_JSON, "--empty", "--no-empty")
PROJECT_FILES = ("dbt_project.yml", "packages.yml", "dependencies.yml", "selectors.yml", "package-lock.yml")
# A file modified this close to (or after) the start of the parse may have been read half way.
SETTLED_NS = 2_000_000_000

Mark = Optional[tuple[int, int]]


def parse_args(dbt_args: Sequence[str]) -> Optional[list[str]]:
    """The `dbt parse` arguments for a run's, or None when the run may not be given a kept manifest
    (another command, or an option not known here)."""
    args = list(dbt_args)
    if not args or args[0] not in COMMANDS:
        return None
    # Quiet: a parse that fails says nothing here; the run parses again and says what is wrong.
    parse = ["parse", "--quiet"]
    at = 1
    while at < len(args):
        arg = args[at]
        name, equals, value = arg.partition("=")
        if name in PARSE_OPTIONS:
            if equals:
                parse.append(arg)
                at += 1
            elif at + 1 < len(args):
                parse += [arg, args[at + 1]]
                at += 2
            else:
                return None
        elif arg in PARSE_FLAGS:
            parse += [] if arg in ("--quiet", "-q") else [arg]
            at += 1
        elif arg in RUN_ONLY_FLAGS:
            at += 1
        elif name in RUN_ONLY_MULTI:
            at += 1
            while not equals and at < len(args) and not args[at].startswith("-"):
                at += 1
        else:
            return None
    return parse


def _mark(path: str) -> Mark:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size


def _option(dbt_args: Sequence[str], *names: str) -> Optional[str]:
    for at, arg in enumerate(dbt_args):
        name, equals, value = arg.partition("=")
        if name in names:
            return value if equals else (dbt_args[at + 1] if at + 1 < len(dbt_args) else None)
    return None


def _installed(path: str) -> bool:
    prefixes = {sys.prefix, sys.base_prefix}
    return any(path.startswith(prefix + os.sep) for prefix in prefixes)


def watched_paths(manifest: Any, dbt_args: Sequence[str]) -> list[str]:
    """The files and folders whose change makes a kept manifest stale (see the module's docstring)."""
    files: set[str] = set()
    roots: set[str] = set()
    projects: set[str] = set()
    for source in getattr(manifest, "files", {}).values():
        path = source.path
        project_root = str(path.project_root)
        if _installed(project_root):
            continue
        projects.add(project_root)
        roots.add(os.path.join(project_root, path.searched_path))
        files.add(os.path.join(project_root, path.searched_path, path.relative_path))
    folders: set[str] = set()
    for root in roots:
        for folder, subfolders, _ in os.walk(root):
            folders.add(folder)
            subfolders[:] = [name for name in subfolders if not name.startswith(".")]
    project_dir = _option(dbt_args, "--project-dir") or os.environ.get("DBT_PROJECT_DIR") or os.getcwd()
    projects.add(os.path.abspath(project_dir))
    project_files = {os.path.join(project, name) for project in projects for name in PROJECT_FILES}
    profiles = {os.path.join(folder, "profiles.yml") for folder in filter(None, (
        _option(dbt_args, "--profiles-dir"), os.environ.get("DBT_PROFILES_DIR"), project_dir, os.getcwd(),
        os.path.expanduser("~/.dbt")))}
    return sorted(files | folders | project_files | profiles)


@dataclass
class KeptManifest:
    """The manifest a `cdc-run` gives its runs while their inputs stay as they were."""

    manifest: Any = None
    args: tuple[str, ...] = ()
    environment: dict[str, str] = field(default_factory=dict)
    marks: dict[str, Mark] = field(default_factory=dict)
    # Runs given the kept manifest, and parses made for a run: what the service's log says.
    given: int = 0
    parsed: int = 0

    def for_run(self, dbt_args: Sequence[str], parse: Callable[[list[str]], Any]) -> Any:
        """The manifest to give a run of dbt_args, or None (dbt parses in the run as always).
        parse(args): dbt's result of `dbt parse` with those arguments."""
        args = tuple(arg for arg in dbt_args if arg != NO_WRITE_JSON)
        plan = parse_args(args)
        if plan is None:
            self.manifest = None
            return None
        if self.manifest is not None and self._unchanged(args):
            self.given += 1
            return self.manifest
        self.manifest = None
        environment = dict(os.environ)
        started = time.time_ns()
        result = parse(plan)
        if not getattr(result, "success", False) or getattr(result, "result", None) is None:
            return None  # the run parses again and says what is wrong
        manifest = result.result
        marks = {path: _mark(path) for path in watched_paths(manifest, args)}
        self.parsed += 1
        if any(mark is not None and mark[0] >= started - SETTLED_NS for mark in marks.values()):
            return manifest  # for this run, which parsed it; not kept: a file may have been read half way
        self.manifest, self.args, self.environment, self.marks = manifest, args, environment, marks
        return manifest

    def _unchanged(self, args: tuple[str, ...]) -> bool:
        return (args == self.args and os.environ == self.environment
                and all(_mark(path) == mark for path, mark in self.marks.items()))
