"""Benchmark: ``pulumi preview`` and ``pulumi up`` of the stack template as users run them,
beside the same stack built on KubeRay's Helm chart, and what each leaves on disk.

Each subject gets a fresh local control plane (kwok nodes) and a fresh file backend, and
runs ``preview`` (a new stack), ``up``, then ``preview`` again (nothing changed: the
preview people run most), through the real engine (hack/pulumi), once per CLI setting:

- ``on``: the CLI's default, its automatic debug log in ``$PULUMI_HOME/logs`` (pkg/v3 >=
  v3.233.0: every verbose line, property values included);
- ``off``: that log disabled as ``hack/pulumi/environment.py`` does for the tests.

Per command it reports the wall time, the CPU time of the CLI and what it ran (language
host, program, providers: steadier than wall time on a shared machine), the bytes of logs
the command wrote, the stack's checkpoint (its state file in the backend) and the backend
directory (history and backups included). Subjects:

- ``ours``: the root stack template, operator + ``--workloads`` RayClusters (one worker
  each), the CRDs installed by the RayOperator (the default);
- ``ours-crds-apart``: the same with ``operator.installCrds: false``, the CRDs applied
  beforehand with ``kubectl apply --server-side`` (what a separate CRD stack does once);
- ``ours-configgroup``: the CRDs through ``kubernetes.yaml.v2.ConfigGroup`` pointing at the
  committed files (the program sends paths; the provider reads them), RayOperator with
  ``install_crds=False``, and the RayCluster components;
- ``kuberay-helm`` (with ``--kuberay-chart DIR``): KubeRay's chart through
  ``kubernetes.helm.v4.Chart`` from a local directory (CRDs included, as the chart
  installs them) and the RayClusters as raw ``CustomResource``s. Nobody runs the KubeRay
  operator there, so its ``up`` does not wait for any cluster: compare previews and
  state, not ``up``.

For ours the operator runs locally under its ServiceAccount once deployed (kwok pods run
no containers), so ``up`` returns when every cluster is ``ready``. ``--profile`` runs the
template's program under cProfile and splits its time by owner of the code. ``--split``
samples ``/proc`` during each command and splits its CPU by process (CLI and engine,
language host, program, Kubernetes provider, and the kube-apiserver and etcd answering the
provider; see ``benchmarks/proctree.py``). ``--go-profile DIR`` runs the CLI with its
``--profiling`` flag and keeps its Go CPU profiles in DIR, one per command, for ``go tool
pprof -top DIR/<subject>-<logs>-<command>.<pid>.cpu``.

    .venv/bin/python -m hack.sandbox -- .venv/bin/python -m benchmarks.stack_template \\
        [--workloads 1] [--logs off,on] [--subjects ours,kuberay-helm] \\
        [--kuberay-chart DIR] [--preview-only] [--profile] [--split] [--go-profile DIR]

The chart directory comes from the KubeRay repository, fetched beforehand (nothing is
downloaded here)::

    git --git-dir=KUBERAY.git archive v1.6.2 helm-chart/kuberay-operator | tar -x -C DIR
    # then --kuberay-chart DIR/helm-chart/kuberay-operator
"""

from __future__ import annotations

import argparse
import json
import pstats
import resource
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi.automation as auto
import yaml

from benchmarks.proctree import TreeSampler
from hack import sandbox
from hack.localcluster import LocalCluster, start_for_tests
from hack.localcluster.deployed_operator import NEVER_PULLED_IMAGE, OperatorAsServiceAccount
from hack.pulumi import Engine, python_executable
from hack.pulumi import start_for_tests as start_engine
from operator_runtime.api.crds import CRD_DIR

REPO_ROOT = Path(__file__).resolve().parents[1]
IMAGE = "rayproject/ray:2.52.0"
NAMESPACE = "bench"
OPERATOR = "ray-bench"
SUBJECTS = ("ours", "ours-crds-apart", "ours-configgroup", "kuberay-helm")
TEMPLATE_SUBJECTS = ("ours", "ours-crds-apart")
"""Subjects that run the repository's stack template itself (``__main__.py``)."""

THIS_CHECKOUT = """\
import sys
sys.path.insert(0, {root!r})
import components
sys.modules["pulumi_ray"] = components  # this checkout's, not the virtualenv's install
"""
"""Programs import ``pulumi_ray``; the virtualenv may hold another checkout's editable
install, so the program imports the package from the checkout being measured."""

