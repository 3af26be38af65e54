"""Settings every controller reads the same way: KubeRay's environment variables and
the operator's feature gates."""

from __future__ import annotations

from collections.abc import Mapping

from operator_runtime.api import FeatureGates
from operator_runtime.render import RenderOptions
from operator_runtime.render.options import DEFAULT_CLUSTER_DOMAIN
from operator_runtime.runtime.context import ControllerContext


def gates_of(context: ControllerContext) -> FeatureGates:
    """The feature gates the operator was started with."""
    flag = ",".join(f"{k}={str(v).lower()}" for k, v in sorted(context.feature_gates.items()))
    return FeatureGates.parse(flag)


def env_flag(environ: Mapping[str, str], name: str, *, default: bool) -> bool:
    """KubeRay's reading of a boolean variable: unset is ``default``, else only "true"."""
    value = environ.get(name, "").strip().lower()
    return default if not value else value == "true"


def render_options_from_environment(
    environ: Mapping[str, str], gates: FeatureGates | None = None
) -> RenderOptions:
    """How every controller renders what it creates, from KubeRay's variables."""
    return RenderOptions(
        cluster_domain=environ.get("CLUSTER_DOMAIN") or DEFAULT_CLUSTER_DOMAIN,
        feature_gates=gates or FeatureGates(),
        enable_init_container_injection=environ.get("ENABLE_INIT_CONTAINER_INJECTION", "").lower()
        != "false",
        enable_probes_injection=environ.get("ENABLE_PROBES_INJECTION", "").lower() != "false",
        enable_login_shell=env_flag(environ, "ENABLE_LOGIN_SHELL", default=False),
        deterministic_head_pod_name=env_flag(
            environ, "ENABLE_DETERMINISTIC_HEAD_POD_NAME", default=False
        ),
        head_cluster_ip_service=env_flag(
            environ, "ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE", default=False
        ),
    )
