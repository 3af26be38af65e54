"""One ray.io/v1 object, as a plain manifest, -> everything the operator would create for it.

The one path from "a document someone wrote" to rendered objects, shared by ``python -m
operator_runtime render`` (KubeRay YAML) and ``python -m components render`` (a Pulumi
program's custom resources): parse with the API models, validate as the controller
would, then render. Reading files and printing stay with the callers.

A RayCluster renders to its children; a RayJob to its RayCluster, that cluster's
children, its ``<j>-head-svc`` Service and (K8sJobMode) its submitter Job; a RayService
to its RayCluster, that cluster's children, ``<s>-head-svc`` and its serve Service (with
an incremental upgrade: the cluster's serve Service, the Gateway and the HTTPRoute). A
RayCronJob is still parsed and validated (so a mistake is reported), and
``RenderedManifest.notes`` says what is not rendered and why, rather than leaving it out
silently. Where KubeRay draws a random suffix (a RayJob's or RayService's cluster name, a
job id), the render uses ``xxxxx`` and says so in a note, so the same input gives the
same output.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Final, TypeGuard

import pydantic

from operator_runtime.api import (
    FeatureGates,
    InvalidObjectError,
    JSONObject,
    RayCluster,
    RayCronJob,
    RayJob,
    RayService,
    validate_raycluster,
    validate_raycronjob,
    validate_rayjob,
    validate_rayservice,
)
from operator_runtime.render.cluster import ClusterRenderParams, render_cluster
from operator_runtime.render.names import DEFAULT_NAMESPACE
from operator_runtime.render.options import RenderOptions
from operator_runtime.render.pods import RenderError
from operator_runtime.render.rayjob import render_rayjob
from operator_runtime.render.rayservice import render_rayservice

RAY_KINDS: Final = ("RayCluster", "RayJob", "RayService", "RayCronJob")

NOT_RENDERED: Final[Mapping[str, str]] = {
    "RayCronJob": "the RayJobs it would create on schedule are not rendered: "
    "operator_runtime.render has no builder for them yet (they arrive with the RayCronJob "
    "controller)",
}
"""Why a kind renders to nothing; dropped from here as each kind gets its builders."""


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
    components render``): the operator's feature gates and ``--no-cleanup-job``."""
    parser.add_argument(
        "--feature-gates", default="", metavar="A=true,B=false", help="as for the operator"
    )
    parser.add_argument(
        "--no-cleanup-job",
        action="store_true",
        help="leave out the Redis cleanup Job (it only exists while a cluster is deleted)",
    )


def render_settings(args: argparse.Namespace) -> tuple[RenderOptions, bool]:
    """The render options and whether to include the cleanup Job, from those flags;
    raises ``FeatureGateError`` for a bad ``--feature-gates``."""
    options = RenderOptions(feature_gates=FeatureGates.parse(args.feature_gates))
    return options, not args.no_cleanup_job


def is_ray_object(document: object) -> TypeGuard[JSONObject]:
    """Whether ``document`` is one of the four kinds (other documents are skipped)."""
    return isinstance(document, dict) and document.get("kind") in RAY_KINDS


def flatten_lists(documents: Iterable[object]) -> Iterator[object]:
    """The documents of a YAML stream with each ``kind: List`` replaced by its items
    (as ``kubectl get -o yaml`` writes them) and empty documents dropped."""
    for document in documents:
        if isinstance(document, dict) and document.get("kind") == "List":
            yield from document.get("items") or ()
        elif document is not None:
            yield document


def render_manifest(*, params: ManifestRenderParams) -> RenderedManifest:
    """Parse, validate and render one object; raises ``ManifestError``."""
    document = params.document
    kind = document.get("kind")
    metadata = document.get("metadata")
    meta = metadata if isinstance(metadata, dict) else {}
    namespace = str(meta.get("namespace") or DEFAULT_NAMESPACE)
    name = str(meta.get("name") or "<unnamed>")
    # In errors, as the API layer names an object: no namespace when the document has none.
    ref = f"{kind} {namespace}/{name}" if meta.get("namespace") else f"{kind} {name}"
    gates = params.options.feature_gates
    try:
        if kind == "RayCluster":
            cluster = RayCluster.model_validate(document)
            validate_raycluster(cluster, gates)
            cluster_params = ClusterRenderParams(
                cluster=cluster,
                options=params.options,
                include_redis_cleanup_job=params.include_redis_cleanup_job,
            )
            objects = tuple(render_cluster(params=cluster_params))
            return RenderedManifest("RayCluster", namespace, name, objects)
        if kind == "RayJob":
            job = RayJob.model_validate(document)
            validate_rayjob(job, gates)
            objects, notes = render_rayjob(
                job=job,
                options=params.options,
                include_redis_cleanup_job=params.include_redis_cleanup_job,
            )
            return RenderedManifest("RayJob", namespace, name, objects, notes)
        if kind == "RayService":
            service = RayService.model_validate(document)
            validate_rayservice(service, gates)
            objects, notes = render_rayservice(
                service=service,
                options=params.options,
                include_redis_cleanup_job=params.include_redis_cleanup_job,
            )
            return RenderedManifest("RayService", namespace, name, objects, notes)
        if kind == "RayCronJob":
            validate_raycronjob(RayCronJob.model_validate(document), gates)
        else:
            raise ManifestError(f"{ref}: not a ray.io/v1 kind (one of {', '.join(RAY_KINDS)})")
    except pydantic.ValidationError as error:
        raise ManifestError(f"{ref}: {_validation_message(error)}") from None
    except InvalidObjectError as error:
        # Its message already names the object (and its path, hint and code).
        raise ManifestError(str(error)) from None
    except RenderError as error:
        raise ManifestError(f"{ref}: {error}") from None
    return RenderedManifest(kind, namespace, name, (), (NOT_RENDERED[kind],))


def _validation_message(error: pydantic.ValidationError) -> str:
    """Each problem as ``path: message`` (camelCase path, list indexes in brackets),
    instead of pydantic's multi-line dump with its model names."""
    problems = []
    for item in error.errors(include_url=False):
        path = ""
        for part in item["loc"]:
            path += f"[{part}]" if isinstance(part, int) else f".{part}" if path else str(part)
        problems.append(f"{path}: {item['msg']}" if path else item["msg"])
    return "; ".join(problems)