PROFILED_MAIN = """\
import atexit, cProfile, os, runpy
_profile = cProfile.Profile()
atexit.register(lambda: (_profile.disable(), _profile.dump_stats(os.environ["PROFILE_OUT"])))
_profile.enable()
runpy.run_path({main!r}, run_name="__main__")
"""
"""The template's ``__main__.py`` run under cProfile until the process exits, so the
profile covers the SDK's registrations that outlive the program's own code."""

PLAIN_MAIN = "import runpy\nrunpy.run_path({main!r}, run_name='__main__')\n"

CONFIGGROUP_MAIN = """\
import json
import pulumi
import pulumi_kubernetes as k8s
from pulumi_ray import RayCluster, RayOperator, RayOperatorArgs

clusters = json.loads({clusters!r})
provider = k8s.Provider("kubernetes", kubeconfig={kubeconfig!r})
crds = k8s.yaml.v2.ConfigGroup(
    "ray-crds", files=[{crd_glob!r}], opts=pulumi.ResourceOptions(provider=provider)
)
operator = RayOperator(
    "ray-operator",
    RayOperatorArgs(
        image={image!r}, name={operator!r}, namespace={operator!r}, install_crds=False
    ),
    pulumi.ResourceOptions(provider=provider, depends_on=[crds]),
)
namespace = k8s.core.v1.Namespace(
    "namespace-{namespace}", metadata={{"name": {namespace!r}}},
    opts=pulumi.ResourceOptions(provider=provider),
)
for cluster in clusters:
    RayCluster(
        f"raycluster-{namespace}-{{cluster['name']}}",
        name=cluster["name"],
        namespace=namespace.metadata.apply(lambda meta: str(meta.name)),
        spec=cluster["spec"],
        timeout=cluster["timeout"],
        opts=pulumi.ResourceOptions(provider=provider, depends_on=[operator]),
    )
"""
"""``ours-configgroup``: the CRDs as files the provider reads, the rest as in the template."""

HELM_MAIN = """\
import json
import pulumi
import pulumi_kubernetes as k8s

clusters = json.loads({clusters!r})
provider = k8s.Provider("kubernetes", kubeconfig={kubeconfig!r})
system = k8s.core.v1.Namespace(
    "namespace-{operator}", metadata={{"name": {operator!r}}},
    opts=pulumi.ResourceOptions(provider=provider),
)
chart = k8s.helm.v4.Chart(
    "kuberay-operator",
    chart={chart!r},
    namespace=system.metadata.apply(lambda meta: str(meta.name)),
    opts=pulumi.ResourceOptions(provider=provider),
)
namespace = k8s.core.v1.Namespace(
    "namespace-{namespace}", metadata={{"name": {namespace!r}}},
    opts=pulumi.ResourceOptions(provider=provider),
)
for cluster in clusters:
    k8s.apiextensions.CustomResource(
        f"raycluster-{namespace}-{{cluster['name']}}",
        api_version="ray.io/v1",
        kind="RayCluster",
        metadata={{
            "name": cluster["name"],
            "namespace": namespace.metadata.apply(lambda meta: str(meta.name)),
        }},
        spec=cluster["spec"],
        opts=pulumi.ResourceOptions(provider=provider, depends_on=[chart]),
    )
"""
"""``kuberay-helm``: KubeRay's chart from a local directory plus raw RayCluster objects."""

OURS = ("/components/", "/operator_runtime/")
SDK = ("/pulumi/", "/grpc/", "/google/protobuf/")
WAITS = ("poll", "select", "acquire", "sleep")
"""Built-ins in which the process waits (for the engine, the provider, a thread)."""


def _cluster(name: str) -> dict[str, Any]:
    container = {"name": "ray", "image": IMAGE}
    return {
        "name": name,
        "timeout": 600,
        "spec": {
            "rayVersion": "2.52.0",
            "headGroupSpec": {"template": {"spec": {"containers": [container]}}},
            "workerGroupSpecs": [
                {
                    "groupName": "cpu",
                    "replicas": 1,
                    "minReplicas": 0,
                    "maxReplicas": 2,
                    "template": {"spec": {"containers": [container]}},
                }
            ],
        },
    }


def split_profile(path: Path) -> dict[str, float]:
    """Wall seconds of the profiled process by owner of the code (own time, not
    cumulative); ``waiting`` is time blocked on the engine and the provider."""
    stats = pstats.Stats(str(path))
    split = {"ours": 0.0, "pulumi sdk + grpc": 0.0, "other": 0.0, "waiting": 0.0, "total": 0.0}
    for (filename, _line, name), row in stats.stats.items():  # type: ignore[attr-defined]
        own = float(row[2])
        owner = (
            "waiting"
            if filename == "~" and any(w in name for w in WAITS)
            else "ours"
            if any(part in filename for part in OURS) and "site-packages" not in filename
            else "pulumi sdk + grpc"
            if any(part in filename for part in SDK)
            else "other"
        )
        split[owner] += own
        split["total"] += own
        cumulative = float(row[3])
        if name == "deploy" and filename.endswith("components/stack_template.py"):
            split["deploy()"] = cumulative
        if name == "<module>" and filename.endswith("components/__init__.py"):
            split["import components"] = cumulative
    return split


