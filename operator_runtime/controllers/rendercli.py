"""``python -m operator_runtime render FILE.yaml``: what the operator would create.

Every RayCluster in FILE (``-`` reads stdin) is validated as the controller would
validate it, then rendered straight from ``operator_runtime.render``: autoscaler RBAC,
Ingress, Secret, Services, PVC, the head and worker pods (with ``generateName``, as
created) and, for a Redis GCS-FT cluster, the cleanup Job its deletion would start.
Other kinds in FILE are skipped with a note on stderr. Exit codes: 0 rendered,
1 an invalid RayCluster, 2 an unreadable file.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence
from typing import Any, TextIO

import pydantic
import yaml

from operator_runtime.api import (
    FeatureGateError,
    FeatureGates,
    InvalidObjectError,
    RayCluster,
    validate_raycluster,
)
from operator_runtime.render import ClusterRenderParams, RenderError, RenderOptions, render_cluster


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ray-operator render",
        description="Print, as YAML, every object the operator would create for the "
        "RayClusters in FILE.",
    )
    parser.add_argument("file", metavar="FILE", help="YAML manifest(s); - reads stdin")
    parser.add_argument(
        "--feature-gates", default="", metavar="A=true,B=false", help="as for the operator"
    )
    parser.add_argument(
        "--no-cleanup-job",
        action="store_true",
        help="leave out the Redis cleanup Job (it only exists while a cluster is deleted)",
    )
    return parser


def _documents(stream: TextIO) -> Iterator[Any]:
    for document in yaml.safe_load_all(stream):
        if isinstance(document, dict) and document.get("kind") == "List":
            yield from document.get("items") or ()
        elif document is not None:
            yield document


def main(
    argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    out, err = stdout or sys.stdout, stderr or sys.stderr
    args = build_parser().parse_args(argv)
    try:
        gates = FeatureGates.parse(args.feature_gates)
    except FeatureGateError as exc:
        print(f"render: --feature-gates: {exc}", file=err)
        return 2
    try:
        if args.file == "-":
            documents = list(_documents(sys.stdin))
        else:
            with open(args.file) as handle:
                documents = list(_documents(handle))
    except (OSError, yaml.YAMLError) as exc:
        print(f"render: cannot read {args.file}: {exc}", file=err)
        return 2
    options = RenderOptions(feature_gates=gates)
    rendered: list[Any] = []
    for index, document in enumerate(documents):
        kind = document.get("kind") if isinstance(document, dict) else None
        if kind != "RayCluster":
            print(f"render: document {index}: skipping kind {kind!r}", file=err)
            continue
        try:
            cluster = RayCluster.model_validate(document)
            validate_raycluster(cluster, gates)
            params = ClusterRenderParams(
                cluster=cluster, options=options, include_redis_cleanup_job=not args.no_cleanup_job
            )
            rendered.extend(render_cluster(params=params))
        except (pydantic.ValidationError, InvalidObjectError, RenderError) as exc:
            print(f"render: document {index}: {exc}", file=err)
            return 1
    yaml.safe_dump_all(rendered, out, sort_keys=False, default_flow_style=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
