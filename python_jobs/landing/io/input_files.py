"""Reading the input folder: new files in micro-batches, each batch's place in the order of
landed files as the streaming checkpoint recorded it, and landed files moved out of it."""

from __future__ import annotations

import errno
import json
import logging
import os
import re
import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse
from typing import Callable, Iterable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from python_jobs.landing.io.errors import LandingError
from python_jobs.landing.io.session import session_conf
from python_jobs.landing.transforms import BatchPlace

log = logging.getLogger("cdc_merge")


def input_scan_conf(spark: SparkSession) -> dict[str, str]:
    """Settings for reading a batch's input files (BENCHMARKS.md, landing).

    The file source lists each batch's files again, in a Spark job when there are more than 32;
    the input folder is local, so listing in the driver saves that job (0.25 s a batch). At least
    four read tasks per core: a 1M-event batch was read in 5 tasks, so on 2 cores one core idled
    through the third wave.
    """
    return {
        # A file deleted between listing and reading must not fail the batch: the landing
        # quarantines a note for it instead (files_changed_since_listed).
        "spark.sql.files.ignoreMissingFiles": "true",
        "spark.sql.sources.parallelPartitionDiscovery.threshold": str(2**31 - 1),
        "spark.sql.files.minPartitionNum": str(4 * spark.sparkContext.defaultParallelism),
    }


def read_new_files(spark: SparkSession, input_dir: Path, max_files_per_batch: int, file_glob: str) -> DataFrame:
    """Stream of whole files not landed before (the checkpoint remembers which were).

    Spark skips names starting with '.' or '_': writers should write under such a
    name and rename when the file is complete.
    """
    require_readable_folder(input_dir)
    return (
        spark.readStream.format("text")
        .option("wholetext", "true")
        .option("maxFilesPerTrigger", max_files_per_batch)
        .option("pathGlobFilter", file_glob)
        .load(str(input_dir))
        .select(F.col("_metadata.file_path").alias("landed_file"), F.col("value").alias("content"))
    )


def require_readable_folder(input_dir: Path) -> None:
    """The input folder exists and its files can be listed and read: checked before Spark starts
    the stream, whose own error would be a Hadoop stack trace."""
    if not input_dir.exists():
        raise LandingError(f"input folder {input_dir} does not exist: create it, or fix 'input' in the landing config")
    if not input_dir.is_dir():
        raise LandingError(f"input {input_dir} is not a folder: set 'input' in the landing config to the folder of CDC files")
    try:
        with os.scandir(input_dir) as entries:
            for entry in entries:
                if entry.is_file() and not entry.name.startswith((".", "_")):
                    with open(entry.path, "rb") as handle:
                        handle.read(1)
                    break
    except OSError as error:
        raise LandingError(
            f"input folder {input_dir} cannot be read by this user (uid {os.geteuid()}): {error.strerror or error}; "
            "fix its permissions, or run the landing as a user who can read it"
        ) from None


