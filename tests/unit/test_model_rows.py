"""Which steps of a model's analyzed plan can leave out or repeat its batch's rows (python_jobs/apply/model_rows.py).
The plans are Spark 3.5's `explain extended` of models over a batch view docs__cdc_batch (its own steps,
a Filter among them, are the view's and do not count)."""

from python_jobs.apply.model_rows import model_rows_problem, row_changing_steps

BATCH = """== Parsed Logical Plan ==
'Project [*]

== Analyzed Logical Plan ==
id: int, region: string, _cdc_key: string, _cdc_seq: int
WithCTE
:- CTERelationDef 0, false
:  +- SubqueryAlias events
:     +- Project [_cdc_key#27, _cdc_action#28, _cdc_seq#29, _cdc_row#30]
:        +- SubqueryAlias docs__cdc_batch
:           +- View (`docs__cdc_batch`, [_cdc_key#27,_cdc_action#28,_cdc_seq#29,_cdc_row#30])
:              +- Project [key#35 AS _cdc_key#23, action#38 AS _cdc_action#24, seq#36 AS _cdc_seq#25, row#37 AS _cdc_row#26]
:                 +- Filter (seq#36 > 0)
:                    +- SubqueryAlias raw
:                       +- View (`raw`, [key#35,seq#36,row#37,action#38])
:                          +- OneRowRelation
:- CTERelationDef 1, false
:  +- SubqueryAlias final
:     +- Project [from_json(StructField(id,IntegerType,true), (mode,PERMISSIVE), _cdc_row#30, Some(Etc/UTC)).id AS id#16, _cdc_key#27, _cdc_seq#29]
:        +- SubqueryAlias events
:           +- CTERelationRef 0, true, [_cdc_key#27, _cdc_action#28, _cdc_seq#29, _cdc_row#30], false
{top}

== Optimized Logical Plan ==
Filter (seq#36 > 0)
"""
PLAIN = """+- Project [id#16, region#17, _cdc_key#27, _cdc_seq#29]
   +- SubqueryAlias final
      +- CTERelationRef 1, true, [id#16, region#17, _cdc_key#27, _cdc_seq#29], false"""
FILTERED_BY_SUBQUERY = """+- Project [id#166, region#167, _cdc_key#177, _cdc_seq#179]
   +- Filter region#167 IN (list#165 [])
      :  +- Project [region#191]
      :     +- SubqueryAlias regions
      :        +- View (`regions`, [region#191,name#192])
      :           +- OneRowRelation
      +- SubqueryAlias final
         +- CTERelationRef 11, true, [id#166, region#167, _cdc_key#177, _cdc_seq#179], false"""
# A scalar subquery's aggregate and a window keep every row.
SUBQUERY_AND_WINDOW = """+- Project [id#16, _cdc_key#27, top#70, rn#71]
   +- Project [id#16, _cdc_key#27, top#70, _cdc_seq#29, rn#71, rn#71]
      +- Window [rank(_cdc_seq#29) windowspecdefinition(_cdc_seq#29 ASC NULLS FIRST) AS rn#71], [_cdc_seq#29 ASC NULLS FIRST]
         +- Project [id#16, _cdc_key#27, scalar-subquery#69 [] AS top#70, _cdc_seq#29]
            :  +- Aggregate [max(name#74) AS max(name)#76]
            :     +- SubqueryAlias regions
            :        +- View (`regions`, [region#73,name#74])
            :           +- OneRowRelation
            +- SubqueryAlias final
               +- CTERelationRef 1, true, [id#16, region#17, _cdc_key#27, _cdc_seq#29], false"""
JOINED_AND_LIMITED = """+- GlobalLimit 10
   +- LocalLimit 10
      +- Project [id#16, _cdc_key#27, name#75]
         +- Join LeftOuter, (region#17 = region#74)
            :- SubqueryAlias final
            :  +- CTERelationRef 1, true, [id#16, region#17, _cdc_key#27, _cdc_seq#29], false
            +- SubqueryAlias regions
               +- View (`regions`, [region#74,name#75])
                  +- OneRowRelation"""


def test_a_projection_of_the_batch_keeps_every_row_whatever_the_batch_view_does():
    assert row_changing_steps(BATCH.format(top=PLAIN), "docs__cdc_batch") == []
    assert row_changing_steps(BATCH.format(top=SUBQUERY_AND_WINDOW), "docs__cdc_batch") == []
    assert model_rows_problem(BATCH.format(top=PLAIN), "docs__cdc_batch", "docs") is None


def test_filters_joins_and_limits_above_the_batch_are_named():
    assert row_changing_steps(BATCH.format(top=FILTERED_BY_SUBQUERY), "docs__cdc_batch") == ["Filter"]
    assert row_changing_steps(BATCH.format(top=JOINED_AND_LIMITED), "docs__cdc_batch") == ["GlobalLimit", "LocalLimit", "Join"]
    problem = model_rows_problem(BATCH.format(top=JOINED_AND_LIMITED), "DOCS__CDC_BATCH", "docs")
    assert problem.startswith("cdc_merge model 'docs': its SQL can leave out or repeat rows of cdc_events: a limit (GlobalLimit), "
                              "a limit (LocalLimit), a join (Join).")


def test_another_view_is_not_the_batch_and_no_plan_says_nothing():
    assert row_changing_steps(BATCH.format(top=PLAIN), "other__cdc_batch") == ["Filter"]
    assert model_rows_problem(None, "docs__cdc_batch", "docs") is None


# Databend's `explain raw` of a model over the batch view (its steps inlined: its Filter is the view's) and of the view.
RAW_BATCH_VIEW = """EvalScalar
├── scalars: [x.id (#0) AS (#0), x.seq (#1) AS (#1)]
└── Filter
    ├── filters: [eq(x.rn (#2), 1)]
    └── Window
        ├── aggregate function: row_number
        └── Scan
            ├── table: raw.raw_events
            └── limit: NONE"""


def raw_plans(model_steps: str) -> str:
    return f"== Raw Plan ==\n{model_steps}{RAW_BATCH_VIEW.replace(chr(10), chr(10) + '    ')}\n== Batch View Raw Plan ==\n{RAW_BATCH_VIEW}"


def test_databend_a_projection_with_a_scalar_subquery_keeps_every_row():
    explained = raw_plans("EvalScalar\n├── scalars: [x.id (#0) AS (#0), SUBQUERY AS (#11)]\n└── ")
    assert model_rows_problem(explained, "docs__cdc_batch", "orders") is None


def test_databend_steps_beyond_the_batch_views_own_are_named():
    explained = raw_plans("Limit\n├── limit: [100]\n└── EvalScalar\n    ├── scalars: []\n    └── Join(Left)\n"
                          "        ├── equi conditions: []\n        ├── EvalScalar\n        │   └── Scan\n        └── ")
    problem = model_rows_problem(explained, "docs__cdc_batch", "orders")
    assert problem is not None and "a limit or offset (Limit), a join, intersect or except (Join)" in problem
    filtered = raw_plans("EvalScalar\n├── scalars: []\n└── Filter\n    ├── filters: [eq(x.region (#3), 'EU')]\n    └── ")
    assert "a where, having or qualify clause (Filter)" in model_rows_problem(filtered, "docs__cdc_batch", "orders")
