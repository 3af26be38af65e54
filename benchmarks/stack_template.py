"""Benchmark: ``pulumi preview`` and ``pulumi up`` of the stack template, and how much of
each is our Python.

On a local control plane, through the real engine (hack/pulumi), the root stack template
is configured with an operator and ``--clusters`` RayClusters (one worker each); the
operator it deploys runs locally under its ServiceAccount (kwok pods run no containers),
so ``up`` returns when every cluster is ready. The program runs under cProfile, and the
profile is split by where the time went: our packages (``components``,
``operator_runtime``), the Pulumi SDK (with gRPC), and the rest (imports, pydantic, ...).

    .venv/bin/python -m benchmarks.stack_template [--clusters 3]
"""

from __future__ import annotations

import argparse
import pstats
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import pulumi.automation as auto
import yaml

from hack import sandbox
from hack.localcluster import start_for_tests
from hack.localcluster.deployed_operator import NEVER_PULLED_IMAGE, OperatorAsServiceAccount
from hack.pulumi import python_executable
from hack.pulumi import start_for_tests as start_engine

REPO_ROOT = Path(__file__).resolve().parents[1]
IMAGE = "rayproject/ray:2.52.0"
PROFILED_MAIN = """\
import atexit, cProfile, os, runpy
_profile = cProfile.Profile()
atexit.register(lambda: (_profile.disable(), _profile.dump_stats(os.environ["PROFILE_OUT"])))
_profile.enable()
runpy.run_path({main!r}, run_name="__main__")
"""
"""The template's ``__main__.py`` run under cProfile until the process exits, so the
profile covers the SDK's registrations that outlive the program's own code."""

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.stack_template")
    parser.add_argument("--clusters", type=int, default=3)
    parser.add_argument(
        "--profile-out", type=Path, help="keep the cProfile of `up` here (read with pstats)"
    )
    arguments = parser.parse_args(argv)
    sandbox.exit_unless_inside("make bench")
    work = Path(tempfile.mkdtemp(prefix="template-bench-"))
    cluster = start_for_tests(work / "cluster")
    operator: OperatorAsServiceAccount | None = None
    try:
        engine, env = start_engine(work / "engine")
        program = work / "program"
        program.mkdir()
        project = yaml.safe_load((REPO_ROOT / "Pulumi.yaml").read_text())
        project["runtime"]["options"] = {"virtualenv": str(python_executable().parents[1])}
        (program / "Pulumi.yaml").write_text(yaml.safe_dump(project, sort_keys=False))
        (program / "__main__.py").write_text(
            PROFILED_MAIN.format(main=str(REPO_ROOT / "__main__.py"))
        )
        workspace = auto.LocalWorkspace(
            work_dir=str(program),
            pulumi_home=env["PULUMI_HOME"],
            env_vars={**env, "PROFILE_OUT": str(work / "profile")},
            pulumi_command=auto.PulumiCommand(root=str(engine.root)),
        )
        stack = auto.Stack.create(f"bench-{uuid.uuid4().hex[:6]}", workspace)
        config = {
            "kubeconfig": str(cluster.kubeconfig),
            "operator": {
                "image": NEVER_PULLED_IMAGE,
                "name": "ray-bench",
                "namespace": "ray-bench",
            },
            "workloads": {
                "bench": {
                    "createNamespace": True,
                    "rayClusters": [_cluster(f"c{i}") for i in range(arguments.clusters)],
                }
            },
        }
        stack_file = program / f"Pulumi.{stack.name}.yaml"
        stack_file.write_text(
            yaml.safe_dump({"config": {f"pulumi-ray:{k}": v for k, v in config.items()}})
        )
        operator = OperatorAsServiceAccount(
            cluster=cluster,
            namespace="ray-bench",
            deployment="ray-bench",
            service_account="ray-bench",
            work_dir=work,
        )
        rows: list[tuple[str, float, dict[str, float]]] = []
        for step in ("preview", "up"):
            if step == "up":
                operator.start_when_deployed()
            print(f"[bench] pulumi {step} of the template ({arguments.clusters} clusters)...")
            started = time.monotonic()
            if step == "preview":
                stack.preview(color="never")
            else:
                stack.up(color="never")
            rows.append((step, time.monotonic() - started, split_profile(work / "profile")))
        print(f"\nstack template: operator + {arguments.clusters} RayClusters")
        columns = (
            "total", "waiting", "import components", "deploy()", "ours",
            "pulumi sdk + grpc", "other",
        )  # fmt: skip
        print(f"{'step':<8} {'wall':>6} " + " ".join(f"{c:>{max(len(c), 6)}}" for c in columns))
        for step, wall, split in rows:
            cells = " ".join(f"{split.get(c, 0.0):>{max(len(c), 6)}.2f}" for c in columns)
            print(f"{step:<8} {wall:6.1f} {cells}")
        print(
            "seconds; wall: the engine command; the rest: the program process under cProfile\n"
            "(total = its lifetime; waiting = blocked on engine/provider; import components\n"
            "and deploy() cumulative; ours/sdk/other = own time by owner of the code)"
        )
        if arguments.profile_out is not None:
            shutil.copyfile(work / "profile", arguments.profile_out)
        stack.destroy(color="never")
        return 0
    finally:
        if operator is not None:
            operator.stop()
        cluster.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
