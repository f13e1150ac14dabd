"""dbt-databend-cloud's relation, with the type a macro gives it kept.

`DatabendRelation.create` takes the relation type as `rt` and sets `type` from it, so the `type=`
that dbt's own macros pass (`api.Relation.create(..., type='table')`) is dropped: the relation
has no type. dbt's snapshot materialization then stops a first snapshot ("Trying to create table
..., but it currently exists as a None"). Here `type` is kept when `rt` is not given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Type, TypeVar

from dbt.adapters.contracts.relation import RelationType
from dbt.adapters.databend.relation import DatabendRelation

Self = TypeVar("Self", bound="CdcDatabendRelation")


@dataclass(frozen=True, eq=False, repr=False)
class CdcDatabendRelation(DatabendRelation):
    @classmethod
    def create(
        cls: Type[Self],
        database: Optional[str] = None,
        schema: Optional[str] = None,
        identifier: Optional[str] = None,
        rt: Optional[RelationType] = None,
        **kwargs: Any,
    ) -> Self:
        given = kwargs.pop("type", None)
        return super().create(database, schema, identifier, rt if rt is not None else given, **kwargs)
