"""One ray.io/v1 object, as a plain manifest, -> everything the operator would create for it.

The one path from "a document someone wrote" to rendered objects, shared by ``python -m
operator_runtime render`` (KubeRay YAML) and ``python -m components render`` (a Pulumi
program's custom resources): parse with the API models, validate as the controller
would, then render. Reading files and printing stay with the callers.

A RayCluster renders to its children; a RayJob to its RayCluster, that cluster's
children, its ``<j>-head-svc`` Service and (K8sJobMode) its submitter Job; a RayService
to its RayCluster, that cluster's children, ``<s>-head-svc`` and its serve Service (with
an incremental upgrade: the cluster's serve Service, the Gateway and the HTTPRoute); a
RayCronJob to the RayJob it creates next (``render.raycronjob``; without ``now`` it is
only validated, and ``RenderedManifest.notes`` says so). Where KubeRay draws a random
suffix (a RayJob's or RayService's cluster name, a job id), the render uses ``xxxxx`` and
says so in a note, so the same input gives the same output.

Validation is ``operator_runtime.api.load_object``: every mistake of the object at once
(parse, the Kubernetes schema of its pod templates, KubeRay's rules), one line each.
"""

from __future__ import annotations

import argparse
import datetime
from dataclasses import dataclass, field
from typing import Final, TypeGuard

from operator_runtime.api import (
    FeatureGates,
    InvalidObjectError,
    JSONObject,
    RayCluster,
    RayCronJob,
    RayJob,
    RayService,
    load_object,
)
from operator_runtime.render.batchscheduler import SCHEDULERS, chosen_scheduler
from operator_runtime.render.cluster import ClusterRenderParams, render_cluster
from operator_runtime.render.names import DEFAULT_NAMESPACE
from operator_runtime.render.options import RenderOptions
from operator_runtime.render.pods import RenderError
from operator_runtime.render.raycronjob import CronRenderParams, render_raycronjob
from operator_runtime.render.rayjob import render_rayjob
from operator_runtime.render.rayservice import render_rayservice

RAY_KINDS: Final = ("RayCluster", "RayJob", "RayService", "RayCronJob")

CRON_WITHOUT_NOW: Final = (
    "the RayJob it creates next is not rendered: its name and time depend on the current "
    "time, which was not given"
)


class ManifestError(ValueError):
    """A ray.io/v1 object that cannot be parsed, is invalid, or cannot be rendered.
    ``str()`` names the object and the field path."""


@dataclass(frozen=True, slots=True)
class ManifestRenderParams:
    document: JSONObject
    """One ray.io/v1 object in wire form (camelCase keys), as in a KubeRay YAML."""
    options: RenderOptions = field(default_factory=RenderOptions)
    include_redis_cleanup_job: bool = True
    """The cleanup Job only exists while a GCS-FT (Redis) cluster is being deleted."""
    now: datetime.datetime | None = None
    """The current time, to render the RayJob a RayCronJob creates next."""
    local_zone: datetime.tzinfo = datetime.UTC
    """The operator's zone, for a RayCronJob without ``spec.timeZone``."""


@dataclass(frozen=True, slots=True)
class RenderedManifest:
    kind: str
    namespace: str
    name: str
    objects: tuple[JSONObject, ...]
    notes: tuple[str, ...] = ()
    """What the operator would also create but is not rendered, one sentence each."""

    @property
    def ref(self) -> str:
        """``RayCluster default/demo``."""
        return f"{self.kind} {self.namespace}/{self.name}"


def add_render_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags both render commands take (``ray-operator render`` and ``python -m
    components render``): the operator's feature gates and batch scheduler, and
    ``--no-cleanup-job``."""
    parser.add_argument(
        "--feature-gates", default="", metavar="A=true,B=false", help="as for the operator"
    )
    parser.add_argument(
        "--batch-scheduler",
        default="",
        choices=("", *SCHEDULERS),
        metavar="NAME",
        help=f"as for the operator ({', '.join(SCHEDULERS)}): its PodGroup and pod metadata",
    )
    parser.add_argument(
        "--no-cleanup-job",
        action="store_true",
        help="leave out the Redis cleanup Job (it only exists while a cluster is deleted)",
    )


def render_settings(args: argparse.Namespace) -> tuple[RenderOptions, bool]:
    """The render options and whether to include the cleanup Job, from those flags;
    raises ``FeatureGateError`` for a bad ``--feature-gates``."""
    gates = FeatureGates.parse(args.feature_gates)
    scheduler = chosen_scheduler(args.batch_scheduler, False, kubernetes_was=gates.kubernetes_was)
    options = RenderOptions(feature_gates=gates, batch_scheduler=scheduler)
    return options, not args.no_cleanup_job


def is_ray_object(document: object) -> TypeGuard[JSONObject]:
    """Whether ``document`` is one of the four kinds (other documents are skipped)."""
    return isinstance(document, dict) and document.get("kind") in RAY_KINDS


def render_manifest(*, params: ManifestRenderParams) -> RenderedManifest:
    """Parse, validate and render one object; raises ``ManifestError``."""
    document = params.document
    metadata = document.get("metadata")
    meta = metadata if isinstance(metadata, dict) else {}
    namespace = str(meta.get("namespace") or DEFAULT_NAMESPACE)
    name = str(meta.get("name") or "<unnamed>")
    # In errors, as the API layer names an object: no namespace when the document has none.
    ref = f"{document.get('kind')} {namespace}/{name}" if meta.get("namespace") else name
    try:
        obj = load_object(document, params.options.feature_gates)
        objects, notes = _render(obj, params)
    except InvalidObjectError as error:
        # One line per mistake, each naming the object, its path and a fix.
        raise ManifestError(str(error)) from None
    except RenderError as error:
        raise ManifestError(f"{ref}: {error}") from None
    return RenderedManifest(obj.kind, namespace, name, objects, notes)


def _render(
    obj: RayCluster | RayJob | RayService | RayCronJob, params: ManifestRenderParams
) -> tuple[tuple[JSONObject, ...], tuple[str, ...]]:
    if isinstance(obj, RayCluster):
        cluster_params = ClusterRenderParams(
            cluster=obj,
            options=params.options,
            include_redis_cleanup_job=params.include_redis_cleanup_job,
        )
        return tuple(render_cluster(params=cluster_params)), ()
    if isinstance(obj, RayJob):
        return render_rayjob(
            job=obj,
            options=params.options,
            include_redis_cleanup_job=params.include_redis_cleanup_job,
        )
    if isinstance(obj, RayService):
        return render_rayservice(
            service=obj,
            options=params.options,
            include_redis_cleanup_job=params.include_redis_cleanup_job,
        )
    if params.now is None:
        return (), (CRON_WITHOUT_NOW,)
    cron_params = CronRenderParams(obj, params.document, params.now, params.local_zone)
    return render_raycronjob(params=cron_params), ()
