"""What the RayService controller creates: its RayCluster and the spec hash that decides
between in-place update and a new cluster, ``<s>-head-svc`` and the serve Services, the
Gateway and HTTPRoute of an incremental upgrade, and the Serve config PUT body."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from operator_runtime.api import FeatureGates, RayCluster, RayClusterSpec, RayService
from operator_runtime.render import (
    ManifestRenderParams,
    RenderError,
    RenderOptions,
    build_cluster_serve_service,
    build_gateway,
    build_httproute,
    build_rayservice_cluster,
    build_rayservice_head_service,
    build_rayservice_serve_service,
    cluster_serve_port,
    cluster_spec_hash,
    full_hash_matches,
    gateway_equal,
    gateway_ready,
    httproute_equal,
    httproute_ready,
    partial_hash_matches,
    render_manifest,
    serve_config_body,
    serve_config_json,
)

MANIFESTS = Path(__file__).resolve().parents[3] / "examples" / "manifests"
HASH = "ray.io/hash-without-replicas-and-workers-to-delete"
GROUPS = "ray.io/num-worker-groups"
IMAGE = "rayproject/ray:2.52.0"
OWNED_BY_SERVICE = {
    "apiVersion": "ray.io/v1",
    "kind": "RayService",
    "name": "svc",
    "uid": "svc-uid",
    "controller": True,
    "blockOwnerDeletion": True,
}


def group(name: str = "workers", **extra: Any) -> dict[str, Any]:
    worker = {"name": "ray-worker", "image": IMAGE}
    return {
        "groupName": name,
        "replicas": 1,
        "minReplicas": 1,
        "maxReplicas": 4,
        "rayStartParams": {},
        "template": {"spec": {"containers": [worker]}},
        **extra,
    }


def cluster_config(**extra: Any) -> dict[str, Any]:
    head = {
        "name": "ray-head",
        "image": IMAGE,
        "ports": [
            {"name": "dashboard", "containerPort": 8265},
            {"name": "serve", "containerPort": 8000},
            {"name": "serve-grpc", "containerPort": 9000},
        ],
    }
    return {
        "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [head]}}},
        "workerGroupSpecs": [group()],
        **extra,
    }


def service_document(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {
            "name": "svc",
            "namespace": "ns",
            "uid": "svc-uid",
            "labels": {"team": "a"},
            "annotations": {"note": "kept"},
        },
        "spec": {
            "serveConfigV2": "applications:\n  - name: app\n    import_path: m:app\n",
            "rayClusterConfig": cluster_config(),
            **spec,
        },
    }


def incremental(**options: Any) -> dict[str, Any]:
    return {
        "type": "NewClusterWithIncrementalUpgrade",
        "clusterUpgradeOptions": {
            "gatewayClassName": "istio",
            "stepSizePercent": 20,
            "intervalSeconds": 30,
            **options,
        },
    }


def make_service(document: dict[str, Any] | None = None) -> RayService:
    return RayService.model_validate(document or service_document())


def spec_of(config: dict[str, Any]) -> RayClusterSpec:
    return RayClusterSpec.model_validate(config)


def made_cluster(service: RayService, name: str = "svc-abcde") -> RayCluster:
    """The cluster as the controller would have created it (with a UID)."""
    document = build_rayservice_cluster(service=service, cluster_name=name)
    document["metadata"]["uid"] = "cluster-uid"
    return RayCluster.model_validate(document)


# The hash: stable, blind to what the autoscaler and Kueue change, sensitive to the rest.


def test_the_hash_is_32_characters_of_base32_extended_hex_and_stable() -> None:
    first = cluster_spec_hash(spec_of(cluster_config()))
    assert re.fullmatch(r"[0-9A-V]{32}", first)
    assert cluster_spec_hash(spec_of(cluster_config())) == first
    # Key order in the input does not matter.
    reordered = dict(reversed(list(cluster_config().items())))
    assert cluster_spec_hash(spec_of(reordered)) == first


def _changed(change: Any) -> RayClusterSpec:
    config = cluster_config()
    change(config)
    return spec_of(config)


IGNORED = {
    "replicas": lambda c: c["workerGroupSpecs"][0].update(replicas=3),
    "minReplicas": lambda c: c["workerGroupSpecs"][0].update(minReplicas=0),
    "maxReplicas": lambda c: c["workerGroupSpecs"][0].update(maxReplicas=100),
    "workersToDelete": lambda c: c["workerGroupSpecs"][0].update(
        scaleStrategy={"workersToDelete": ["svc-workers-abcde"]}
    ),
    "worker tolerations": lambda c: c["workerGroupSpecs"][0]["template"]["spec"].update(
        tolerations=[{"key": "gpu", "operator": "Exists"}]
    ),
    "worker schedulingGates": lambda c: c["workerGroupSpecs"][0]["template"]["spec"].update(
        schedulingGates=[{"name": "kueue"}]
    ),
    "head tolerations": lambda c: c["headGroupSpec"]["template"]["spec"].update(
        tolerations=[{"key": "gpu", "operator": "Exists"}]
    ),
    "head schedulingGates": lambda c: c["headGroupSpec"]["template"]["spec"].update(
        schedulingGates=[{"name": "kueue"}]
    ),
    "suspend": lambda c: c.update(suspend=True),
    "upgradeStrategy": lambda c: c.update(upgradeStrategy={"type": "Recreate"}),
    "an empty map written out": lambda c: c["headGroupSpec"]["template"].update(metadata={}),
}
CHANGING = {
    "image": lambda c: c["headGroupSpec"]["template"]["spec"]["containers"][0].update(
        image="rayproject/ray:2.53.0"
    ),
    "head rayStartParams": lambda c: c["headGroupSpec"]["rayStartParams"].update({"num-cpus": "0"}),
    "worker rayStartParams": lambda c: c["workerGroupSpecs"][0]["rayStartParams"].update(
        {"num-gpus": "1"}
    ),
    "a group added": lambda c: c["workerGroupSpecs"].append(group("more")),
    "a group's suspend": lambda c: c["workerGroupSpecs"][0].update(suspend=True),
}


@pytest.mark.parametrize("what", sorted(IGNORED))
def test_the_hash_ignores(what: str) -> None:
    assert cluster_spec_hash(_changed(IGNORED[what])) == cluster_spec_hash(
        spec_of(cluster_config())
    )


@pytest.mark.parametrize("what", sorted(CHANGING))
def test_the_hash_changes_with(what: str) -> None:
    assert cluster_spec_hash(_changed(CHANGING[what])) != cluster_spec_hash(
        spec_of(cluster_config())
    )


def test_suspend_counts_outside_a_rayservice() -> None:
    suspended = _changed(IGNORED["suspend"])
    plain = spec_of(cluster_config())
    assert cluster_spec_hash(suspended, for_rayservice=False) != cluster_spec_hash(
        plain, for_rayservice=False
    )


# In-place update vs new cluster.


def test_a_group_added_at_the_end_is_a_partial_match_only() -> None:
    service = make_service()
    cluster = made_cluster(service)
    goal = _changed(CHANGING["a group added"])
    assert partial_hash_matches(cluster, goal)
    assert not full_hash_matches(cluster, goal)
    assert full_hash_matches(cluster, service.spec.ray_cluster_config)
    # Replica changes on top of the added group still update in place.
    both = cluster_config()
    both["workerGroupSpecs"][0]["replicas"] = 4
    both["workerGroupSpecs"].append(group("more"))
    assert partial_hash_matches(cluster, spec_of(both))


def test_any_other_change_is_no_partial_match() -> None:
    cluster = made_cluster(make_service())
    changed = cluster_config()
    changed["workerGroupSpecs"][0]["rayStartParams"] = {"num-gpus": "1"}
    changed["workerGroupSpecs"].append(group("more"))
    assert not partial_hash_matches(cluster, spec_of(changed))
    fewer = cluster_config(workerGroupSpecs=[])
    assert not partial_hash_matches(cluster, spec_of(fewer))
    # A group inserted before the existing one is not "added at the end".
    inserted = cluster_config(workerGroupSpecs=[group("more"), group()])
    assert not partial_hash_matches(cluster, spec_of(inserted))


@pytest.mark.parametrize(("count", "matches"), [(None, True), ("two", True), ("-1", False)])
def test_a_missing_or_bad_group_count_as_kuberay_reads_it(count: str | None, matches: bool) -> None:
    cluster = made_cluster(make_service())
    annotations = dict(cluster.metadata.annotations or {})
    annotations.pop(GROUPS)
    if count is not None:
        annotations[GROUPS] = count
    odd = cluster.model_copy(
        update={"metadata": cluster.metadata.model_copy(update={"annotations": annotations})}
    )
    goal = _changed(CHANGING["image"])
    assert partial_hash_matches(odd, goal) is matches


# The RayService's RayCluster.


def test_the_cluster_carries_the_services_labels_annotations_and_owner() -> None:
    service = make_service()
    document = build_rayservice_cluster(service=service, cluster_name="svc-abcde")
    meta = document["metadata"]
    assert (meta["name"], meta["namespace"]) == ("svc-abcde", "ns")
    assert meta["labels"] == {
        "ray.io/originated-from-cr-name": "svc",
        "ray.io/originated-from-crd": "RayService",
        "team": "a",
    }
    assert meta["annotations"] == {
        "note": "kept",
        HASH: cluster_spec_hash(service.spec.ray_cluster_config),
        GROUPS: "1",
        "ray.io/kuberay-version": "v1.7.0",
    }
    assert meta["ownerReferences"] == [OWNED_BY_SERVICE]
    assert document["spec"] == service.spec.ray_cluster_config.to_dict()
    assert RayCluster.model_validate(document).spec == service.spec.ray_cluster_config


def test_the_cluster_keeps_suspend_and_the_options_version() -> None:
    document = service_document()
    document["spec"]["rayClusterConfig"]["suspend"] = True
    service = make_service(document)
    built = build_rayservice_cluster(
        service=service, cluster_name="svc-abcde", options=RenderOptions(kuberay_version="v9")
    )
    assert built["spec"]["suspend"] is True
    assert built["metadata"]["annotations"]["ray.io/kuberay-version"] == "v9"
    # Suspend is not in the hash: the same as without it.
    assert built["metadata"]["annotations"][HASH] == cluster_spec_hash(spec_of(cluster_config()))


def test_an_incremental_pending_cluster_has_no_replicas_but_the_same_hash() -> None:
    document = service_document()
    document["spec"]["rayClusterConfig"]["workerGroupSpecs"].append(group("more", replicas=2))
    service = make_service(document)
    plain = build_rayservice_cluster(service=service, cluster_name="svc-abcde")
    pending = build_rayservice_cluster(
        service=service, cluster_name="svc-fghjk", incremental_pending=True
    )
    assert all("replicas" not in g for g in pending["spec"]["workerGroupSpecs"])
    assert [g["replicas"] for g in plain["spec"]["workerGroupSpecs"]] == [1, 2]
    assert [g["minReplicas"] for g in pending["spec"]["workerGroupSpecs"]] == [1, 1]
    assert pending["metadata"]["annotations"][HASH] == plain["metadata"]["annotations"][HASH]
    assert pending["metadata"]["annotations"][GROUPS] == "2"


# <s>-head-svc and the serve Services.


def test_the_head_service_is_the_clusters_relabelled_and_owned_by_the_service() -> None:
    document = service_document()
    document["spec"]["rayClusterConfig"]["headServiceAnnotations"] = {"lb": "internal"}
    service = make_service(document)
    head = build_rayservice_head_service(service=service, cluster=made_cluster(service))
    meta, spec = head["metadata"], head["spec"]
    assert (meta["name"], meta["namespace"]) == ("svc-head-svc", "ns")
    assert meta["labels"] == {
        "ray.io/identifier": "svc-head",
        "ray.io/node-type": "head",
        "ray.io/originated-from-cr-name": "svc",
        "ray.io/originated-from-crd": "RayService",
    }
    assert "annotations" not in meta
    assert meta["ownerReferences"] == [OWNED_BY_SERVICE]
    assert spec["selector"]["ray.io/cluster"] == "svc-abcde"
    assert spec["selector"]["ray.io/identifier"] == "svc-abcde-head"
    assert [p["name"] for p in spec["ports"]] == ["dashboard", "metrics", "serve", "serve-grpc"]
    assert spec["clusterIP"] == "None"


def test_the_serve_service_selects_the_clusters_serving_pods() -> None:
    document = service_document()
    document["spec"]["rayClusterConfig"]["headGroupSpec"]["serviceType"] = "NodePort"
    service = make_service(document)
    serve = build_rayservice_serve_service(service=service, cluster=made_cluster(service))
    meta, spec = serve["metadata"], serve["spec"]
    assert (meta["name"], meta["namespace"]) == ("svc-serve-svc", "ns")
    assert meta["labels"] == {
        "ray.io/originated-from-cr-name": "svc",
        "ray.io/originated-from-crd": "RayService",
        "ray.io/serve": "svc-serve",
    }
    assert meta["ownerReferences"] == [OWNED_BY_SERVICE]
    assert spec == {
        "ports": [{"name": "serve", "port": 8000}, {"name": "serve-grpc", "port": 9000}],
        "selector": {"ray.io/cluster": "svc-abcde", "ray.io/serve": "true"},
        "type": "NodePort",
    }


def test_a_custom_serve_service_keeps_its_name_and_port_details() -> None:
    custom = {
        "metadata": {"name": "public", "namespace": "elsewhere", "labels": {"ray.io/serve": "x"}},
        "spec": {
            "ports": [{"name": "serve-grpc", "port": 9000, "appProtocol": "kubernetes.io/h2c"}],
            "selector": {"app": "ignored"},
            "type": "LoadBalancer",
        },
    }
    service = make_service(service_document(serveService=custom))
    serve = build_rayservice_serve_service(service=service, cluster=made_cluster(service))
    meta, spec = serve["metadata"], serve["spec"]
    assert (meta["name"], meta["namespace"]) == ("public", "ns")
    assert meta["labels"]["ray.io/serve"] == "svc-serve"
    assert spec["ports"] == [
        {"name": "serve", "port": 8000},
        {"name": "serve-grpc", "port": 9000, "appProtocol": "kubernetes.io/h2c"},
    ]
    assert spec["selector"] == {"ray.io/cluster": "svc-abcde", "ray.io/serve": "true"}
    assert spec["type"] == "LoadBalancer"
    assert meta["ownerReferences"] == [OWNED_BY_SERVICE]


def test_with_an_incremental_upgrade_the_serve_service_is_the_clusters_own() -> None:
    custom = {"metadata": {"name": "public"}, "spec": {}}
    service = make_service(service_document(upgradeStrategy=incremental(), serveService=custom))
    cluster = made_cluster(service)
    serve = build_rayservice_serve_service(service=service, cluster=cluster)
    assert serve["metadata"]["name"] == "svc-abcde-serve-svc"
    assert serve["metadata"]["labels"]["ray.io/originated-from-cr-name"] == "svc-abcde"
    assert serve["metadata"]["labels"]["ray.io/serve"] == "svc-abcde-serve"
    # With the gate off, the upgrade type is not incremental and the usual one is built.
    gate_off = RenderOptions(feature_gates=FeatureGates(ray_service_incremental_upgrade=False))
    usual = build_rayservice_serve_service(service=service, cluster=cluster, options=gate_off)
    assert usual["metadata"]["name"] == "public"


def test_the_per_cluster_serve_service_is_owned_by_its_cluster() -> None:
    service = make_service(service_document(upgradeStrategy=incremental()))
    cluster = made_cluster(service)
    serve = build_cluster_serve_service(service=service, cluster=cluster)
    assert serve["metadata"]["name"] == "svc-abcde-serve-svc"
    assert serve["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "name": "svc-abcde",
            "uid": "cluster-uid",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert serve["spec"]["selector"] == {"ray.io/cluster": "svc-abcde", "ray.io/serve": "true"}


def test_no_serve_port_is_an_error_without_a_custom_serve_service() -> None:
    document = service_document()
    head = document["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]
    head["containers"][0]["ports"] = [{"name": "dashboard", "containerPort": 8265}]
    service = make_service(document)
    with pytest.raises(RenderError, match="'serve'"):
        build_rayservice_serve_service(service=service, cluster=made_cluster(service))


# Gateway and HTTPRoute.


def test_the_gateway() -> None:
    service = make_service(service_document(upgradeStrategy=incremental()))
    gateway = build_gateway(service=service)
    assert gateway == {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {
            "name": "svc-gateway",
            "namespace": "ns",
            "ownerReferences": [OWNED_BY_SERVICE],
        },
        "spec": {
            "gatewayClassName": "istio",
            "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}],
        },
    }
    with pytest.raises(RenderError, match="clusterUpgradeOptions"):
        build_gateway(service=make_service())


def test_the_httproute_weights_its_backends() -> None:
    service = make_service(service_document(upgradeStrategy=incremental()))
    route = build_httproute(
        service=service, backends=[("svc-a-serve-svc", 60), ("svc-b-serve-svc", 40)]
    )
    assert route["metadata"] == {
        "name": "svc-httproute",
        "namespace": "ns",
        "ownerReferences": [OWNED_BY_SERVICE],
    }
    assert route["spec"] == {
        "parentRefs": [{"name": "svc-gateway", "namespace": "ns"}],
        "rules": [
            {
                "matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
                "backendRefs": [
                    {"name": "svc-a-serve-svc", "namespace": "ns", "port": 8000, "weight": 60},
                    {"name": "svc-b-serve-svc", "namespace": "ns", "port": 8000, "weight": 40},
                ],
            }
        ],
    }
    own_port = build_httproute(service=service, backends=[("a", 100, 8100)], serve_port=9)
    assert own_port["spec"]["rules"][0]["backendRefs"][0]["port"] == 8100


def test_the_serve_port_of_a_cluster() -> None:
    service = make_service()
    assert cluster_serve_port(made_cluster(service)) == 8000
    document = service_document()
    head = document["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]
    head["containers"][0]["ports"] = [{"name": "serve-grpc", "containerPort": 9000}]
    assert cluster_serve_port(made_cluster(make_service(document))) == 8000
    head["containers"][0]["ports"] = [{"name": "serve", "containerPort": 8100}]
    assert cluster_serve_port(made_cluster(make_service(document))) == 8100


def _conditions(**status: str) -> list[dict[str, str]]:
    return [{"type": kind, "status": value} for kind, value in status.items()]


def test_gateway_readiness_needs_accepted_and_programmed() -> None:
    assert gateway_ready(
        {"status": {"conditions": _conditions(Accepted="True", Programmed="True")}}
    )
    assert not gateway_ready({"status": {"conditions": _conditions(Accepted="True")}})
    assert not gateway_ready(
        {"status": {"conditions": _conditions(Accepted="True", Programmed="False")}}
    )
    assert not gateway_ready({})


def test_httproute_readiness_looks_at_the_gateways_parent_status() -> None:
    def route(*parents: dict[str, Any]) -> dict[str, Any]:
        return {"metadata": {"namespace": "ns"}, "status": {"parents": list(parents)}}

    good = _conditions(Accepted="True", ResolvedRefs="True")
    ours = {"parentRef": {"name": "svc-gateway", "namespace": "ns"}, "conditions": good}
    assert httproute_ready(route(ours), "svc-gateway")
    no_ns = {"parentRef": {"name": "svc-gateway"}, "conditions": good}
    assert httproute_ready(route(no_ns), "svc-gateway")
    other_ns = {"parentRef": {"name": "svc-gateway", "namespace": "x"}, "conditions": good}
    assert not httproute_ready(route(other_ns), "svc-gateway")
    assert httproute_ready(route(other_ns), "svc-gateway", "x")
    other = {"parentRef": {"name": "other"}, "conditions": good}
    assert not httproute_ready(route(other), "svc-gateway")
    unresolved = {
        "parentRef": {"name": "svc-gateway"},
        "conditions": _conditions(Accepted="True", ResolvedRefs="False"),
    }
    assert not httproute_ready(route(unresolved), "svc-gateway")
    assert httproute_ready(route(unresolved, ours), "svc-gateway")


def test_equality_compares_only_what_the_controller_sets() -> None:
    service = make_service(service_document(upgradeStrategy=incremental()))
    gateway = build_gateway(service=service)
    defaulted = copy.deepcopy(gateway)
    defaulted["spec"]["listeners"][0]["allowedRoutes"] = {"namespaces": {"from": "Same"}}
    assert gateway_equal(defaulted, gateway)
    defaulted["spec"]["gatewayClassName"] = "envoy"
    assert not gateway_equal(defaulted, gateway)

    route = build_httproute(service=service, backends=[("a", 100)])
    served = copy.deepcopy(route)
    served["spec"]["rules"][0]["backendRefs"][0].update(group="", kind="Service")
    assert httproute_equal(served, route)
    moved = build_httproute(service=service, backends=[("a", 80), ("b", 20)])
    assert not httproute_equal(route, moved)
    reweighted = copy.deepcopy(moved)
    reweighted["spec"]["rules"][0]["backendRefs"][1]["weight"] = 40
    assert not httproute_equal(reweighted, moved)


# The Serve config body.


def test_the_serve_body_is_the_yaml_as_json_plus_target_capacity() -> None:
    config = "applications:\n  - name: app\n    import_path: m:app\n    flag: yes\n    big: 1e3\n"
    service = make_service(service_document(serveConfigV2=config))
    body = serve_config_body(service, target_capacity=40)
    assert body == {
        "applications": [{"big": 1000.0, "flag": True, "import_path": "m:app", "name": "app"}],
        "target_capacity": 40,
    }
    assert "target_capacity" not in serve_config_body(service)
    assert json.loads(serve_config_json(service, target_capacity=0))["target_capacity"] == 0
    assert serve_config_json(service).startswith(b'{"applications":[{"big":1000,"flag":true')


def test_a_bad_or_empty_serve_config() -> None:
    assert serve_config_body(make_service(service_document(serveConfigV2=""))) == {}
    with pytest.raises(RenderError, match="serveConfigV2"):
        serve_config_body(make_service(service_document(serveConfigV2="- a\n- b\n")))
    with pytest.raises(RenderError, match="serveConfigV2"):
        serve_config_body(make_service(service_document(serveConfigV2="a: [b\n")))
    huge = serve_config_body(
        make_service(service_document(serveConfigV2="big: 18446744073709551615\nn: 1"))
    )
    # Beyond int64 a number is a float64; a plain `n` key is false in go-yaml v2.
    assert huge == {"big": float(2**64 - 1), "false": 1}


# render_manifest.


def _render(document: dict[str, Any]) -> Any:
    return render_manifest(params=ManifestRenderParams(document=document))


def _names(objects: Any) -> list[tuple[str, str]]:
    return [(o["kind"], o["metadata"].get("name", "")) for o in objects]


def test_a_rayservice_renders_its_cluster_and_services() -> None:
    result = _render(service_document())
    names = _names(result.objects)
    assert names[0] == ("RayCluster", "svc-xxxxx")
    assert names[-2:] == [("Service", "svc-head-svc"), ("Service", "svc-serve-svc")]
    assert ("Service", "svc-xxxxx-head-svc") in names
    assert sum(kind == "Pod" for kind, _ in names) == 2
    assert any("<rand5>" in note for note in result.notes)


def test_an_incremental_rayservice_renders_its_gateway_and_route() -> None:
    document = yaml.safe_load((MANIFESTS / "rayservice-incremental.yaml").read_text())
    document["status"] = {"activeServiceStatus": {"rayClusterName": "rayservice-incremental-q2w4e"}}
    result = _render(document)
    names = _names(result.objects)
    cluster = "rayservice-incremental-q2w4e"
    assert names[0] == ("RayCluster", cluster)
    assert names[-4:] == [
        ("Service", f"{cluster}-serve-svc"),
        ("Gateway", "rayservice-incremental-gateway"),
        ("HTTPRoute", "rayservice-incremental-httproute"),
        ("Service", "rayservice-incremental-head-svc"),
    ]
    route = result.objects[-2]
    assert route["spec"]["rules"][0]["backendRefs"] == [
        {"name": f"{cluster}-serve-svc", "namespace": "default", "port": 8000, "weight": 100}
    ]
    assert not any("<rand5>" in note for note in result.notes)


def test_a_suspended_rayservice_renders_nothing() -> None:
    result = _render(service_document(suspend=True))
    assert result.objects == () and "suspend" in result.notes[0]
