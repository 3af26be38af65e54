"""``python -m operator_runtime render FILE.yaml``: what the operator would create.

Every ray.io/v1 object in FILE (``-`` reads stdin) is checked for every mistake at once
(``operator_runtime.api.load_object``: parse, the Kubernetes schema of its pod
templates, KubeRay's rules), then rendered by ``operator_runtime.render.render_manifest``:
for a RayCluster its autoscaler RBAC, Ingress, Secret, Services, PVC, the head and worker
pods (with ``generateName``, as created) and, for a Redis GCS-FT cluster, the cleanup Job
its deletion would start; for a RayJob its RayCluster with all of the above, the
``<job>-head-svc`` Service and, in K8sJobMode, the submitter Job; for a RayService its
RayCluster with all of the above, ``<s>-head-svc``, the serve Service and, for an
incremental upgrade, the Gateway and HTTPRoute; for a RayCronJob the RayJob it creates
next (``--now`` and ``TZ`` pick the tick, as the operator's clock and zone would).

Exit codes: 0 rendered; 1 an invalid object, or a document of a kind render cannot
render (nothing is printed then); 2 an unreadable file or bad flags.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
from collections.abc import Sequence
from typing import Any, TextIO

import yaml

from operator_runtime.api import FeatureGateError
from operator_runtime.controllers.raycronjob.schedule import local_zone
from operator_runtime.render import (
    RAY_KINDS,
    DocumentError,
    ManifestError,
    ManifestRenderParams,
    add_render_arguments,
    is_ray_object,
    load_documents,
    render_manifest,
    render_settings,
)

HELP = "print every object the operator would create for the ray.io/v1 objects in FILE"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The render command's arguments, on its own parser or a subcommand's."""
    parser.add_argument("file", metavar="FILE", help="YAML manifest(s); - reads stdin")
    add_render_arguments(parser)
    parser.add_argument(
        "--now",
        type=_moment,
        metavar="RFC3339",
        help="the current time, for a RayCronJob's next RayJob (default: the clock)",
    )


def add_command(commands: Any) -> None:
    """``render`` as a subcommand of the operator's parser (``commands`` is what
    ``ArgumentParser.add_subparsers`` returns)."""
    parser = commands.add_parser("render", help=HELP, description=HELP[0].upper() + HELP[1:])
    add_arguments(parser)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ray-operator render", description=HELP)
    add_arguments(parser)
    return parser


def _moment(text: str) -> datetime.datetime:
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an RFC 3339 time: {text!r}") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.UTC)


def main(
    argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    return run(build_parser().parse_args(argv), stdout=stdout, stderr=stderr)


def run(
    args: argparse.Namespace, *, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    """Render the file named by parsed ``args``; the exit code (module docstring)."""
    out, err = stdout or sys.stdout, stderr or sys.stderr
    try:
        options, cleanup_job = render_settings(args)
    except FeatureGateError as exc:
        print(f"render: --feature-gates: {exc}", file=err)
        return 2
    source = "<stdin>" if args.file == "-" else args.file
    try:
        if args.file == "-":
            text = sys.stdin.read()
        else:
            with open(args.file, encoding="utf-8") as handle:
                text = handle.read()
    except OSError as exc:
        print(f"render: cannot read {args.file}: {exc.strerror or exc}", file=err)
        return 2
    try:
        documents = load_documents(text, source)
    except DocumentError as exc:
        print(f"render: {exc}", file=err)
        return 2
    now = args.now or datetime.datetime.now(datetime.UTC)
    rendered: list[Any] = []
    failed = False
    for index, document in enumerate(documents):
        if not is_ray_object(document):
            kind = document.get("kind") if isinstance(document, dict) else None
            print(f"render: {source}: document {index}: kind {kind!r} cannot be rendered; "
                  f"give only {', '.join(RAY_KINDS)} objects", file=err)  # fmt: skip
            failed = True
            continue
        params = ManifestRenderParams(
            document=document,
            options=options,
            include_redis_cleanup_job=cleanup_job,
            now=now,
            local_zone=local_zone(_tz_environ()),
        )
        try:
            result = render_manifest(params=params)
        except ManifestError as exc:
            print(f"render: {source}: document {index}:\n{exc}", file=err)
            failed = True
            continue
        rendered.extend(result.objects)
        for note in result.notes:
            print(f"render: {source}: document {index}: {result.ref}: {note}", file=err)
    if failed:
        return 1
    yaml.safe_dump_all(rendered, out, sort_keys=False, default_flow_style=False)
    return 0


def _tz_environ() -> dict[str, str]:
    """``TZ`` as the operator reads it: its zone for a schedule without a timeZone."""
    tz = os.environ.get("TZ")
    return {} if tz is None else {"TZ": tz}


if __name__ == "__main__":
    sys.exit(main())
