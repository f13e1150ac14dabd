"""Why a mirror needs maintaining now (macros/materializations/cdc_merge/maintenance.sql): its small
data files and delete files, its delete files per data file, its expirable snapshots (older than
snapshot_retention_hours, not the current one), or the oldest of those, crossing a threshold of the
model's maintenance settings (docs/maintenance.md). A maintained table is below every threshold
however big it is and however long it stays idle.
"""

from __future__ import annotations

from typing import Any, List, Mapping, Optional, Sequence


def expirable(older_snapshot_ages_seconds: Sequence[float], keep_seconds: float) -> tuple[int, float]:
    """How many of the snapshots before the current one expiry may remove, and the oldest one's age,
    from their ages as Iceberg's metadata gives them (the idle check's state, table_metadata.py)."""
    ages = [float(age) for age in older_snapshot_ages_seconds if float(age) > keep_seconds]
    return len(ages), max(ages, default=0.0)


def reasons(state: Mapping[str, Any], settings: Mapping[str, Any]) -> List[str]:
    """state: small_data_files, data_files, delete_files and either expirable_snapshots with
    oldest_expirable_age_seconds (a query of the table's metadata, table_state.sql) or
    older_snapshot_ages_seconds (Iceberg's metadata read in the JVM); an empty list when none is due."""
    keep_seconds = float(settings["snapshot_retention_hours"]) * 3600
    ages: Optional[Sequence[float]] = state.get("older_snapshot_ages_seconds")
    if ages is not None:
        expirable_snapshots, oldest = expirable(ages, keep_seconds)
    else:
        expirable_snapshots, oldest = int(state.get("expirable_snapshots") or 0), float(state.get("oldest_expirable_age_seconds") or 0)
    small, data, deletes = (int(state.get(name) or 0) for name in ("small_data_files", "data_files", "delete_files"))
    found = []
    if small + deletes > int(settings["maintenance_max_files"]):
        found.append(f"{small + deletes} small data and delete files > maintenance_max_files {settings['maintenance_max_files']}")
    per_data_file = settings["maintenance_max_delete_files_per_data_file"]
    if deletes > float(per_data_file) * max(data, 1):
        found.append(f"{deletes} delete files for {data} data files > maintenance_max_delete_files_per_data_file {per_data_file}")
    if expirable_snapshots > int(settings["maintenance_max_snapshots"]):
        found.append(f"{expirable_snapshots} snapshots older than snapshot_retention_hours > maintenance_max_snapshots "
                     f"{settings['maintenance_max_snapshots']}")
    if oldest > float(settings["maintenance_max_age_hours"]) * 3600:
        found.append(f"a snapshot {round(oldest / 3600, 1)} h old > maintenance_max_age_hours {settings['maintenance_max_age_hours']}")
    return found
