"""The dbt package cdc_merge carries this repository's demo models (shop_customers, shop_orders, raw_events,
...), disabled in any other project (models/*/_*__models.yml). dbt keeps disabled models by name, so a
project's ref of a name it lacks that a demo model has (a model the user renamed, with a ref left behind)
failed with "depends on a node named 'shop_orders' which is disabled": the user's own model is not
disabled, it is gone, and the disabled one is the package's. Such a ref is now as any ref of a missing
name: "... which was not found". A ref naming the package (ref('cdc_merge', 'shop_orders')) and a ref
of the project's own disabled model are told as before. Both adapter plugins install it when dbt
loads them, before it parses the project."""

from __future__ import annotations

import inspect
from typing import Any, Optional

PACKAGE = "cdc_merge"


def hides_demo_model(disabled_package: Optional[str], target_package: Optional[str], referring_package: str) -> bool:
    """A disabled model found for a ref is the package's demo model that a ref of another project's
    node did not ask for by package: the ref is to be reported as not found."""
    return disabled_package == PACKAGE and not target_package and referring_package != PACKAGE


def install() -> None:
    from dbt.contracts.graph.manifest import Disabled, Manifest

    resolve_ref = Manifest.resolve_ref
    if getattr(resolve_ref, "_cdc_merge_demo_refs", False):
        return

    parameters = inspect.signature(resolve_ref)

    def resolve_ref_without_demo_models(self: Any, *args: Any, **kwargs: Any) -> Any:
        # dbt's own call, passed on as it came; its arguments read by name, whatever their order.
        found = resolve_ref(self, *args, **kwargs)
        if isinstance(found, Disabled):
            named = parameters.bind_partial(self, *args, **kwargs).arguments
            if hides_demo_model(getattr(found.target, "package_name", None), named.get("target_model_package"),
                                str(named.get("node_package"))):
                return None
        return found

    resolve_ref_without_demo_models._cdc_merge_demo_refs = True  # type: ignore[attr-defined]
    Manifest.resolve_ref = resolve_ref_without_demo_models  # type: ignore[method-assign]
