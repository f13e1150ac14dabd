"""The profile cdc-init writes has the repository's `cluster` target: a user's project on a Spark
cluster had none, and no page said how to make one."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def _outputs(path: Path) -> dict:
    (profile,) = yaml.safe_load(path.read_text().replace("$name", "starter")).values()
    return profile["outputs"]


def test_the_starter_s_cluster_target_is_the_repository_s_with_the_jars_of_cluster_env():
    starter = _outputs(ROOT / "python_jobs/starter/templates/profiles.yml")["cluster"]
    repository = _outputs(ROOT / "profiles/profiles.yml")["cluster"]
    # The repository's default names jars of its own clone; cdc-cluster's cluster.env names the installed ones.
    assert starter["server_side_parameters"].pop("spark.jars") == "{{ env_var('CDC_MERGE_CLUSTER_JARS', '') }}"
    repository["server_side_parameters"].pop("spark.jars")
    assert starter == repository
