"""The landing config as the mirror models' config check reads it (cdc_core/landing_tables.py):
parsed once per version of the file, however many mirrors ask."""

from __future__ import annotations

import os

import yaml

from dbt.adapters.cdc_core import landing_tables as module
from dbt.adapters.cdc_core.landing_tables import landing_tables


def test_the_file_is_parsed_once_per_version_and_each_caller_gets_its_own_copy(tmp_path, monkeypatch):
    path = tmp_path / "landing.yml"
    path.write_text(yaml.safe_dump({"format": "debezium", "tables": {"Shop.Orders": {"key": "id"}, "shop.items": {}}}))
    parses = []
    real = yaml.safe_load
    monkeypatch.setattr(module.yaml, "safe_load", lambda text: parses.append(1) or real(text))

    first = landing_tables(str(path))
    assert first == {"path": str(path.resolve()), "format": "debezium", "tables": ["shop.items", "shop.orders"],
                     "keys": {"shop.orders": ["id"], "shop.items": []}}
    first["tables"].append("changed.by_a_caller")
    first["keys"]["shop.orders"].append("changed")
    for _ in range(50):
        assert landing_tables(str(path))["tables"] == ["shop.items", "shop.orders"]
    assert landing_tables(str(path))["keys"]["shop.orders"] == ["id"]
    assert len(parses) == 1

    path.write_text(yaml.safe_dump({"format": "maxwell", "tables": {"shop.items": {}}}))
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000))
    assert landing_tables(str(path)) == {"path": str(path.resolve()), "format": "maxwell", "tables": ["shop.items"],
                                         "keys": {"shop.items": []}}
    assert len(parses) == 2


def test_a_missing_or_unreadable_config_gives_none(tmp_path):
    assert landing_tables(str(tmp_path / "missing.yml")) is None
    (tmp_path / "list.yml").write_text("- a\n- b\n")
    assert landing_tables(str(tmp_path / "list.yml")) is None
    (tmp_path / "broken.yml").write_text("tables: [unclosed\n")
    assert landing_tables(str(tmp_path / "broken.yml")) is None
