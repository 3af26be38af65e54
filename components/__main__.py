"""``python -m pulumi_ray render``: what the operator will create, without a cluster.

Usage::

    python -m pulumi_ray render PROGRAM_DIR_OR_MANIFEST [--stack STACK]
                                [--diff OTHER] [--feature-gates A=true,B=false]
                                [--no-cleanup-job]

``PROGRAM_DIR_OR_MANIFEST`` is a Pulumi program (a directory with ``Pulumi.yaml``) or a
KubeRay manifest (``-`` reads stdin). A program runs in this process under Pulumi's
mocks, with no engine and no cluster: its config comes from the defaults in
``Pulumi.yaml`` and, with ``--stack``, from ``Pulumi.<stack>.yaml``. Every ray.io/v1
object it creates (RayCluster, RayJob, RayService, RayCronJob) is validated as the
operator would and rendered by ``operator_runtime.render``: the autoscaler RBAC,
Ingress, Secret, Services, PVC, head and worker pods and the Redis cleanup Job of a
RayCluster; a RayJob's RayCluster (with those children), ``<job>-head-svc`` and submitter
Job; a RayService's RayCluster, ``<s>-head-svc``, serve Service and (incremental upgrade)
Gateway and HTTPRoute. What is not rendered (the RayJobs a RayCronJob creates on
schedule), and stand-ins such as the ``xxxxx`` for KubeRay's random suffixes, are said in
a comment at the top.

The output is YAML, one object per document, sorted by kind, namespace and name, each
under a ``# from <Kind> <namespace>/<name>`` comment; the same input always gives the
same bytes. Values a preview cannot know show as ``<unknown>``, secrets as
``<secret>``, and the random suffix of an autonamed object as ``<autonamed>``.

``--diff OTHER`` renders OTHER too (a program or a manifest) and prints a unified diff
from the first to the second, nothing when they render the same; a CI job shows it next
to ``pulumi preview --diff``::

    python -m pulumi_ray render examples/minimal-cluster
    python -m pulumi_ray render main-checkout/infra --diff infra --stack prod

Exit codes: 0 rendered (a diff, empty or not, is a success); 1 a ray.io/v1 object the
operator would refuse; 2 the program failed (a component's input error, printed as one
message), an input that cannot be read, or a bad flag.

``python -m pulumi_ray review PREVIEW_JSON`` reads what ``pulumi preview --json`` wrote
(or ``--before A --after B``, two programs or manifests) and says, for each ray.io/v1
object that changes, what the operator will do: pods created and deleted, the resources
requested before, after and at the peak, and findings at warn or block level
(``docs/review.md``); ``--format markdown`` is a pull-request comment, ``--format sarif``
a SARIF 2.1.0 log for code scanning; ``--quota`` and ``--price`` hold the peak to a limit
and add a cost per hour; ``--level RULE=warn|block|off`` sets a rule's level::

    pulumi preview --json > preview.json
    python -m pulumi_ray review preview.json --format markdown --output review-full.md
    python -m pulumi_ray review preview.json --format sarif --program infra > review.sarif

Its exit codes: 0 no blocking finding; 1 a finding at ``block``; 2 an unreadable input
or a bad flag.

``python -m pulumi_ray dashboards`` lists the Grafana boards ``RayOperator(
grafana_dashboards=True)`` installs; ``dashboards BOARD`` prints one's JSON (what the
ConfigMap holds, and what Grafana's "Import dashboard" takes); ``dashboards --out DIR``
writes them all as ``DIR/<uid>.json``, e.g. for a Grafana provisioned from files::

    python -m pulumi_ray dashboards rayclusters > rayclusters.json
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import TextIO

from operator_runtime.api import FeatureGateError
from operator_runtime.render import add_render_arguments, render_settings

from .operator.grafana import BOARDS
from .rendering import (
    InputError,
    InvalidResourceError,
    diff_renders,
    load_sources,
    render_sources,
)
from .review import (
    GITHUB_COMMENT_LIMIT,
    ObjectChange,
    Prices,
    Program,
    Report,
    ReviewSettings,
    as_json,
    as_markdown,
    as_sarif,
    as_text,
    from_preview,
    from_sources,
    parse_level,
    parse_policy_config,
    parse_prices,
    parse_quota,
    review,
    with_policies,
    with_quota,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pulumi_ray",
        description="Show what the operator will create for a Pulumi program's Ray resources.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    render = commands.add_parser(
        "render",
        help="print, as YAML, what the operator creates for a program or a manifest",
        description="Print, as YAML, what the operator creates for the ray.io/v1 objects of a "
        "Pulumi program (run under mocks, no cluster) or of a KubeRay manifest.",
    )
    render.add_argument("source", metavar="PROGRAM_DIR_OR_MANIFEST", help="- reads stdin")
    render.add_argument(
        "--diff", metavar="OTHER", help="print a unified diff from this render to OTHER's"
    )
    render.add_argument(
        "--stack", help="take the program's config from Pulumi.<STACK>.yaml (default: none)"
    )
    add_render_arguments(render)
    _add_review_parser(commands)
    dashboards = commands.add_parser(
        "dashboards",
        help="list the Grafana boards, print one's JSON, or write them all to a folder",
        description="The Grafana boards RayOperator(grafana_dashboards=True) installs.",
    )
    dashboards.add_argument(
        "board", nargs="?", choices=[b.slug for b in BOARDS], help="print this board's JSON"
    )
    dashboards.add_argument("--out", metavar="DIR", help="write every board to DIR/<uid>.json")
    return parser


def _add_review_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    review = commands.add_parser(
        "review",
        help="say what a change does to running Ray workloads (pods, resources, findings)",
        description="Read `pulumi preview --json` (or two programs or manifests) and give, "
        "for each ray.io/v1 object that changes, what the operator will do with it.",
    )
    review.add_argument(
        "preview",
        nargs="?",
        metavar="PREVIEW_JSON",
        help="`pulumi preview --json` output; - reads stdin",
    )
    review.add_argument("--before", metavar="PROGRAM_DIR_OR_MANIFEST", help="instead of a preview")
    review.add_argument("--after", metavar="PROGRAM_DIR_OR_MANIFEST", help="with --before")
    review.add_argument("--stack", help="the programs' config from Pulumi.<STACK>.yaml")
    review.add_argument(
        "--format",
        choices=("markdown", "text", "json", "sarif"),
        default="text",
        help="default: text; sarif is SARIF 2.1.0 for code scanning",
    )
    review.add_argument(
        "--program",
        metavar="PROGRAM_DIR_OR_MANIFEST",
        help="where a preview's objects are declared, for SARIF's file locations "
        "(default: --after)",
    )
    review.add_argument(
        "--output", metavar="FILE", help="also write the full, untrimmed report to FILE"
    )
    review.add_argument(
        "--max-chars",
        type=int,
        default=GITHUB_COMMENT_LIMIT,
        help="trim Markdown to this many characters (default: GitHub's comment limit)",
    )
    review.add_argument(
        "--level",
        action="append",
        default=[],
        metavar="RULE=warn|block|off",
        help="change a rule's level or turn it off; a block finding exits 1 (repeatable)",
    )
    review.add_argument(
        "--quota",
        metavar="cpu=64,memory=256Gi,gpu=8",
        help="a finding (quota-exceeded) when the change's peak requests exceed these",
    )
    review.add_argument(
        "--policy-config",
        metavar="FILE",
        help="run the policy pack's rules with this config (what --policy-pack-config takes)",
    )
    review.add_argument(
        "--price",
        metavar="cpu=0.03/h,gpu=2.5/h,memory=0.004/GiB-h",
        help="add a cost per hour before, after and at the peak, per object and in total",
    )
    review.add_argument(
        "--random-pod-delete",
        action="store_true",
        help="the operator runs with ENABLE_RANDOM_POD_DELETE=true",
    )
    review.add_argument(
        "--no-gcs-ft-redis-cleanup",
        action="store_true",
        help="the operator runs with ENABLE_GCS_FT_REDIS_CLEANUP=false",
    )
    review.add_argument(
        "--no-zero-downtime",
        action="store_true",
        help="the operator runs with ENABLE_ZERO_DOWNTIME=false",
    )
    add_render_arguments(review)


def _review(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    try:
        levels = dict(parse_level(text) for text in args.level)
        options, _ = render_settings(args)
        quota = parse_quota(args.quota) if args.quota is not None else {}
        prices = parse_prices(args.price) if args.price is not None else None
    except (ValueError, FeatureGateError) as error:
        print(f"review: {error}", file=err)
        return 2
    settings = ReviewSettings(
        options=options,
        random_pod_delete=args.random_pod_delete,
        gcs_ft_redis_cleanup=not args.no_gcs_ft_redis_cleanup,
        zero_downtime=not args.no_zero_downtime,
        levels=levels,
    )
    try:
        changes, source = _changes(args)
        policy = (
            parse_policy_config(_read(args.policy_config), source=args.policy_config)
            if args.policy_config is not None
            else None
        )
    except InputError as error:
        print(f"review: {error}", file=err)
        return 2
    report = with_quota(review(changes, settings, source=source), quota, settings)
    if policy is not None:
        report = with_policies(report, changes, policy, settings)
    text, full = _formatted(args, report, changes, prices)
    if args.output is not None:
        Path(args.output).write_text(full, encoding="utf-8")
    out.write(text)
    return 1 if report.blocked else 0


def _changes(args: argparse.Namespace) -> tuple[list[ObjectChange], str]:
    if args.before is not None or args.after is not None:
        if args.preview is not None or args.before is None or args.after is None:
            raise InputError("give a preview's JSON, or --before and --after, not both")
        changes = from_sources(
            load_sources(args.before, stack=args.stack),
            load_sources(args.after, stack=args.stack),
        )
        return changes, f"{args.before} -> {args.after}"
    if args.preview is not None:
        text = sys.stdin.read() if args.preview == "-" else _read(args.preview)
        return from_preview(text, source=args.preview), args.preview
    raise InputError("give the JSON of `pulumi preview --json`, or --before and --after")


def _formatted(
    args: argparse.Namespace, report: Report, changes: list[ObjectChange], prices: Prices | None
) -> tuple[str, str]:
    """The report as printed, and as written to ``--output`` (untrimmed)."""
    if args.format == "json":
        text = as_json(report, prices=prices)
        return text, text
    if args.format == "markdown":
        comment = as_markdown(report, limit=args.max_chars, full_report=args.output, prices=prices)
        return comment, as_markdown(report, limit=sys.maxsize, prices=prices)
    if args.format == "sarif":
        where = args.program if args.program is not None else args.after
        urns = {change.ref: change.urn for change in changes if change.urn}
        text = as_sarif(report, program=Program(where, urns), version=_version())
        return text, text
    text = as_text(report, prices=prices)
    return text, text


def _version() -> str:
    try:
        return metadata.version("pulumi-ray")
    except metadata.PackageNotFoundError:
        return ""


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise InputError(f"cannot read {path}: {error.strerror or error}") from None


def _dashboards(board: str | None, out_dir: str | None, out: TextIO) -> int:
    if out_dir is not None:
        folder = Path(out_dir)
        folder.mkdir(parents=True, exist_ok=True)
        for each in BOARDS:
            (folder / f"{each.uid}.json").write_text(each.json())
            out.write(f"{folder / f'{each.uid}.json'}\n")
    elif board is not None:
        out.write(next(b for b in BOARDS if b.slug == board).json())
    else:
        for each in BOARDS:
            out.write(f"{each.slug:<12} {each.title}\n")
    return 0


def main(
    argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    out, err = stdout or sys.stdout, stderr or sys.stderr
    args = build_parser().parse_args(argv)
    if args.command == "dashboards":
        return _dashboards(args.board, args.out, out)
    if args.command == "review":
        return _review(args, out, err)
    try:
        options, cleanup_job = render_settings(args)
    except FeatureGateError as error:
        print(f"render: --feature-gates: {error}", file=err)
        return 2

    def render(path: str) -> str:
        sources = load_sources(path, stack=args.stack)
        return render_sources(sources, options=options, include_redis_cleanup_job=cleanup_job)

    try:
        text = render(args.source)
        if args.diff is not None:
            text = diff_renders(
                text, render(args.diff), before_label=args.source, after_label=args.diff
            )
    except InputError as error:
        print(f"render: {error}", file=err)
        return 2
    except InvalidResourceError as error:
        print(f"render: {error}", file=err)
        return 1
    out.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
