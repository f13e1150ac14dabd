"""The adapter method behind `dbt run-operation cdc_merge.cdc_verify` (macros/verify.sql): each
mirror compared with its live source table (python_jobs/verify/). A mixin of both adapters; each
says how its engine quotes a string (sql_string_literal)."""

import os
from typing import Any, Dict, List, Mapping, Sequence

from dbt.adapters.base import available
from dbt.adapters.base.meta import AdapterMeta
from dbt_common.exceptions import DbtRuntimeError

from python_jobs.verify.check import DIFFERENCES_MESSAGE, REPORT_FILE, check_mirror, write_report
from python_jobs.verify.sources import SourceError, source_from


class VerifyMethods(metaclass=AdapterMeta):
    """AdapterMeta collects the @available methods, as it does for the adapter class itself."""

    def sql_string_literal(self, text: str) -> str:
        raise NotImplementedError

    @available
    def cdc_verify_mirrors(self, mirrors: Sequence[Mapping[str, Any]], source_setting: Any, sample: int) -> Dict[str, Any]:
        """{'lines': the report, 'differing': mirrors that differ, 'summary'}."""
        try:
            source = source_from(source_setting)
        except SourceError as error:
            raise DbtRuntimeError(f"cdc_verify: {error}") from None
        lines: List[str] = []
        differing = 0
        try:
            for mirror in mirrors:
                try:
                    check = check_mirror(mirror, source, int(sample), self._verify_rows, self.sql_string_literal)
                except SourceError as error:
                    raise DbtRuntimeError(f"cdc_verify {mirror['relation']}: {error}") from None
                lines.extend(check.lines())
                differing += not check.clean
        finally:
            source.close()
        summary = (f"{differing} of {len(mirrors)} {DIFFERENCES_MESSAGE} {source.name}" if differing
                   else f"{len(mirrors)} mirrors equal {source.name} in their counts and {int(sample)} sampled rows each")
        report = {"lines": [*lines, summary], "differing": differing, "summary": summary}
        write_report(os.path.join(self.config.project_root, self.config.target_path, REPORT_FILE), report)
        return report

    def _verify_rows(self, sql: str) -> List[Sequence[Any]]:
        _, table = self.execute(sql, fetch=True)
        return [tuple(row.values()) for row in table]