def tree_bytes(path: Path) -> int:
    """Bytes of every file under ``path`` (0 if it is missing or a plain file)."""
    if not path.is_dir():
        return 0
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def checkpoint_bytes(backend: Path, stack: str) -> int:
    """The stack's state file in the file backend (not its history or backups)."""
    stacks = backend / ".pulumi" / "stacks"
    found = [p for p in stacks.rglob(f"{stack}.json") if p.is_file()] if stacks.is_dir() else []
    return max((p.stat().st_size for p in found), default=0)


@dataclass
class Row:
    subject: str
    logs: str
    command: str
    wall: float
    cpu: float
    logs_written: int
    checkpoint: int
    backend: int
    profile: dict[str, float] = field(default_factory=dict)
    split: dict[str, float] = field(default_factory=dict)
    peaks: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Run:
    """One subject under one CLI setting, on its own control plane and backend."""

    subject: str
    logs: str
    workloads: int
    work: Path
    chart: Path | None
    preview_only: bool
    profile: bool
    split: bool = False
    go_profile: Path | None = None

    def program_text(self, cluster: LocalCluster) -> str:
        clusters = json.dumps([_cluster(f"c{i}") for i in range(self.workloads)])
        prelude = THIS_CHECKOUT.format(root=str(REPO_ROOT))
        if self.subject in TEMPLATE_SUBJECTS:
            wrapper = PROFILED_MAIN if self.profile else PLAIN_MAIN
            return prelude + wrapper.format(main=str(REPO_ROOT / "__main__.py"))
        values = {
            "clusters": clusters,
            "kubeconfig": str(cluster.kubeconfig),
            "namespace": NAMESPACE,
            "operator": OPERATOR,
        }
        if self.subject == "ours-configgroup":
            return prelude + CONFIGGROUP_MAIN.format(
                **values, crd_glob=str(CRD_DIR / "*.yaml"), image=NEVER_PULLED_IMAGE
            )
        assert self.chart is not None
        return HELM_MAIN.format(**values, chart=str(self.chart))

    def template_config(self, cluster: LocalCluster) -> dict[str, Any]:
        operator: dict[str, Any] = {
            "image": NEVER_PULLED_IMAGE,
            "name": OPERATOR,
            "namespace": OPERATOR,
        }
        if self.subject == "ours-crds-apart":
            operator["installCrds"] = False
        return {
            "kubeconfig": str(cluster.kubeconfig),
            "operator": operator,
            "workloads": {
                NAMESPACE: {
                    "createNamespace": True,
                    "rayClusters": [_cluster(f"c{i}") for i in range(self.workloads)],
                }
            },
        }

    def execute(self) -> Iterator[Row]:
        cluster = start_for_tests(self.work / "cluster")
        operator: OperatorAsServiceAccount | None = None
        try:
            _engine, env = start_engine(self.work / "engine")
            home = Path(env["PULUMI_HOME"])
            backend = self.work / "engine" / "backend"
            if self.logs == "on":
                (home / "logs").unlink()  # the CLI's default: it makes the directory
            if self.subject == "ours-crds-apart":
                cluster.kubectl("apply", "--server-side", "-f", str(CRD_DIR))
            program = self.work / "program"
            program.mkdir()
            runtime = {"name": "python", "options": {"virtualenv": str(_venv())}}
            project = {"name": f"bench-{self.subject}", "runtime": runtime}
            if self.subject in TEMPLATE_SUBJECTS:
                project = yaml.safe_load((REPO_ROOT / "Pulumi.yaml").read_text())
                project["runtime"] = runtime
            (program / "Pulumi.yaml").write_text(yaml.safe_dump(project, sort_keys=False))
            (program / "__main__.py").write_text(self.program_text(cluster))
            workspace = auto.LocalWorkspace(
                work_dir=str(program),
                pulumi_home=str(home),
                env_vars={**env, "PROFILE_OUT": str(self.work / "profile")},
                pulumi_command=auto.PulumiCommand(root=str(self._cli_root(_engine))),
            )
            stack = auto.Stack.create(f"bench-{uuid.uuid4().hex[:6]}", workspace)
            if self.subject in TEMPLATE_SUBJECTS:
                config = self.template_config(cluster)
                (program / f"Pulumi.{stack.name}.yaml").write_text(
                    yaml.safe_dump({"config": {f"pulumi-ray:{k}": v for k, v in config.items()}})
                )
            if self.subject != "kuberay-helm":
                operator = OperatorAsServiceAccount(
                    cluster=cluster, namespace=OPERATOR, deployment=OPERATOR,
                    service_account=OPERATOR, work_dir=self.work,
                )  # fmt: skip
            commands = ("preview", "up", "preview again")
            for command in commands[:1] if self.preview_only else commands:
                if command == "up" and operator is not None:
                    operator.start_when_deployed()
                print(f"[bench] {self.subject}, logs {self.logs}: pulumi {command}...", flush=True)
                logs_before = tree_bytes(home / "logs")
                if self.go_profile is not None:
                    slug = f"{self.subject}-{self.logs}-{command.replace(' ', '-')}"
                    workspace.env_vars["BENCH_PROFILING"] = str(self.go_profile / slug)
                sampler = TreeSampler() if self.split else None
                if sampler is not None:
                    sampler.start()
                cpu_before = _children_cpu()
                started = time.monotonic()
                if command == "up":
                    stack.up(color="never")
                else:
                    stack.preview(color="never")
                wall = time.monotonic() - started
                workspace.env_vars.pop("BENCH_PROFILING", None)
                split = sampler.stop() if sampler is not None else {}
                profile = self.work / "profile"
                if self.go_profile is not None and self.profile and profile.exists():
                    shutil.copy(profile, self.go_profile / f"{slug}.pstats")
                yield Row(
                    self.subject, self.logs, command, wall, _children_cpu() - cpu_before,
                    tree_bytes(home / "logs") - logs_before,
                    checkpoint_bytes(backend, stack.name), tree_bytes(backend),
                    split_profile(profile) if self.profile and profile.exists() else {},
                    split, sampler.peaks if sampler is not None else {},
                )  # fmt: skip
            if not self.preview_only:
                stack.destroy(color="never")
        finally:
            if operator is not None:
                operator.stop()
            cluster.stop()

    def _cli_root(self, engine: Engine) -> Path:
        """The engine's root, or with ``--go-profile`` a root whose ``bin/pulumi`` runs the
        CLI with ``--profiling $BENCH_PROFILING`` (the Automation API takes no extra
        global flags); commands before the first measured one (``version``, ``stack init``)
        run unprofiled."""
        if self.go_profile is None:
            return engine.root
        root = self.work / "cli"
        (root / "bin").mkdir(parents=True)
        wrapper = root / "bin" / "pulumi"
        wrapper.write_text(
            "#!/bin/sh\n"
            f'exec {str(engine.bin_dir / "pulumi")!r} "$@" '
            '${BENCH_PROFILING:+--profiling "$BENCH_PROFILING"}\n'
        )
        wrapper.chmod(0o755)
        return root


