"""The optimizer's fold of rows held in the driver, by generated code.

Spark's optimizer computes a projection over a local relation (a batch held in the driver: the
model's columns parsed from each event, the classification's lookups) itself, by an interpreted
projection row by row (`ConvertToLocalRelation`). For a batch of many rows that interpretation is
most of a warm batch's classification (docs/apply_service.md, "Build order", step 2). In dbt's own
session the rule is replaced by CompiledLocalProjection.java: Spark's rule, but a projection over
at least MIN_ROWS rows computed by a generated projection (compiled once per projection, kept in
Spark's code cache). The session's settings name the rule excluded, and the replacement runs among
the session's extra optimizations. $CDC_MERGE_COMPILED_FOLD=0 keeps Spark's rule; a profile that sets
its own `spark.sql.optimizer.excludedRules` keeps it too (dbt applies the profile's settings before
each statement, which would put the rule back under the replacement).
"""

from __future__ import annotations

import os
import threading
from typing import Any, Mapping, Optional

from dbt.adapters.cdc_spark.iceberg_jvm import jvm_class

COMPILED_FOLD_CLASS = "cdc_merge.iceberg.CompiledLocalProjection"
SPARK_FOLD_RULE = "org.apache.spark.sql.catalyst.optimizer.ConvertToLocalRelation"
EXCLUDED_RULES = "spark.sql.optimizer.excludedRules"
SWITCH_ENV = "CDC_MERGE_COMPILED_FOLD"
# Below this many rows the interpreted projection is cheaper than generating code for it: the
# generated code is compiled once per distinct projection (about 10-50 ms) and cached.
MIN_ROWS = 1000

_lock = threading.Lock()
# Per session (the Python object: hashing its JVM object asks the JVM), whether the replacement is in.
_state: dict = {}


def wanted(environ: Mapping[str, str], profile_settings: Mapping[str, Any]) -> bool:
    """Whether the compiled fold should be in: not switched off, and the profile leaves the
    optimizer's excluded rules alone."""
    return environ.get(SWITCH_ENV, "1").strip() not in ("0", "false", "no", "off") and EXCLUDED_RULES not in profile_settings


def excluded_rules(current: Optional[str], fold_excluded: bool) -> str:
    """The session's excluded rules with Spark's fold rule added or taken out, the others as they were."""
    rules = [rule.strip() for rule in (current or "").split(",") if rule.strip() and rule.strip() != SPARK_FOLD_RULE]
    return ",".join(rules + [SPARK_FOLD_RULE] if fold_excluded else rules)


def _set(session: Any, compiled: bool) -> None:
    """Puts the compiled fold in (when the helper jar is there) or takes it out."""
    converters = session._jvm.scala.collection.JavaConverters
    experimental = session._jsparkSession.experimental()
    rules = session._jvm.java.util.ArrayList()
    for rule in converters.seqAsJavaList(experimental.extraOptimizations()):
        if rule.getClass().getName() != COMPILED_FOLD_CLASS:
            rules.add(rule)
    rule_class = jvm_class(session, COMPILED_FOLD_CLASS) if compiled else None
    if rule_class is not None:
        rules.add(rule_class(MIN_ROWS))
    getattr(experimental, "extraOptimizations_$eq")(converters.asScalaBuffer(rules).toSeq())
    session.conf.set(EXCLUDED_RULES, excluded_rules(session.conf.get(EXCLUDED_RULES, None), rule_class is not None))


def ensure_compiled_fold(session: Any, profile_settings: Mapping[str, Any]) -> None:
    """The session's fold as $CDC_MERGE_COMPILED_FOLD and the profile want it; a dictionary look-up
    when it already is (called before each statement)."""
    want = wanted(os.environ, profile_settings)
    if _state.get(session) is want:
        return
    with _lock:
        if _state.get(session) is want:
            return
        for stale in [known for known in _state if known is not session]:
            del _state[stale]  # a stopped session's
        if session in _state or want:  # a session never given it keeps Spark's rule untouched
            _set(session, want)
        _state[session] = want
