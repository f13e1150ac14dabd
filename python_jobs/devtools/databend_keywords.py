"""Prints the words Databend's SQL does not take as a column's name where the mirror's statements
write one unquoted, for python_jobs/apply/column_names.py: every keyword of sqlfluff's dialects
(3,783 words) named as a column in the embedded engine, in a select list, qualified, in a table's
definition and in ALTER TABLE ADD COLUMN.

    .venv/bin/python -m python_jobs.devtools.databend_keywords
"""

from __future__ import annotations

import importlib
import pkgutil

import databend
import sqlfluff.dialects


def candidate_words() -> list[str]:
    words: set[str] = set()
    for module in pkgutil.iter_modules(sqlfluff.dialects.__path__):
        if module.name.endswith("_keywords"):
            for value in vars(importlib.import_module(f"sqlfluff.dialects.{module.name}")).values():
                texts = value.split() if isinstance(value, str) else value if isinstance(value, (list, set, tuple)) else []
                words |= {text.strip().lower() for text in texts if isinstance(text, str) and text.strip().isidentifier()}
    return sorted(words)


def not_names(words: list[str]) -> list[str]:
    engine = databend.SessionContext()
    engine.sql("create table probe (probe_key int)").collect()
    refused = []
    for number, word in enumerate(words):
        statements = (f"select {word} from (select 1 as {word})", f"select t.{word} from (select 1 as {word}) as t",
                      f"create table probe_{number} ({word} int)", f"alter table probe add column {word} int",
                      f"alter table probe drop column {word}")
        try:
            for statement in statements:
                engine.sql(statement).collect()
        except Exception:  # the engine's syntax error: a keyword here
            refused.append(word)
    return refused


if __name__ == "__main__":
    print(" ".join(not_names(candidate_words())))