def _children_cpu() -> float:
    """CPU seconds of this process's finished children: the CLI, and through it the
    language host, the program and the providers it ran and waited for. A machine shared
    with other work stretches wall times; it hardly changes these."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _venv() -> Path:
    return python_executable().parents[1]


def _megabytes(count: int) -> str:
    return f"{count / 1e6:.2f}"


def print_table(rows: list[Row], workloads: int) -> None:
    print(f"\nstack template: operator + {workloads} RayClusters, per CLI setting")
    print(
        f"{'subject':<17} {'logs':<4} {'command':<14} {'wall s':>7} {'CPU s':>6} {'logs MB':>8} "
        f"{'checkpoint MB':>13} {'backend MB':>10}"
    )
    for row in rows:
        print(
            f"{row.subject:<17} {row.logs:<4} {row.command:<14} {row.wall:7.1f} {row.cpu:6.1f} "
            f"{_megabytes(row.logs_written):>8} {_megabytes(row.checkpoint):>13} "
            f"{_megabytes(row.backend):>10}"
        )
    print(
        "wall: the engine command; CPU: of the CLI, language host, program and providers;\n"
        "logs MB: what the command added to $PULUMI_HOME/logs;\n"
        "checkpoint: the stack's state file after the command; backend: the whole file\n"
        "backend (history and backups included)"
    )
    profiled = [row for row in rows if row.profile]
    if profiled:
        columns = (
            "total", "waiting", "import components", "deploy()", "ours",
            "pulumi sdk + grpc", "other",
        )  # fmt: skip
        print(f"\n{'program':<32} " + " ".join(f"{c:>{max(len(c), 6)}}" for c in columns))
        for row in profiled:
            cells = " ".join(f"{row.profile.get(c, 0.0):>{max(len(c), 6)}.2f}" for c in columns)
            print(f"{row.subject + ' ' + row.logs + ' ' + row.command:<32} {cells}")
        print(
            "seconds of the program process under cProfile (total = its lifetime; waiting =\n"
            "blocked on engine/provider; import components and deploy() cumulative;\n"
            "ours/sdk/other = own time by owner of the code)"
        )
    split = [row for row in rows if row.split]
    if split:
        print("\nCPU seconds per process during each command (--split; peak RSS of one):")
        for row in split:
            tree = sum(v for k, v in row.split.items() if k not in CONTROL_PLANE)
            cells = ", ".join(
                f"{name} {cpu:.2f} ({row.peaks.get(name, 0) / 1e6:.0f} MB)"
                for name, cpu in row.split.items()
                if cpu >= 0.01
            )
            print(f"  {row.subject} logs {row.logs} {row.command}: {cells}")
            print(f"    (the CLI's tree {tree:.2f} s by /proc, {row.cpu:.2f} s by rusage)")
    ratios = _ratios(rows)
    if ratios:
        print("\nours / kuberay-helm, same CLI setting and command:")
        for line in ratios:
            print(f"  {line}")


CONTROL_PLANE = ("kube-apiserver", "etcd", "other", "other Python (operator)")
"""Roles in ``--split`` outside the CLI's process tree (not in its rusage CPU)."""


