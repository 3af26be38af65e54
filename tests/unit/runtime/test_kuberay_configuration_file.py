"""``--config``: KubeRay's Configuration file (config.ray.io/v1alpha1), decoded and
applied over the flags as KubeRay does."""

from __future__ import annotations

from pathlib import Path

import pytest

from operator_runtime.cli import build_parser, main
from operator_runtime.controllers.raycluster import RayClusterOptions
from operator_runtime.runtime.commandline import (
    StartupError,
    parse_arguments,
    resolve_configuration,
)
from operator_runtime.runtime.configuration import (
    ConfigurationError,
    OperatorConfiguration,
    decode_configuration,
)
from operator_runtime.runtime.settings import OperatorEnvironment

HEAD = "apiVersion: config.ray.io/v1alpha1\nkind: Configuration\n"

# What KubeRay's chart puts in its ConfigMap with configuration.enabled=true and the
# chart's other values at their defaults (helm-chart/kuberay-operator/templates/
# configmap.yaml at ray-project/kuberay feeaf72facab4881ba2b179248bb67315634e229).
CHART_CONFIG = (
    HEAD
    + """\
enableLeaderElection: true
enableMetrics: true
reconcileConcurrency: 1
qps: 100.0
burst: 200
"""
)


def test_the_charts_configmap_decodes() -> None:
    config = decode_configuration(CHART_CONFIG)
    assert config.enable_metrics is True
    assert (config.qps, config.burst, config.reconcile_concurrency) == (100.0, 200, 1)
    assert config.from_file


def test_what_the_file_leaves_out_gets_kuberays_defaults() -> None:
    config = decode_configuration(HEAD)
    assert config == OperatorConfiguration(from_file=True)


def test_every_field() -> None:
    config = decode_configuration(
        HEAD
        + """\
metricsAddr: ":9090"
probeAddr: ":9091"
enableLeaderElection: false
leaderElectionNamespace: ops
reconcileConcurrency: 4
watchNamespace: a,b
logFile: /tmp/operator.log
logFileEncoder: console
logStdoutEncoder: console
batchScheduler: volcano
enableBatchScheduler: false
useKubernetesProxy: true
deleteRayJobAfterJobFinishes: true
enableMetrics: true
qps: 50
burst: 80
headSidecarContainers: [{name: fluentbit, image: fluent/fluent-bit}]
workerSidecarContainers: [{name: w, image: busybox}]
defaultContainerEnvs: [{name: A, value: "1"}]
defaultPodAnnotations: {note: x}
defaultPodLabels: {team: a}
someFutureField: ignored
"""
    )
    assert (config.metrics_addr, config.probe_addr) == (":9090", ":9091")
    assert config.enable_leader_election is False
    assert config.leader_election_namespace == "ops"
    assert (config.reconcile_concurrency, config.watch_namespace) == (4, "a,b")
    assert config.log_file == "/tmp/operator.log"
    assert (config.batch_scheduler, config.use_kubernetes_proxy) == ("volcano", True)
    assert (config.qps, config.burst) == (50.0, 80)
    assert config.head_sidecar_containers == ({"name": "fluentbit", "image": "fluent/fluent-bit"},)
    assert config.worker_sidecar_containers == ({"name": "w", "image": "busybox"},)
    assert config.default_container_envs == ({"name": "A", "value": "1"},)
    assert config.default_pod_annotations == (("note", "x"),)
    assert config.default_pod_labels == (("team", "a"),)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("kind: Configuration\n", "apiVersion must be config.ray.io/v1alpha1"),
        ("apiVersion: config.ray.io/v1alpha1\nkind: Other\n", "and kind Configuration"),
        ("- a\n", "expected a Configuration object"),
        (HEAD + "burst: '200'\n", "burst: Input should be a valid integer"),
        (HEAD + "reconcileConcurrency: 1.5\n", "reconcileConcurrency:"),
        (HEAD + "enableMetrics: maybe\n", "enableMetrics: Input should be a valid boolean"),
        (HEAD + "qps: [1]\n", "qps:"),
        (HEAD + "defaultPodLabels: {a: 1}\n", "defaultPodLabels.a:"),
        (HEAD + "metricsAddr: [\n", "not valid YAML at line 4"),
        # Field names are case-sensitive, as KubeRay's decoder: this one is ignored ...
        (HEAD + "EnableMetrics: yes\nburst: x\n", "burst:"),
    ],
)
def test_a_bad_file_is_one_line(text: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message.replace("[", r"\[")) as error:
        decode_configuration(text)
    assert "\n" not in str(error.value)


def test_field_names_are_case_sensitive() -> None:
    assert decode_configuration(HEAD + "EnableMetrics: true\n").enable_metrics is False


def args(*flags: str) -> object:
    return parse_arguments(build_parser(), flags)


