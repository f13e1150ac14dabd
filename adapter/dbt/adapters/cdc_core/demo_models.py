"""The dbt package cdc_merge carries this repository's demo models (shop_customers, shop_orders, raw_events,
...), disabled in any other project (models/*/_*__models.yml), and cdc-init writes mirrors of the same
names. dbt looks a name up across packages when the project lacks it, so a model the user renamed
(its .sql only) met the package's demo model twice:
- a ref left behind failed with "depends on a node named 'shop_orders' which is disabled": the user's
  own model is not disabled, it is gone. Such a ref is now as any ref of a missing name: "... which was
  not found". A ref naming the package (ref('cdc_merge', 'shop_orders')) and a ref of the project's own
  disabled model are told as before.
- the YAML entry left behind was attached to the package's model, which has its own, and dbt stopped
  with "two schema.yml entries for the same resource" naming only the user's file. Such an entry is
  now dbt's usual warning for an entry without a model.
Both adapter plugins install this when dbt loads them, before it parses the project."""

from __future__ import annotations

import inspect
from typing import Any, Optional

PACKAGE = "cdc_merge"


def hides_demo_model(disabled_package: Optional[str], target_package: Optional[str], referring_package: str) -> bool:
    """A disabled model found for a ref is the package's demo model that a ref of another project's
    node did not ask for by package: the ref is to be reported as not found."""
    return disabled_package == PACKAGE and not target_package and referring_package != PACKAGE


def entry_misses_its_model(own_model: Optional[str], any_model: Optional[str], entry_package: str) -> bool:
    """A project's YAML entry whose project has no model of its name, and which dbt would attach to the
    package's model of that name (unique ids `model.<package>.<name>`): the entry has no model."""
    return (own_model is None and any_model is not None and entry_package != PACKAGE
            and any_model.split(".")[1] == PACKAGE)


def install() -> None:
    _install_refs()
    _install_entries()


def _install_refs() -> None:
    from dbt.contracts.graph.manifest import Disabled, Manifest

    resolve_ref = Manifest.resolve_ref
    if getattr(resolve_ref, "_cdc_merge_demo_models", False):
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

    resolve_ref_without_demo_models._cdc_merge_demo_models = True  # type: ignore[attr-defined]
    Manifest.resolve_ref = resolve_ref_without_demo_models  # type: ignore[method-assign]


def _install_entries() -> None:
    from dbt.events.types import NoNodeForYamlKey
    from dbt.parser.schemas import NodePatchParser
    from dbt_common.events.functions import warn_or_error

    parse_patch = NodePatchParser.parse_patch
    if getattr(parse_patch, "_cdc_merge_demo_models", False):
        return

    def parse_patch_without_demo_models(self: Any, block: Any, refs: Any) -> None:
        # Models without versions only: a versioned entry is looked up by dbt's own rules.
        target = block.target
        if target.yaml_key == "models" and not getattr(target, "versions", None):
            lookup = self.manifest.ref_lookup
            own = lookup.get_unique_id(target.name, self.project.project_name, None)
            # Looked up in all packages only as dbt does next, when the project has none of the name.
            if own is None and entry_misses_its_model(own, lookup.get_unique_id(target.name, None, None),
                                                      target.package_name):
                warn_or_error(NoNodeForYamlKey(patch_name=target.name, yaml_key=target.yaml_key,
                                               file_path=target.original_file_path))
                return
        parse_patch(self, block, refs)

    parse_patch_without_demo_models._cdc_merge_demo_models = True  # type: ignore[attr-defined]
    NodePatchParser.parse_patch = parse_patch_without_demo_models  # type: ignore[method-assign]
