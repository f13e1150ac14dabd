"""demo_refs.py: which disabled models a ref is reported as not finding."""

from dbt.adapters.cdc_core.demo_refs import hides_demo_model


def test_only_the_packages_demo_model_found_for_another_projects_unqualified_ref_is_hidden():
    assert hides_demo_model("cdc_merge", None, "my_shop")
    assert not hides_demo_model("my_shop", None, "my_shop")  # the project's own disabled model
    assert not hides_demo_model("cdc_merge", "cdc_merge", "my_shop")  # ref('cdc_merge', 'shop_orders')
    assert not hides_demo_model("cdc_merge", None, "cdc_merge")  # the package's own nodes
