"""Which raw table a landing checkpoint's files went into (python_jobs/landing/io/checkpoint_table.py)."""

from __future__ import annotations

import pytest

from python_jobs.landing.io.checkpoint_table import TableIdentity, claim_raw_table
from python_jobs.landing.io.errors import LandingError


def committed(checkpoint, batches: int) -> None:
    (checkpoint / "commits").mkdir(parents=True, exist_ok=True)
    for batch in range(batches):
        (checkpoint / "commits" / str(batch)).write_text("v1\n")


def test_the_first_landing_records_the_table_and_the_next_ones_land_into_it(tmp_path):
    claim_raw_table(tmp_path, "raw.events", TableIdentity("a", has_commits=False))
    committed(tmp_path, 3)
    claim_raw_table(tmp_path, "raw.events", TableIdentity("a", has_commits=True))
    assert (tmp_path / "cdc_merge_raw_table_uuid").read_text() == "a\n"


def test_a_table_made_again_under_the_name_is_refused(tmp_path):
    claim_raw_table(tmp_path, "raw.events", TableIdentity("a", has_commits=False))
    committed(tmp_path, 2)
    with pytest.raises(LandingError, match=r"files landed into raw.events \(its last 2 batches committed\), but raw.events is not the table"):
        claim_raw_table(tmp_path, "raw.events", TableIdentity("b", has_commits=True))
    assert (tmp_path / "cdc_merge_raw_table_uuid").read_text() == "a\n"


@pytest.mark.parametrize(("batches", "has_commits", "refused"), [(0, False, False), (2, True, False), (2, False, True)])
def test_a_checkpoint_from_before_the_record_refuses_only_a_table_without_a_commit(tmp_path, batches, has_commits, refused):
    committed(tmp_path, batches)
    if refused:
        with pytest.raises(LandingError, match="remove the checkpoint folder"):
            claim_raw_table(tmp_path, "raw.events", TableIdentity("b", has_commits))
        assert not (tmp_path / "cdc_merge_raw_table_uuid").exists()
    else:
        claim_raw_table(tmp_path, "raw.events", TableIdentity("b", has_commits))
        assert (tmp_path / "cdc_merge_raw_table_uuid").read_text() == "b\n"


def test_a_sink_without_an_identity_is_not_checked(tmp_path):
    committed(tmp_path, 2)
    claim_raw_table(tmp_path, "raw.events", None)
    assert not (tmp_path / "cdc_merge_raw_table_uuid").exists()
