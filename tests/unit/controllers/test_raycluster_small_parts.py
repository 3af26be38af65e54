"""Metrics on scrape, the watch predicate, GCS FT helpers and the render command."""

from __future__ import annotations

import io
from pathlib import Path

import yaml
from prometheus_client import CollectorRegistry

from operator_runtime.controllers.raycluster.gcsft import job_outcome
from operator_runtime.controllers.raycluster.metrics import ClusterMetrics
from operator_runtime.controllers.raycluster.options import RayClusterOptions
from operator_runtime.controllers.rendercli import main as render_main
from operator_runtime.render.gcsft import deletion_timeout
from operator_runtime.runtime.cache import Cache
from operator_runtime.runtime.kinds import RAY_CLUSTER
from operator_runtime.runtime.reconcile import metadata_changed

REPO = Path(__file__).resolve().parents[3]


def test_cluster_metrics_are_computed_from_the_cache_on_scrape() -> None:
    clusters = Cache(RAY_CLUSTER)
    registry = CollectorRegistry()
    metrics = ClusterMetrics(clusters)
    metrics.register(registry)
    clusters.upsert(
        {
            "metadata": {
                "name": "a",
                "namespace": "n",
                "uid": "u1",
                "labels": {"ray.io/originated-from-crd": "RayJob"},
            },
            "status": {"conditions": [{"type": "RayClusterProvisioned", "status": "True"}]},
        }
    )
    clusters.upsert({"metadata": {"name": "b", "namespace": "n", "uid": "u2"}})
    sample = registry.get_sample_value
    a = {"name": "a", "namespace": "n", "uid": "u1"}
    b = {"name": "b", "namespace": "n", "uid": "u2"}
    for metric, labels in (
        ("kuberay_cluster_info", {**a, "owner_kind": "RayJob"}),
        ("kuberay_cluster_info", {**b, "owner_kind": "None"}),
        ("kuberay_cluster_condition_provisioned", {**a, "condition": "true"}),
        ("kuberay_cluster_condition_provisioned", {**b, "condition": "false"}),
    ):
        assert sample(metric, labels) == 1, (metric, labels)
    metrics.observe_provisioned("n", "a", "u1", 12.5)
    assert sample("kuberay_cluster_provisioned_duration_seconds", a) == 12.5
    clusters.remove(("n", "a"))
    metrics.forget("n", "a")
    assert sample("kuberay_cluster_info", {**a, "owner_kind": "RayJob"}) is None
    assert sample("kuberay_cluster_provisioned_duration_seconds", a) is None


def test_only_spec_metadata_and_deletion_changes_wake_the_controller() -> None:
    old = {"metadata": {"generation": 1, "labels": {"a": "1"}, "resourceVersion": "1"}}
    status_write = {"metadata": {**old["metadata"], "resourceVersion": "2"}, "status": {"x": 1}}
    assert not metadata_changed("MODIFIED", status_write, old)
    for change in (
        {"generation": 2},
        {"labels": {"a": "2"}},
        {"annotations": {"b": "1"}},
        {"deletionTimestamp": "2026-01-01T00:00:00Z"},
        {"finalizers": ["f"]},
    ):
        assert metadata_changed("MODIFIED", {"metadata": {**old["metadata"], **change}}, old)
    assert metadata_changed("ADDED", old, None) and metadata_changed("DELETED", old, old)


def test_gcs_ft_deletion_timeout_and_job_outcome() -> None:
    assert deletion_timeout({}) == 300
    assert deletion_timeout({"ray.io/gcs-ft-deletion-timeout": "42"}) == 42
    assert deletion_timeout({"ray.io/gcs-ft-deletion-timeout": "0"}) == 300
    assert deletion_timeout({"ray.io/gcs-ft-deletion-timeout": "soon"}) == 300

    def job(*conditions: tuple[str, str]) -> dict[str, object]:
        return {"status": {"conditions": [{"type": t, "status": s} for t, s in conditions]}}

    assert job_outcome(job()) == ""
    assert job_outcome(job(("Complete", "True"))) == "Complete"
    assert job_outcome(job(("Failed", "True"))) == "Failed"
    assert job_outcome(job(("FailureTarget", "True"))) == "Failed"
    assert job_outcome(job(("Complete", "False"), ("Suspended", "True"))) == ""


def test_options_read_kuberays_environment_variables() -> None:
    options = RayClusterOptions.from_environment(
        {
            "RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV": "60",
            "ENABLE_GCS_FT_REDIS_CLEANUP": "false",
            "ENABLE_RANDOM_POD_DELETE": "TRUE",
            "ENABLE_INIT_CONTAINER_INJECTION": "false",
            "CLUSTER_DOMAIN": "corp.local",
        }
    )
    assert options.requeue_seconds == 60
    assert not options.gcs_ft_redis_cleanup and options.random_pod_delete
    assert not options.render.enable_init_container_injection
    assert options.render.cluster_domain == "corp.local"
    defaults = RayClusterOptions.from_environment({})
    assert defaults.requeue_seconds == 300 and defaults.gcs_ft_redis_cleanup


def test_render_prints_every_object_of_every_raycluster() -> None:
    out, err = io.StringIO(), io.StringIO()
    manifest = REPO / "examples" / "manifests" / "raycluster-gcs-ft-redis.yaml"
    assert render_main([str(manifest)], stdout=out, stderr=err) == 0, err.getvalue()
    documents = list(yaml.safe_load_all(out.getvalue()))
    kinds = [d["kind"] for d in documents]
    assert kinds[0] == "Service" and kinds[-1] == "Job"
    pods = [d for d in documents if d["kind"] == "Pod"]
    assert pods and all("generateName" in p["metadata"] for p in pods)
    no_job = io.StringIO()
    render_main([str(manifest), "--no-cleanup-job"], stdout=no_job, stderr=err)
    assert "kind: Job" not in no_job.getvalue()


def test_render_refuses_an_invalid_cluster_with_the_field_path(tmp_path: Path) -> None:
    manifest = yaml.safe_load(
        (REPO / "examples" / "manifests" / "raycluster-minimal.yaml").read_text()
    )
    manifest["spec"]["workerGroupSpecs"][0]["rayStartParams"] = {"labels": "a=b"}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump_all([{"kind": "ConfigMap"}, manifest]))
    out, err = io.StringIO(), io.StringIO()
    assert render_main([str(path)], stdout=out, stderr=err) == 1
    assert "kind 'ConfigMap' cannot be rendered" in err.getvalue()
    assert "rayStartParams" in err.getvalue() and out.getvalue() == ""
    assert render_main([str(tmp_path / "missing.yaml")], stdout=out, stderr=err) == 2
