"""The adapter method behind `dbt run-operation cdc_merge.cdc_verify` (macros/verify.sql): each
mirror compared with its live source table (python_jobs/verify/). A mixin of both adapters; each
says how its engine quotes a string (sql_string_literal)."""

import os
import time
from datetime import datetime, timezone
from typing import Any, Dict, List, Mapping, Optional, Sequence

from dbt.adapters.base import available
from dbt.adapters.base.meta import AdapterMeta
from dbt.adapters.events.logging import AdapterLogger
from dbt_common.exceptions import DbtRuntimeError

from python_jobs.verify.check import (
    DIFFERENCES_MESSAGE,
    REPORT_FILE,
    MirrorCheck,
    check_by_ranges,
    check_mirror,
    write_report,
)
from python_jobs.verify.compare import narrower_decimals
from python_jobs.verify.in_flight import MirrorProgress
from python_jobs.verify.key_match import KeyChanged, key_changed
from python_jobs.verify.mirror_ranges import MirrorRanges, ranged_key
from python_jobs.verify.source_ranges import KeyRetyped, RangesUnsupported
from python_jobs.verify.sources import SourceError, source_from


logger = AdapterLogger("cdc_merge")


class VerifyMethods(metaclass=AdapterMeta):
    """AdapterMeta collects the @available methods, as it does for the adapter class itself."""

    def sql_string_literal(self, text: str) -> str:
        raise NotImplementedError

    # The engine's name in python_jobs/verify/row_hash.py.
    verify_engine = "spark"

    @available
    def cdc_verify_mirrors(self, mirrors: Sequence[Mapping[str, Any]], source_setting: Any, sample: Optional[int],
                           options: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
        """{'lines': the report, 'differing': mirrors that differ, 'summary'}. With sample: counts and a
        sample of rows; without: every row, by key ranges (options: segments, leaf_rows, wait_seconds)."""
        try:
            source = source_from(source_setting)
        except SourceError as error:
            raise DbtRuntimeError(f"cdc_verify: {error}") from None
        lines: List[str] = []
        checks: List[Dict[str, Any]] = []
        # When each raw snapshot was first seen, shared by the mirrors' checks (in_flight.MirrorProgress).
        options = {**(options or {}), "first_seen": {}}
        differing = 0
        try:
            for mirror in mirrors:
                started, checked_at = time.monotonic(), datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")
                try:
                    check = self._verify_mirror(mirror, source, sample, options)
                    if mirror.get("unkeyed_sql"):
                        check.unkeyed = int(self._verify_rows(mirror["unkeyed_sql"])[0][0] or 0)
                except (SourceError, KeyRetyped, KeyChanged) as error:
                    raise DbtRuntimeError(f"cdc_verify {mirror['relation']}: {error}") from None
                lines.extend(check.lines())
                checks.append(check.record(mirror, checked_at, time.monotonic() - started))
                differing += not check.clean
        finally:
            source.close()
        compared = f"their counts and {int(sample)} sampled rows each" if sample else "every row"
        summary = (f"{differing} of {len(mirrors)} {DIFFERENCES_MESSAGE} {source.name}" if differing
                   else f"{len(mirrors)} mirrors equal {source.name} in {compared}")
        report = {"lines": [*lines, summary], "differing": differing, "summary": summary, "checks": checks}
        write_report(os.path.join(self.config.project_root, self.config.target_path, REPORT_FILE), report)
        return report

    @available
    def cdc_sql_string(self, text: Any) -> str:
        """A value as this engine's string literal (macros/verify_results.sql)."""
        return self.sql_string_literal("" if text is None else str(text))

    def _verify_mirror(self, mirror: Mapping[str, Any], source: Any, sample: Optional[int],
                       options: Mapping[str, Any]) -> MirrorCheck:
        check = self._check_mirror(mirror, source, sample, options)
        check.notes += narrower_decimals(mirror["columns"], source.declared_types(mirror["source_table"]))
        return check

    def _check_mirror(self, mirror: Mapping[str, Any], source: Any, sample: Optional[int],
                      options: Mapping[str, Any]) -> MirrorCheck:
        changed = key_changed(mirror["source_table"], mirror["relation"], mirror["key"],
                              source.key_names(mirror["source_table"]))
        if changed:
            raise changed
        if not sample:
            try:
                source_side = source.ranges(mirror["source_table"], mirror["columns"])
            except RangesUnsupported as error:
                check = check_mirror(mirror, source, 1000, self._verify_rows, self.sql_string_literal)
                check.notes.append(f"{error}: counts and 1000 sampled rows compared instead")
                return check
            mirror_side = MirrorRanges(self.verify_engine, dict(mirror), ranged_key(mirror["key"], source_side.key_names),
                                       source_side.in_checksum, self._verify_rows, self.sql_string_literal)
            # The source held at one log position while the mirror is compared with it (in_flight.py).
            position = source.pin_position()
            try:
                return check_by_ranges(mirror, source_side, mirror_side, {**options, "note": logger.info},
                                       MirrorProgress(mirror, self._verify_rows, options.get("first_seen"),
                                                      options.get("capture_state")), position)
            finally:
                source.release()
        return check_mirror(mirror, source, int(sample), self._verify_rows, self.sql_string_literal)

    def _verify_rows(self, sql: str) -> List[Sequence[Any]]:
        _, table = self.execute(sql, fetch=True)
        return [tuple(row.values()) for row in table]
