"""When a mirror is maintained (python_jobs/apply/maintenance_due.py): each threshold crossed, from a
query of the table's metadata or from Iceberg's metadata read in the JVM."""

from __future__ import annotations

import pytest

from python_jobs.apply.maintenance_due import reasons

SETTINGS = {"snapshot_retention_hours": 1, "maintenance_max_files": 100, "maintenance_max_delete_files_per_data_file": 2,
            "maintenance_max_snapshots": 50, "maintenance_max_age_hours": 24}
QUIET = {"small_data_files": 10, "data_files": 10, "delete_files": 5, "expirable_snapshots": 3, "oldest_expirable_age_seconds": 7200}


@pytest.mark.parametrize(
    "state, expected",
    [
        (QUIET, []),
        ({**QUIET, "small_data_files": 96}, ["101 small data and delete files > maintenance_max_files 100"]),
        ({**QUIET, "delete_files": 21}, ["21 delete files for 10 data files > maintenance_max_delete_files_per_data_file 2"]),
        # No data file at all: one counts, so a few deletes of an emptied table are not due at once.
        ({**QUIET, "data_files": 0, "delete_files": 2}, []),
        ({**QUIET, "expirable_snapshots": 51}, ["51 snapshots older than snapshot_retention_hours > maintenance_max_snapshots 50"]),
        ({**QUIET, "oldest_expirable_age_seconds": 90_000}, ["a snapshot 25.0 h old > maintenance_max_age_hours 24"]),
        # As the idle check reads it: the ages of the snapshots before the current one; the young ones are kept.
        ({"small_data_files": 1, "data_files": 1, "delete_files": 0, "older_snapshot_ages_seconds": [60.0] * 80 + [90_000.0]},
         ["a snapshot 25.0 h old > maintenance_max_age_hours 24"]),
        ({"small_data_files": 1, "data_files": 1, "delete_files": 0, "older_snapshot_ages_seconds": [4000.0] * 51},
         ["51 snapshots older than snapshot_retention_hours > maintenance_max_snapshots 50"]),
        # A Databend table nothing was written to: no numbers at all.
        ({"small_data_files": 0, "data_files": 0, "delete_files": 0, "expirable_snapshots": None}, []),
    ],
)
def test_each_threshold_crossed_is_a_reason(state, expected):
    assert reasons(state, SETTINGS) == expected
