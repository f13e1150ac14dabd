"""demo_models.py: which disabled models a ref is reported as not finding, and which YAML entries have
no model."""

from dbt.adapters.cdc_core.demo_models import entry_misses_its_model, hides_demo_model


def test_only_the_packages_demo_model_found_for_another_projects_unqualified_ref_is_hidden():
    assert hides_demo_model("cdc_merge", None, "my_shop")
    assert not hides_demo_model("my_shop", None, "my_shop")  # the project's own disabled model
    assert not hides_demo_model("cdc_merge", "cdc_merge", "my_shop")  # ref('cdc_merge', 'shop_orders')
    assert not hides_demo_model("cdc_merge", None, "cdc_merge")  # the package's own nodes


def test_only_an_entry_that_would_go_to_the_packages_model_for_want_of_its_own_has_no_model():
    assert entry_misses_its_model(None, "model.cdc_merge.shop_orders", "my_shop")
    assert not entry_misses_its_model("model.my_shop.shop_orders", "model.my_shop.shop_orders", "my_shop")
    assert not entry_misses_its_model(None, None, "my_shop")  # dbt's own warning already
    assert not entry_misses_its_model(None, "model.other_pkg.shop_orders", "my_shop")  # another package's
    assert not entry_misses_its_model(None, "model.cdc_merge.shop_orders", "cdc_merge")  # the package's own entry
