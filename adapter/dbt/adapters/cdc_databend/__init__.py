"""dbt adapter `cdc_databend`: dbt-databend-cloud with a catalog that dbt docs can use.

dbt-databend-cloud 1.8.1 sets every relation's database to None (Databend has no level above
schemas), and dbt's catalog filter drops every row whose database is None, so `dbt docs
generate` wrote an empty catalog. `dbt snapshot` works here too (relation.py, macros/snapshot.sql
of its include path). This plugin inherits everything else (its dependency, so every
`databend__` macro still applies); a profile opts in with `type: cdc_databend`.
"""

import warnings

from dbt.adapters.base import AdapterPlugin
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.cdc_core import demo_models

# databend-sqlalchemy (under dbt-databend-cloud) imports pkg_resources, which warned on every dbt run of a
# Databend target; the package pins setuptools below 81, which still has it (pyproject.toml).
warnings.filterwarnings("ignore", message="pkg_resources is deprecated", category=UserWarning)
try:
    import dbt.adapters.databend  # noqa: F401 - dbt-databend-cloud, of the extra `databend`
except ModuleNotFoundError as missing:
    # Without it dbt printed 50 lines of traceback ending in "No module named 'dbt.adapters.databend'".
    raise DbtRuntimeError(
        f"the target's type cdc_databend needs dbt-databend-cloud ({missing}): install cdc_merge with the extra "
        "`databend` in this virtualenv (pip install 'cdc_merge-<version>-py3-none-any.whl[lint,databend]'; "
        "docs/your_project.md, step 1), or choose another target (--target local)") from None
from dbt.adapters.cdc_databend.impl import CdcDatabendAdapter, CdcDatabendConnectionManager, CdcDatabendCredentials
from dbt.include import cdc_databend

__all__ = ["CdcDatabendConnectionManager", "Plugin"]

# A ref or YAML entry of a name only the package's disabled demo models have is one of a missing model (demo_models.py).
demo_models.install()

Plugin = AdapterPlugin(
    adapter=CdcDatabendAdapter,  # type: ignore[arg-type]
    credentials=CdcDatabendCredentials,
    include_path=cdc_databend.PACKAGE_PATH,
    dependencies=["databend"],
)
