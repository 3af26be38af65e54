"""``python -m operator_runtime render FILE.yaml``: what the operator would create.

Every ray.io/v1 object in FILE (``-`` reads stdin) is validated as the controller would
validate it, then rendered by ``operator_runtime.render.render_manifest``: for a
RayCluster its autoscaler RBAC, Ingress, Secret, Services, PVC, the head and worker pods
(with ``generateName``, as created) and, for a Redis GCS-FT cluster, the cleanup Job its
deletion would start; for a RayJob its RayCluster with all of the above, the
``<job>-head-svc`` Service and, in K8sJobMode, the submitter Job; for a RayService its
RayCluster with all of the above, ``<s>-head-svc``, the serve Service and, for an
incremental upgrade, the Gateway and HTTPRoute. A RayCronJob's RayJobs are created on
schedule and not rendered (a note on stderr says so); other kinds are skipped with a note
on stderr. Exit codes: 0 rendered,
1 an invalid object, 2 an unreadable file.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, TextIO

import yaml

from operator_runtime.api import FeatureGateError
from operator_runtime.render import (
    ManifestError,
    ManifestRenderParams,
    add_render_arguments,
    flatten_lists,
    is_ray_object,
    render_manifest,
    render_settings,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ray-operator render",
        description="Print, as YAML, every object the operator would create for the "
        "ray.io/v1 objects in FILE.",
    )
    parser.add_argument("file", metavar="FILE", help="YAML manifest(s); - reads stdin")
    add_render_arguments(parser)
    return parser


def main(
    argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    out, err = stdout or sys.stdout, stderr or sys.stderr
    args = build_parser().parse_args(argv)
    try:
        options, cleanup_job = render_settings(args)
    except FeatureGateError as exc:
        print(f"render: --feature-gates: {exc}", file=err)
        return 2
    try:
        if args.file == "-":
            documents = list(flatten_lists(yaml.safe_load_all(sys.stdin)))
        else:
            with open(args.file) as handle:
                documents = list(flatten_lists(yaml.safe_load_all(handle)))
    except (OSError, yaml.YAMLError) as exc:
        print(f"render: cannot read {args.file}: {exc}", file=err)
        return 2
    rendered: list[Any] = []
    for index, document in enumerate(documents):
        if not is_ray_object(document):
            kind = document.get("kind") if isinstance(document, dict) else None
            print(f"render: document {index}: skipping kind {kind!r}", file=err)
            continue
        params = ManifestRenderParams(
            document=document, options=options, include_redis_cleanup_job=cleanup_job
        )
        try:
            result = render_manifest(params=params)
        except ManifestError as exc:
            print(f"render: document {index}: {exc}", file=err)
            return 1
        rendered.extend(result.objects)
        for note in result.notes:
            print(f"render: document {index}: {result.ref}: {note}", file=err)
    yaml.safe_dump_all(rendered, out, sort_keys=False, default_flow_style=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
