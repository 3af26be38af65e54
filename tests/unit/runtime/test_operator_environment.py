"""KubeRay's operator environment variables: one typed object, KubeRay's parsing rules."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from operator_runtime.controllers.raycluster.options import RayClusterOptions
from operator_runtime.controllers.rayjob.options import RayJobOptions
from operator_runtime.controllers.rayservice.options import RayServiceOptions
from operator_runtime.controllers.rendering import render_options
from operator_runtime.runtime.configuration import OperatorConfiguration
from operator_runtime.runtime.settings import OperatorEnvironment, go_atoi

ROOT = Path(__file__).resolve().parents[3]

ON_UNLESS_FALSE = {
    "ENABLE_INIT_CONTAINER_INJECTION": "enable_init_container_injection",
    "ENABLE_PROBES_INJECTION": "enable_probes_injection",
    "ENABLE_GCS_FT_REDIS_CLEANUP": "enable_gcs_ft_redis_cleanup",
    "ENABLE_ZERO_DOWNTIME": "enable_zero_downtime",
}
OFF_UNLESS_TRUE = {
    "ENABLE_RANDOM_POD_DELETE": "enable_random_pod_delete",
    "ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE": "enable_ray_head_cluster_ip_service",
    "ENABLE_DETERMINISTIC_HEAD_POD_NAME": "enable_deterministic_head_pod_name",
    "ENABLE_LOGIN_SHELL": "enable_login_shell",
    "DELETE_RAYJOB_CR_AFTER_JOB_FINISHES": "delete_rayjob_cr_after_job_finishes",
    "USE_INGRESS_ON_OPENSHIFT": "use_ingress_on_openshift",
}


def env(**variables: str) -> OperatorEnvironment:
    return OperatorEnvironment.from_mapping(variables)


@pytest.mark.parametrize(("name", "field"), ON_UNLESS_FALSE.items())
def test_on_unless_false(name: str, field: str) -> None:
    # KubeRay: strings.ToLower(os.Getenv(name)) == "false" turns it off, nothing else.
    assert getattr(env(), field) is True
    for value in ("false", "FALSE", "False"):
        assert getattr(env(**{name: value}), field) is False
    for value in ("", "0", "no", "off", "f", " false", "true"):
        assert getattr(env(**{name: value}), field) is True, value


@pytest.mark.parametrize(("name", "field"), OFF_UNLESS_TRUE.items())
def test_off_unless_true(name: str, field: str) -> None:
    assert getattr(env(), field) is False
    for value in ("true", "TRUE", "True"):
        assert getattr(env(**{name: value}), field) is True
    for value in ("", "1", "yes", "on", "t", "true "):
        assert getattr(env(**{name: value}), field) is False, value


def test_enable_webhooks_is_case_sensitive_as_in_kuberay() -> None:
    assert env(ENABLE_WEBHOOKS="true").enable_webhooks is True
    assert env(ENABLE_WEBHOOKS="TRUE").enable_webhooks is False


def test_seconds_go_through_go_atoi() -> None:
    assert go_atoi("60") == 60 and go_atoi("+60") == 60 and go_atoi("-5") == -5
    for bad in ("", " 60", "60s", "1_000", "1.5", "0x10", "9223372036854775808"):
        assert go_atoi(bad) is None, bad
    assert env().raycluster_default_requeue_seconds == 300
    assert env(RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV="60").raycluster_default_requeue_seconds == 60
    assert env(RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV="0").raycluster_default_requeue_seconds == 0
    assert (
        env(RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV="1m").raycluster_default_requeue_seconds == 300
    )
    grace = "RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS"
    # KubeRay takes any integer for the grace period ...
    assert env(**{grace: "-1"}).rayjob_deployment_status_transition_grace_period_seconds == -1
    assert env(**{grace: "x"}).rayjob_deployment_status_transition_grace_period_seconds == 300
    # ... and only a positive one for the status check timeout.
    timeout = "RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS"
    assert env(**{timeout: "30"}).rayjob_status_check_timeout_seconds == 30
    assert env(**{timeout: "0"}).rayjob_status_check_timeout_seconds == 300
    assert env(**{timeout: "-2"}).rayjob_status_check_timeout_seconds == 300


def test_cluster_domain_and_tz() -> None:
    assert env().cluster_domain == "cluster.local"
    assert env(CLUSTER_DOMAIN="").cluster_domain == "cluster.local"
    assert env(CLUSTER_DOMAIN="corp.local").cluster_domain == "corp.local"
    assert (
        env().tz is None and env(TZ="").tz == "" and env(TZ="Europe/Berlin").tz == "Europe/Berlin"
    )


def test_names_are_case_sensitive_and_others_ignored() -> None:
    assert env(enable_random_pod_delete="true", PATH="/bin").enable_random_pod_delete is False


def test_from_mapping_ignores_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENABLE_ZERO_DOWNTIME", "false")
    monkeypatch.setenv("CLUSTER_DOMAIN", "from.process")
    assert OperatorEnvironment.from_mapping({}) == OperatorEnvironment.defaults()
    assert OperatorEnvironment.defaults().enable_zero_downtime is True
    process = OperatorEnvironment()
    assert (process.enable_zero_downtime, process.cluster_domain) == (False, "from.process")


def test_the_settings_are_frozen() -> None:
    with pytest.raises(ValueError):
        env().enable_login_shell = True  # type: ignore[misc]


def test_variables_lists_every_name_with_its_default() -> None:
    variables = OperatorEnvironment.variables()
    assert set(ON_UNLESS_FALSE) | set(OFF_UNLESS_TRUE) <= set(variables)
    assert variables["RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV"] == 300
    assert variables["CLUSTER_DOMAIN"] == "cluster.local"


def test_controller_options_come_from_the_settings() -> None:
    settings = env(
        RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV="60", ENABLE_GCS_FT_REDIS_CLEANUP="false",
        ENABLE_RANDOM_POD_DELETE="TRUE", DELETE_RAYJOB_CR_AFTER_JOB_FINISHES="true",
        RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS="30", ENABLE_ZERO_DOWNTIME="False",
        ENABLE_LOGIN_SHELL="true", CLUSTER_DOMAIN="corp.local",
    )  # fmt: skip
    cluster = RayClusterOptions.from_settings(settings)
    assert (cluster.requeue_seconds, cluster.gcs_ft_redis_cleanup) == (60.0, False)
    assert cluster.random_pod_delete is True
    assert cluster.render.cluster_domain == "corp.local" and cluster.render.enable_login_shell
    job = RayJobOptions.from_settings(settings)
    assert job.delete_rayjob_after_finish is True
    assert (job.status_check_timeout_seconds, job.transition_grace_seconds) == (30.0, 300.0)
    assert RayServiceOptions.from_settings(settings).zero_downtime is False
    # from_environment is the same thing from a mapping (how tests build options).
    assert (
        RayServiceOptions.from_environment({"ENABLE_ZERO_DOWNTIME": "false"}).zero_downtime is False
    )


def test_render_options_carry_the_configuration_pod_defaults() -> None:
    configuration = OperatorConfiguration(
        default_pod_labels=(("team", "a"),), default_pod_annotations=(("note", "x"),),
        default_container_envs=({"name": "A", "value": "1"},),
        head_sidecar_containers=({"name": "log"},), worker_sidecar_containers=({"name": "w"},),
    )  # fmt: skip
    options = render_options(env(), None, configuration)
    assert dict(options.default_pod_labels) == {"team": "a"}
    assert dict(options.default_pod_annotations) == {"note": "x"}
    assert options.default_container_envs == ({"name": "A", "value": "1"},)
    assert options.head_sidecar_containers == ({"name": "log"},)
    assert options.worker_sidecar_containers == ({"name": "w"},)


def test_nothing_below_main_reads_the_process_environment() -> None:
    found = subprocess.run(
        ["git", "grep", "-n", "-E", r"os\.environ|os\.getenv\(|getenv\(", "--",
         "operator_runtime/*.py"],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    allowed = (
        # A script the Redis cleanup Job's container runs: its os.getenv calls run there.
        "operator_runtime/render/jobs.py:",
        # `render`, a command of its own, reads TZ as the operator's main does.
        "operator_runtime/controllers/rendercli.py:",
        # Where the API server is: $KUBECONFIG and KUBERNETES_SERVICE_HOST/PORT, read as
        # the kubernetes package read them before we did; an exec plugin gets the
        # operator's environment plus its own, as kubectl's does.
        "operator_runtime/runtime/kubeconfig.py:",
        "operator_runtime/runtime/credentials.py:",
        # HTTPS_PROXY and NO_PROXY, read once at start as client-go reads them.
        "operator_runtime/runtime/proxy.py:",
    )
    hits = [
        line
        for line in found.stdout.splitlines()
        if not line.startswith(allowed) and "``os.environ``" not in line  # prose
    ]
    assert hits == [], hits
