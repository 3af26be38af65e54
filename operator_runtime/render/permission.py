"""One need of one controller for the operator's RBAC, and the names its conditions use."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True, slots=True)
class Permission:
    """One need of one controller: these verbs on these resources of an API group."""

    controller: str
    group: str
    resources: tuple[str, ...]
    verbs: tuple[str, ...]
    why: str
    only_with: str = ""
    """A feature gate (KubeRay's name) or an operator flag without which the need never
    arises; empty: always. A deployment grants it only when it turns that on."""


USE_KUBERNETES_PROXY: Final = "--use-kubernetes-proxy"
"""The flag that sends dashboard and serve proxy calls through the API server."""


def batch_scheduler_flag(name: str) -> str:
    """What ``Permission.only_with`` says for a need of one batch scheduler
    (``--batch-scheduler=volcano``); the deprecated ``--enable-batch-scheduler`` turns on
    Volcano's."""
    return f"--batch-scheduler={name}"
