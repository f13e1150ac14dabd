"""Whether a cdc_merge model gives one row for every row of its batch (model_rows.sql).

A mirror applies every change of its source table: a key whose newest change the model leaves out
(a `where`, a `limit`, an inner join) is not applied, and its mirror row stays as it was; a join or an
explode that repeats a key fails the write. The model's plan says which steps it takes above the
batch view: a step that can drop or repeat rows outside the view itself and outside the subqueries
of its expressions refuses the model before anything is written. Read once for each model SQL the
mirror has not run with (its checksum). Spark's analyzed plan (`explain extended`) marks the view
in the tree; Databend's unoptimized plan (`explain raw`) has the view's steps inlined and its
expressions' subqueries left out, so there the model's steps are those beyond the view's own plan.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Optional

# Plan steps that can leave out or repeat a row of their input, and the SQL that makes each.
ROW_CHANGING_STEPS = {
    "Filter": "a where or having clause",
    "Join": "a join",
    "Aggregate": "a group by or distinct",
    "Distinct": "a distinct",
    "Deduplicate": "a distinct",
    "GlobalLimit": "a limit",
    "LocalLimit": "a limit",
    "Offset": "an offset",
    "Tail": "a tail",
    "Sample": "a tablesample",
    "Generate": "an explode or lateral view",
    "Union": "a union",
    "Intersect": "an intersect",
    "Except": "an except",
    "Expand": "a grouping set",
}
# Databend's raw plan steps that can leave out or repeat a row (Join(Left), Aggregate(Initial): by the name's first word).
RAW_ROW_CHANGING_STEPS = {
    "Filter": "a where, having or qualify clause",
    "Join": "a join, intersect or except",
    "Aggregate": "a group by, distinct or union",
    "Limit": "a limit or offset",
    "ProjectSet": "an unnest",
    "UnionAll": "a union",
}
RAW_PLAN = "== Raw Plan =="
BATCH_VIEW_RAW_PLAN = "== Batch View Raw Plan =="
_NAME = re.compile(r"[A-Za-z]+")
_RAW_STEP = re.compile(r"^[\s│├└─]*([A-Z][A-Za-z]*)(?:\(|$)")
_BATCH = "the batch view"


@dataclass(frozen=True)
class _Step:
    column: int  # where the step's name starts on its line
    name: str
    ignored: bool  # inside the batch view, or inside a subquery of an expression


def analyzed_plan_lines(explained: str) -> list[str]:
    """The analyzed logical plan's tree lines of `explain extended` output (its schema line left out)."""
    lines = explained.splitlines()
    start = next((number for number, line in enumerate(lines) if line.startswith("== Analyzed Logical Plan ==")), None)
    if start is None:
        return []
    tree = []
    for line in lines[start + 2:]:
        if not line.strip() or line.startswith("== "):
            break
        tree.append(line)
    return tree


def row_changing_steps(explained: str, batch_view: str) -> list[str]:
    """The names of the plan's steps that can drop or repeat rows, outside the batch view and
    outside the subqueries of expressions. A step's children start their line where its name
    starts; an expression's subquery starts three columns further, after a ':'."""
    stack: list[_Step] = []
    found: list[str] = []
    for line in analyzed_plan_lines(explained):
        column = len(line) - len(line.lstrip(" :+-|"))
        match = _NAME.match(line, column)
        if match is None:
            continue
        while stack and stack[-1].column >= column:
            stack.pop()
        parent = stack[-1] if stack else None
        marker = column - 3
        inner = parent is not None and parent.column < marker
        ignored = parent is not None and (parent.ignored or inner or parent.name == _BATCH)
        step = _Step(column, match.group(0), ignored)
        if step.name in ("View", "SubqueryAlias") and _names(line[column:], batch_view):
            step = _Step(column, _BATCH, ignored)
        stack.append(step)
        if not ignored and step.name in ROW_CHANGING_STEPS:
            found.append(step.name)
    return found


def _names(step_line: str, batch_view: str) -> bool:
    """Whether a View or SubqueryAlias step is of the batch view (by its last name part)."""
    return re.search(rf"(?<![\w$]){re.escape(batch_view)}(?![\w$])", step_line, re.IGNORECASE) is not None


def _plan_section(explained: str, header: str) -> list[str]:
    lines = explained.splitlines()
    if header not in lines:
        return []
    section = []
    for line in lines[lines.index(header) + 1:]:
        if line.startswith("== "):
            break
        section.append(line)
    return section


def raw_row_changing_steps(explained: str) -> list[str]:
    """The row-changing steps of Databend's raw plan of the model beyond those of the batch view's own
    (both in explained, under RAW_PLAN and BATCH_VIEW_RAW_PLAN)."""
    def steps(header: str) -> Counter:
        names = (_RAW_STEP.match(line) for line in _plan_section(explained, header))
        return Counter(match.group(1) for match in names if match and match.group(1) in RAW_ROW_CHANGING_STEPS)

    return list((steps(RAW_PLAN) - steps(BATCH_VIEW_RAW_PLAN)).elements())


def model_rows_problem(explained: Optional[str], batch_view: str, model: str) -> Optional[str]:
    """What to change in a model whose plan can drop or repeat its batch's rows, or None."""
    if not explained:
        return None
    if RAW_PLAN in explained.splitlines():
        steps, known = list(dict.fromkeys(raw_row_changing_steps(explained))), RAW_ROW_CHANGING_STEPS
    else:
        steps, known = list(dict.fromkeys(row_changing_steps(explained, batch_view))), ROW_CHANGING_STEPS
    if not steps:
        return None
    made_by = ", ".join(f"{known[step]} ({step})" for step in steps)
    return (f"cdc_merge model '{model}': its SQL can leave out or repeat rows of cdc_events: {made_by}. A mirror "
            "applies every change of its source table, and a row the model left out would stay in the mirror as it "
            "was. Select one row for each row of cdc_events, and filter or join in a model on top of the mirror "
            "(docs/mirror_models.md).")
