"""Files leave the input folder once landed (io.move_landed_files), a landing killed while it moved
them finishes at its next start (io.finish_moves), and a folder that keeps them warns each time it
passes another FILES_BEFORE_WARNING files (io.warn_of_a_long_listing); a checkpoint belongs to one
destination (io.claim_checkpoint)."""

from __future__ import annotations

import json
import logging

import pytest

from python_jobs.landing.io import input_files


def test_each_local_file_moves_and_a_name_landed_before_keeps_both(tmp_path):
    inbox, landed, checkpoint = tmp_path / "inbox", tmp_path / "landed", tmp_path / "checkpoint"
    inbox.mkdir(), checkpoint.mkdir()
    for name in ("a.json", "b.json"):
        (inbox / name).write_text(name)
    landed.mkdir()
    (landed / "a.json").write_text("an earlier a.json")
    names = [f"file:{inbox / 'a.json'}", f"file://{inbox / 'b.json'}", f"file:{inbox / 'gone.json'}",
             "s3a://bucket/inbox/c.json"]

    assert input_files.move_landed_files(names, landed, checkpoint) == 2

    assert list(inbox.iterdir()) == [] and list(checkpoint.iterdir()) == []  # no moves left to finish
    assert {path.name: path.read_text() for path in landed.iterdir()} == {
        "a.json": "an earlier a.json", "a.json.1": "a.json", "b.json": "b.json"}


def test_moves_a_killed_landing_left_are_finished_at_the_next_start(tmp_path):
    inbox, landed, checkpoint = tmp_path / "inbox", tmp_path / "landed", tmp_path / "checkpoint"
    inbox.mkdir(), landed.mkdir(), checkpoint.mkdir()
    (inbox / "b.json").write_text("b")  # a.json was moved before the kill, b.json not yet
    (landed / "a.json").write_text("a")
    (inbox / "new.json").write_text("not landed yet")
    (checkpoint / "cdc_merge_landed_moves.json").write_text(json.dumps([str(inbox / "a.json"), str(inbox / "b.json")]))

    assert input_files.finish_moves(checkpoint, landed) == 1

    assert sorted(path.name for path in inbox.iterdir()) == ["new.json"]
    assert sorted(path.name for path in landed.iterdir()) == ["a.json", "b.json"]
    assert input_files.finish_moves(checkpoint, landed) == 0  # done: nothing left to finish


def test_a_folder_that_keeps_its_landed_files_warns_each_time_it_passes_another_step(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(input_files, "FILES_BEFORE_WARNING", 3)
    monkeypatch.setattr(input_files, "_warned_at", {})
    caplog.set_level(logging.WARNING, logger="cdc_merge")

    def deliver(count):
        for _ in range(count):
            (tmp_path / f"{len(list(tmp_path.iterdir()))}.json").write_text("")
        return input_files.warn_of_a_long_listing(tmp_path, input_files.input_file_count(tmp_path), tmp_path / "landing.yml")

    assert not deliver(2)
    assert deliver(1)
    assert "holds 3 files" in caplog.text and f"'landed: <folder>' in {tmp_path / 'landing.yml'}" in caplog.text
    assert not deliver(2)  # said once for this step
    assert deliver(1) and "holds 6 files" in caplog.text
    assert input_files.input_file_count(tmp_path / "missing") is None
    assert not input_files.warn_of_a_long_listing(tmp_path / "missing", None, None)


def test_a_checkpoint_records_its_destination_whole_and_refuses_another(tmp_path):
    checkpoint = tmp_path / "checkpoint"

    input_files.claim_checkpoint(checkpoint, "lake.cdc_raw.raw_events")
    input_files.claim_checkpoint(checkpoint, "lake.cdc_raw.raw_events")  # its own again: fine

    assert [path.name for path in checkpoint.iterdir()] == ["cdc_merge_destination"]  # no partial left
    with pytest.raises(input_files.LandingError, match="belongs to lake.cdc_raw.raw_events"):
        input_files.claim_checkpoint(checkpoint, "lake.other.raw_events")
