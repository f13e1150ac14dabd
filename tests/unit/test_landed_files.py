"""Files leave the input folder once landed (io.move_landed_files), and a folder that keeps them
warns past FILES_BEFORE_WARNING files (io.long_listing_warning)."""

from __future__ import annotations

from python_jobs.landing.io import input_files


def test_each_local_file_moves_and_a_name_landed_before_keeps_both(tmp_path):
    inbox, landed = tmp_path / "inbox", tmp_path / "landed"
    inbox.mkdir()
    for name in ("a.json", "b.json"):
        (inbox / name).write_text(name)
    landed.mkdir()
    (landed / "a.json").write_text("an earlier a.json")
    names = [f"file:{inbox / 'a.json'}", f"file://{inbox / 'b.json'}", f"file:{inbox / 'gone.json'}",
             "s3a://bucket/inbox/c.json"]

    assert input_files.move_landed_files(names, landed) == 2

    assert list(inbox.iterdir()) == []
    assert {path.name: path.read_text() for path in landed.iterdir()} == {
        "a.json": "an earlier a.json", "a.json.1": "a.json", "b.json": "b.json"}


def test_a_folder_that_keeps_its_landed_files_warns_each_time_it_passes_another_step(tmp_path, monkeypatch):
    monkeypatch.setattr(input_files, "FILES_BEFORE_WARNING", 3)
    monkeypatch.setattr(input_files, "_warned_at", {})

    def deliver(count):
        for _ in range(count):
            (tmp_path / f"{len(list(tmp_path.iterdir()))}.json").write_text("")
        return input_files.long_listing_warning(tmp_path, input_files.input_file_count(tmp_path), tmp_path / "landing.yml")

    assert deliver(2) is None
    warning = deliver(1)
    assert warning is not None and "holds 3 files" in warning and f"'landed: <folder>' in {tmp_path / 'landing.yml'}" in warning
    assert deliver(2) is None  # said once for this step
    assert "holds 6 files" in deliver(1)
    assert input_files.input_file_count(tmp_path / "missing") is None
