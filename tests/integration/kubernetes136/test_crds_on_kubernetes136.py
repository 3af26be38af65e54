"""The CRD tier (``tests/integration/test_crds_on_apiserver.py``) again, on Kubernetes
1.36: the same CRDs install, explain themselves, accept every sample and refuse what
their schema and CEL rules forbid on both versions. The tests are that module's own,
imported; the control plane is this directory's (``conftest.py``)."""

from __future__ import annotations

from hack.localcluster import LocalCluster
from hack.localcluster.versions import KUBERNETES_1_36
from tests.integration.test_crds_on_apiserver import (  # noqa: F401 (tests and a fixture)
    crds,
    test_container_without_a_name_is_refused,
    test_deletion_strategy_rules_are_enforced_by_the_api_server,
    test_immutable_field_is_refused_on_patch,
    test_int32_fields_are_bounded_by_the_api_server,
    test_kubectl_explain_shows_our_field_docs,
    test_managed_by_must_be_a_known_controller,
    test_pre_running_deadline_must_be_positive,
    test_printer_columns_match_kuberay,
    test_sample_is_accepted_and_round_trips_through_the_models,
    test_unknown_field_in_a_pod_template_is_refused,
    test_upgrade_strategy_type_is_an_enum,
)


def test_the_api_server_is_the_second_version(local_cluster: LocalCluster) -> None:
    """What this directory's tests ran against: the server says so itself."""
    assert local_cluster.server_version() == KUBERNETES_1_36