def test_the_file_replaces_the_flags_it_covers(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(HEAD + "reconcileConcurrency: 3\n")
    config = resolve_configuration(
        args(f"--config={path}", "--qps=5", "--metrics-addr=:1", "--enable-metrics",
             "--watch-namespace=x", "--enable-leader-election=false")
    )  # fmt: skip
    # KubeRay: with --config the flags of these settings are ignored, even where the
    # file says nothing (the file's defaults apply, not the flags).
    assert config.reconcile_concurrency == 3
    assert (config.qps, config.metrics_addr, config.enable_metrics) == (100.0, ":8080", False)
    assert (config.watch_namespace, config.enable_leader_election) == ("", True)


def test_without_the_file_the_flags_decide() -> None:
    config = resolve_configuration(args("--qps=5", "--enable-metrics", "--log-file-path=/x"))
    assert (config.qps, config.enable_metrics, config.log_file) == (5.0, True, "/x")
    assert not config.from_file


def test_an_unreadable_file_is_a_startup_error(tmp_path: Path) -> None:
    with pytest.raises(StartupError, match=r"--config: cannot read .*: No such file"):
        resolve_configuration(args(f"--config={tmp_path / 'missing.yaml'}"))


def test_main_exits_1_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(HEAD + "burst: lots\n")
    assert main([f"--config={path}"]) == 1
    err = capsys.readouterr().err
    assert err == f"ray-operator: --config: {path}: burst: Input should be a valid integer\n"


def test_the_files_batch_scheduler_is_checked_as_the_flag_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(HEAD + "batchScheduler: slurm\n")
    assert main([f"--config={path}"]) == 1
    assert "--batch-scheduler: scheduler is not supported, name=slurm" in (capsys.readouterr().err)


# -- redisCleanupJobResources: pulumi-ray's extension (KubeRay #4721) -------------------


def test_the_cleanup_job_keeps_kuberays_size_unless_the_file_says_otherwise() -> None:
    kuberay = {"cpu": "200m", "memory": "256Mi"}
    for config in (decode_configuration(HEAD), OperatorConfiguration()):
        assert config.redis_cleanup_job_resources == {"requests": kuberay, "limits": kuberay}
        options = RayClusterOptions.from_settings(OperatorEnvironment.defaults(), None, config)
        assert options.redis_cleanup_resources == {"requests": kuberay, "limits": kuberay}


def test_the_cleanup_job_resources_reach_the_raycluster_controller() -> None:
    config = decode_configuration(
        HEAD
        + "redisCleanupJobResources:\n"
        + "  requests: {cpu: 500m, memory: 512Mi}\n"
        + "  limits: {cpu: 1, memory: 1Gi, example.com/dev: 0}\n"
    )
    wanted = {
        "requests": {"cpu": "500m", "memory": "512Mi"},
        "limits": {"cpu": "1", "memory": "1Gi", "example.com/dev": "0"},
    }
    assert config.redis_cleanup_job_resources == wanted
    options = RayClusterOptions.from_settings(OperatorEnvironment.defaults(), None, config)
    assert options.redis_cleanup_resources == wanted


def test_empty_cleanup_job_resources_set_none() -> None:
    # The platform's defaults (a LimitRange, Autopilot's own) then decide.
    config = decode_configuration(HEAD + "redisCleanupJobResources: {}\n")
    assert config.redis_cleanup_job_resources == {}
    only = decode_configuration(HEAD + "redisCleanupJobResources: {requests: {cpu: 1}}\n")
    assert only.redis_cleanup_job_resources == {"requests": {"cpu": "1"}}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("{requests: {cpu: 2x}}", "requests.cpu: '2x' is not a quantity"),
        ("{requests: {cpu: -1}}", "requests.cpu: '-1' is negative"),
        (
            "{requests: {cpu: true}}",
            "requests.cpu: expected a quantity such as 500m or 1Gi, got true",
        ),
        ("{limits: {memory: [1]}}", "limits.memory: expected a quantity"),
        (
            "{requests: {cpu: '1' }, limits: {cpu: 500m}}",
            "requests.cpu: 1 is more than limits.cpu 500m",
        ),
        (
            "{requests: {memory: 1Gi}, limits: {memory: 1000Mi}}",
            "requests.memory: 1Gi is more than",
        ),
        ("{requests: {cpus: 1}}", "requests.cpus: 'cpus' is not a container resource"),
        ("{requests: {'a/b/c': 1}}", "requests.a/b/c: not a resource name"),
        ("{request: {cpu: 1}}", "request: unknown field; only requests and limits"),
        ("{claims: [{name: gpu}]}", "claims: unknown field"),
        ("[250m]", "redisCleanupJobResources: expected a mapping with requests and limits"),
        ("{limits: 1}", "limits: expected a mapping of resource names to quantities"),
        # Bounded: an exponent is expanded exactly, so this one would cost gigabytes.
        ("{requests: {cpu: 1e999999999}}", "requests.cpu: '1e999999999' is out of range"),
        ("{limits: {cpu: 1e300}}", "limits.cpu: '1e+300' is out of range"),
        ("{limits: {cpu: '" + "1" * 129 + "'}}", "is too long (at most 128)"),
        ("{limits: {" + ", ".join(f"ex.com/r{i}: 1" for i in range(17)) + "}}", "at most 16"),
    ],
)
def test_bad_cleanup_job_resources_are_one_line_naming_the_field(value: str, message: str) -> None:
    with pytest.raises(ConfigurationError) as error:
        decode_configuration(HEAD + f"redisCleanupJobResources: {value}\n")
    text = str(error.value)
    assert text.startswith("redisCleanupJobResources: "), text
    assert message in text and "\n" not in text, text