def _ratios(rows: list[Row]) -> list[str]:
    helm = {(r.logs, r.command): r for r in rows if r.subject == "kuberay-helm"}
    lines = []
    for row in rows:
        base = helm.get((row.logs, row.command))
        if row.subject == "kuberay-helm" or base is None:
            continue
        checkpoint = row.checkpoint / base.checkpoint if base.checkpoint else float("nan")
        lines.append(
            f"{row.subject:<17} logs {row.logs:<3} {row.command:<14} wall "
            f"{row.wall / base.wall:.2f}x  CPU {row.cpu / base.cpu:.2f}x  "
            f"checkpoint {checkpoint:.2f}x"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.stack_template")
    parser.add_argument("--workloads", type=int, default=1, help="RayClusters in the stack")
    parser.add_argument("--logs", default="off,on", help="CLI settings: off, on or off,on")
    parser.add_argument("--subjects", default=None, help=f"comma-separated from {SUBJECTS}")
    parser.add_argument("--kuberay-chart", type=Path, help="local kuberay-operator chart dir")
    parser.add_argument("--preview-only", action="store_true", help="only preview a new stack")
    parser.add_argument("--profile", action="store_true", help="split the template's time")
    parser.add_argument("--split", action="store_true", help="CPU per process, from /proc")
    parser.add_argument("--go-profile", type=Path, help="keep the CLI's Go CPU profiles here")
    arguments = parser.parse_args(argv)
    if arguments.go_profile is not None:
        arguments.go_profile = arguments.go_profile.resolve()
        arguments.go_profile.mkdir(parents=True, exist_ok=True)
    settings = [s for s in arguments.logs.split(",") if s]
    if not settings or set(settings) - {"off", "on"}:
        parser.error("--logs takes off, on or off,on")
    default = ("ours", "kuberay-helm") if arguments.kuberay_chart else ("ours",)
    subjects = arguments.subjects.split(",") if arguments.subjects else list(default)
    if set(subjects) - set(SUBJECTS):
        parser.error(f"--subjects: choose from {', '.join(SUBJECTS)}")
    chart = arguments.kuberay_chart
    if "kuberay-helm" in subjects and (chart is None or not (chart / "Chart.yaml").is_file()):
        parser.error("kuberay-helm needs --kuberay-chart DIR holding the chart's Chart.yaml")
    sandbox.exit_unless_inside("make bench")
    rows: list[Row] = []
    scratch = Path(tempfile.mkdtemp(prefix="template-bench-"))
    try:
        for subject in subjects:
            for logs in settings:
                run = Run(
                    subject, logs, arguments.workloads, scratch / f"{subject}-{logs}",
                    chart.resolve() if chart else None, arguments.preview_only,
                    arguments.profile and subject in TEMPLATE_SUBJECTS,
                    arguments.split, arguments.go_profile,
                )  # fmt: skip
                run.work.mkdir()
                rows.extend(run.execute())
    finally:
        print_table(rows, arguments.workloads)
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