def run_available_batches(
    files: DataFrame, checkpoint_dir: Path, land_batch: Callable[[DataFrame, str, BatchPlace, bool], None]
) -> None:
    """Land every file present now, one micro-batch at a time, then stop.

    land_batch gets the batch, its tag, its place in the order of landed files, and whether an
    earlier run may have tried it.
    """
    planned_before = latest_planned_batch(checkpoint_dir)

    def on_batch(batch: DataFrame, batch_id: int) -> None:
        # The query id lives in the checkpoint, so a retried batch gets the same tag.
        query_id = batch.sparkSession.sparkContext.getLocalProperty("sql.streaming.queryId")
        land_batch(batch, f"{query_id}/{batch_id}", batch_place(checkpoint_dir, batch_id), batch_id <= planned_before)

    # The file source reads the settings of the session that made `files`, at each batch.
    with session_conf(files.sparkSession, input_scan_conf(files.sparkSession)):
        query = (
            files.writeStream.foreachBatch(on_batch)
            .option("checkpointLocation", str(checkpoint_dir))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()


# The checkpoint's own record of where it lands (beside Spark's offsets, commits and sources).
_DESTINATION_FILE = "cdc_merge_destination"


def claim_checkpoint(checkpoint_dir: Path, destination: str) -> None:
    """A checkpoint records which files were landed into one destination (a sink's table): used for
    another, it would skip every file landed into the first. The first landing records its
    destination; a landing into another one is refused before anything is read."""
    record = checkpoint_dir / _DESTINATION_FILE
    try:
        recorded = record.read_text().strip()
    except FileNotFoundError:
        checkpoint_dir.mkdir(parents=True, exist_ok=True)
        # Whole or absent, also when the process dies while it writes.
        partial = checkpoint_dir / f".{_DESTINATION_FILE}.partial"
        partial.write_text(destination + "\n")
        os.replace(partial, record)
        return
    if recorded != destination:
        raise LandingError(
            f"the landing checkpoint {checkpoint_dir} belongs to {recorded}: it lists the files landed there, so "
            f"landing into {destination} with it would skip them all. Give this landing config a checkpoint of its "
            f"own (e.g. checkpoint: {checkpoint_dir.name}-{destination.split()[0]})"
        )


def batch_place(checkpoint_dir: Path, batch_id: int) -> BatchPlace:
    """A micro-batch's place in the order of landed files, as the checkpoint recorded it when
    the batch was planned, so a retried batch gets the same one: the batch's start time
    (offsets/<id>), and its files ranked by (modification time, path), the order in which the
    file source picks files (sources/0/<id>, or the <id>.compact file that holds it)."""
    offsets = (checkpoint_dir / "offsets" / str(batch_id)).read_text().splitlines()
    started_ms = json.loads(offsets[1])["batchTimestampMs"]
    source_log = checkpoint_dir / "sources" / "0"
    entries_file = source_log / str(batch_id)
    if not entries_file.exists():
        entries_file = source_log / f"{batch_id}.compact"
    entries = [json.loads(line) for line in entries_file.read_text().splitlines()[1:] if line.strip()]
    files = sorted((entry["timestamp"], entry["path"]) for entry in entries if entry["batchId"] == batch_id)
    if not files:
        raise LandingError(f"checkpoint {checkpoint_dir} lists no files for micro-batch {batch_id} in {entries_file}")
    # The log writes local paths as file:///x, Spark's _metadata.file_path as file:/x.
    names = [(_FILE_URI.sub(r"\1:/", path), listed) for listed, path in files]
    return BatchPlace(started_ms, {name: rank for rank, (name, _) in enumerate(names)}, dict(names))


def files_changed_since_listed(place: BatchPlace) -> list[tuple[str, str]]:
    """(file, why) for each local file of a batch that is gone, or was modified, since the batch
    listed it: its lines may not have been landed as they are now. Writers should write a file
    under a name starting with '.' and rename it when complete (read_new_files)."""
    changed = []
    for name, listed_ms in sorted(place.listed_ms.items()):
        address = urlparse(name)
        if address.scheme not in ("", "file"):
            continue
        try:
            modified_ms = os.stat(unquote(address.path)).st_mtime_ns // 1_000_000
        except FileNotFoundError:
            changed.append((name, "file was deleted after the landing listed it and before it was read: "
                                  "its lines are not landed; write files under a name starting with '.' and "
                                  "rename them when complete, and never delete one before it is landed"))
            continue
        if modified_ms != listed_ms:
            changed.append((name, f"file was modified after the landing listed it (at {listed_ms} ms, now {modified_ms} "
                                  "ms): the lines landed are those it held when read, and a later change is never "
                                  "landed; write files once, under a name starting with '.', then rename them"))
    return changed


def lines_of_local_files(names: Iterable[str]) -> list[tuple] | None:
    """The lines of files (their names as the batch lists them, file: URIs) read in the driver, as
    split_lines gives them (INPUT_LINE_SCHEMA tuples; an empty file has none); None when one is not
    on this machine, is gone or is not valid UTF-8 (split_lines marks such lines)."""
    lines: list[tuple] = []
    for name in sorted(names):
        address = urlparse(name)
        if address.scheme not in ("", "file"):
            return None
        try:
            with open(unquote(address.path), "rb") as handle:
                text = handle.read().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            return None
        if text:
            lines.extend((name, number, line, False) for number, line in enumerate(text.split("\n"), 1))
    return lines


# In the checkpoint: the files a landing is moving out (landed: in landing.yml), until all are moved.
_MOVES_FILE = "cdc_merge_landed_moves.json"


def move_landed_files(names: Iterable[str], landed_dir: Path, checkpoint_dir: Path) -> int:
    """Move each local file of names (file: URIs, as a batch lists them) into landed_dir, once the
    checkpoint has committed their batches: the input folder then holds only new files, and a
    landing's listing stays as short as they are. The list is kept in the checkpoint until every
    file is moved, so that a landing killed half way finishes the moves at its next start
    (finish_moves). A name landed_dir holds already keeps both files (the later one as name.<n>).
    How many were moved; one gone or elsewhere is left alone."""
    paths = [Path(unquote(address.path)) for address in map(urlparse, names) if address.scheme in ("", "file")]
    if not paths:
        return 0
    journal = checkpoint_dir / _MOVES_FILE
    partial = journal.with_name("." + journal.name)
    partial.write_text(json.dumps([str(path) for path in paths]))
    os.replace(partial, journal)
    moved = sum(_move(path, landed_dir) for path in paths)
    journal.unlink()
    log.info("moved %d landed files to %s", moved, landed_dir)
    return moved


def finish_moves(checkpoint_dir: Path, landed_dir: Path | None) -> int:
    """The moves a landing killed half way left (move_landed_files): how many files were moved now."""
    journal = checkpoint_dir / _MOVES_FILE
    if landed_dir is None or not journal.exists():
        return 0
    moved = sum(_move(Path(name), landed_dir) for name in json.loads(journal.read_text()))
    journal.unlink()
    log.info("moved %d files an interrupted landing had landed to %s", moved, landed_dir)
    return moved


def _move(source: Path, landed_dir: Path) -> bool:
    if not source.exists():
        return False  # moved before a crash, or gone
    landed_dir.mkdir(parents=True, exist_ok=True)
    target = landed_dir / source.name
    copy = 0
    while target.exists():
        copy += 1
        target = landed_dir / f"{source.name}.{copy}"
    try:
        os.rename(source, target)
    except FileNotFoundError:
        return False
    except OSError as error:
        if error.errno != errno.EXDEV:
            raise
        # The landed folder is on another disk: a whole copy under a hidden name, then its name.
        hidden = landed_dir / f".{target.name}.moving"
        shutil.copy2(source, hidden)
        os.replace(hidden, target)
        source.unlink()
    return True


# Each time the input folder, landed files kept there, passes a multiple of this many files, the
# landing warns (once a multiple in a process).
FILES_BEFORE_WARNING = 10_000
_warned_at: dict[Path, int] = {}


def input_file_count(input_dir: Path) -> int | None:
    """How many entries the input folder holds now; None when it cannot be read."""
    try:
        with os.scandir(input_dir) as entries:
            return sum(1 for _ in entries)
    except OSError:
        return None


def warn_of_a_long_listing(input_dir: Path, count: int | None, config_file: Path | None) -> bool:
    """Each landing lists the whole input folder (count entries): say what to change once the
    folder passes another FILES_BEFORE_WARNING files (BENCHMARKS.md, "Levers tried"). Whether it warned."""
    step = (count or 0) // FILES_BEFORE_WARNING
    if step == 0 or _warned_at.get(input_dir, 0) >= step:
        return False
    _warned_at[input_dir] = step
    log.warning("%s holds %d files, and each landing lists them all, landed or not: set 'landed: <folder>' in %s to move "
                "the landed ones out (docs/landing.md), unless another landing config reads this folder too",
                input_dir, count, config_file or "the landing config")
    return True


_FILE_URI = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):///")


def latest_planned_batch(checkpoint_dir: Path) -> int:
    """The highest micro-batch id the checkpoint holds offsets for; -1 for a new checkpoint.

    A restarted query runs that batch again when its commit is missing; every later batch is
    planned by the run itself, so no earlier run can have tried it.
    """
    offsets = checkpoint_dir / "offsets"
    planned = [int(entry.name) for entry in offsets.iterdir() if entry.name.isdigit()] if offsets.is_dir() else []
    return max(planned, default=-1)
