"""The tables of changes wal2json dropped, from its warnings (python_jobs/capture/postgres_skipped.py)."""

from python_jobs.capture.postgres_skipped import SkippedChanges, tables_to_read


def test_dropped_changes_name_their_captured_tables():
    skipped = SkippedChanges()
    skipped.append('WARNING:  no tuple identifier for UPDATE in table "shop"."items"\n')
    skipped.append('WARNING:  no tuple identifier for DELETE in table "shop"."parted_low"\n')
    skipped.append('WARNING:  no old tuple data for UPDATE in table "my schema"."odd.name"\n')
    skipped.append('NOTICE:  relation "x" already exists, skipping\n')
    dropped = skipped.take()
    assert dropped == {'shop"."items', 'shop"."parted_low', 'my schema"."odd.name'} and skipped.take() == set()
    tables = ["shop.items", "shop.parted", "shop.other", "my schema.odd.name"]
    assert tables_to_read(dropped, tables, {"shop.parted": ("shop.parted_high", "shop.parted_low")}) == [
        "shop.items", "shop.parted", "my schema.odd.name"]
