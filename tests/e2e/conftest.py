"""Fixtures for the e2e tier: a real Pulumi engine (built from Go modules) and stacks of
the program in ``program/`` against the local control plane.

Nothing here skips: if the engine cannot be built or the cluster cannot start, the
fixture raises and every test using it errors with the reason.
"""

from __future__ import annotations

import contextlib
import functools
import json
import subprocess
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi.automation as auto
import pytest

from hack.localcluster import TEST_GO_RUNTIME, LocalCluster, start_for_tests
from hack.localcluster.deployed_operator import NEVER_PULLED_IMAGE
from hack.pulumi import Engine
from hack.pulumi import start_for_tests as start_engine_for_tests
from tests import tierscope
from tests.e2e.stacks import (
    GeneratedSdks,
    Plan,
    ProgramStack,
    crd_files,
    crd_names,
    preview_plan,
    program_copy,
    program_env,
)
from tests.examples import CONFIG, EXAMPLES


@dataclass(frozen=True)
class PulumiEngine:
    """The built engine and the offline environment every e2e stack runs in."""

    engine: Engine
    env: dict[str, str]

    @functools.cached_property
    def command(self) -> auto.PulumiCommand:
        """The CLI as Automation API workspaces take it, made once: making one runs
        ``pulumi version`` (a tenth of a CPU-second, once per stack before)."""
        return auto.PulumiCommand(root=str(self.engine.root))

    def cli(self, cwd: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        """Run the built CLI non-interactively; a failure raises with its whole output,
        the engine's own words."""
        result = subprocess.run(
            [str(self.engine.path("pulumi")), *args, "--non-interactive"],
            cwd=cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if result.returncode != 0:
            raise AssertionError(
                f"pulumi {' '.join(args)} exited {result.returncode}\n"
                f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
            )
        return result


@pytest.fixture(scope="session")
def local_cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    """The e2e tier's own control plane (it replaces the session one of ``tests/conftest.py``
    here). A stack's destroy deletes our CRDs, which is cluster-wide: on a control plane
    shared with the integration tier, that deletion would wait forever for the objects
    with finalizers those tests leave behind once their operators are gone."""
    cluster = start_for_tests(
        tmp_path_factory.mktemp("e2e-localcluster"), go_runtime=TEST_GO_RUNTIME
    )
    tierscope.end_with_tier(request, Path(__file__).parent)
    try:
        yield cluster
    finally:
        cluster.stop()


SHORTCUTS = {
    # The CLI writes the stack's state once, at the operation's end, instead of after
    # every step: with our CRDs in the state, that rewrite was most of the CLI's CPU (the
    # YAML quickstart's up and destroy, 4.6 and 6.1 CPU-s for the CLI, 1.7 and 1.9 with
    # this; the tier, 432 CPU-s and 395). What is lost is a killed CLI's progress, which
    # no test here kills.
    "PULUMI_SKIP_CHECKPOINTS": "true",
    # The Node.js host's ts-node transpiles the TypeScript quickstart without checking its
    # types: 1.3 CPU-s a run against 3.4. The type check is tsc's, against the compiled
    # SDK, in test_sdk_typescript.py (a misspelled field included).
    "PULUMI_NODEJS_TRANSPILE_ONLY": "true",
}
"""What the e2e tier's engine skips that the tests would only pay for; ``make demo`` and
the benchmarks run the engine as users do."""


@pytest.fixture(scope="session")
def pulumi_engine(tmp_path_factory: pytest.TempPathFactory) -> PulumiEngine:
    built, env = start_engine_for_tests(tmp_path_factory.mktemp("pulumi-engine"), less_gc=True)
    return PulumiEngine(engine=built, env={**env, **SHORTCUTS})


@pytest.fixture(scope="session")
def generated_sdks(tmp_path_factory: pytest.TempPathFactory) -> GeneratedSdks:
    """Our TypeScript and Go SDKs, generated once per session when a program needs one."""
    return GeneratedSdks(tmp_path_factory.mktemp("sdks"))


@pytest.fixture
def program_stack(
    pulumi_engine: PulumiEngine,
    local_cluster: LocalCluster,
    generated_sdks: GeneratedSdks,
    tmp_path: Path,
) -> Iterator[Callable[..., ProgramStack]]:
    """Factory of fresh stacks of the e2e program; each is destroyed and removed after the
    test (see ``_stacks``)."""
    with _stacks(pulumi_engine, local_cluster, tmp_path, generated_sdks) as create:
        yield create


@pytest.fixture(scope="session")
def python_plan(
    pulumi_engine: PulumiEngine,
    local_cluster: LocalCluster,
    generated_sdks: GeneratedSdks,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[[str], tuple[Plan, float]]]:
    """The preview plan (and its wall time) of a Python example as committed, with its
    ``CONFIG``: what the same program in YAML, TypeScript or Go must register. Previewed
    once per session, however many languages are compared with it."""
    plans: dict[str, tuple[Plan, float]] = {}
    work_root = tmp_path_factory.mktemp("python-plans")
    with _stacks(pulumi_engine, local_cluster, work_root, generated_sdks) as create:

        def plan(example: str) -> tuple[Plan, float]:
            if example not in plans:
                program = create(example=EXAMPLES / example)
                for key, value in CONFIG[example].items():
                    program.set_config(key, value)
                plans[example] = preview_plan(program)
            return plans[example]

        yield plan


@pytest.fixture(scope="class")
def class_program_stack(
    pulumi_engine: PulumiEngine,
    local_cluster: LocalCluster,
    generated_sdks: GeneratedSdks,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[..., ProgramStack]]:
    """``program_stack`` for a stack that the tests of one class share: its lifecycle
    (stack, first ``up``, operator, ``destroy``) is paid once, and it is gone when the
    class ends, before any other test's stack runs an operator of its own."""
    work_root = tmp_path_factory.mktemp("stacks")
    with _stacks(pulumi_engine, local_cluster, work_root, generated_sdks) as create:
        yield create


@contextlib.contextmanager
def _stacks(
    pulumi_engine: PulumiEngine,
    local_cluster: LocalCluster,
    work_root: Path,
    sdks: GeneratedSdks,
) -> Iterator[Callable[..., ProgramStack]]:
    """Factory of fresh stacks of the e2e program under ``work_root``; each is destroyed and
    removed on exit.

    The CRDs are cluster-wide and shared by the e2e modules. Server-side apply makes
    Pulumi adopt ones that already exist, and destroy then deletes them, so any that were
    there before are applied again afterwards: the cluster is left as the test found it.
    """
    created: list[ProgramStack] = []
    pre_existing_crds = _present_crds(local_cluster)

    def create(
        *,
        ray_cluster_wait_for: str | None = None,
        template_manifests: list[str] | None = None,
        template_config: dict[str, Any] | None = None,
        example: Path | None = None,
        crds_apart: bool = False,
    ) -> ProgramStack:
        """A stack of the e2e program or, given ``template_manifests`` or
        ``template_config`` (keys of ``pulumi-ray:``, objects as in a stack file), of the
        root stack template, or of the program in ``example`` with only the kubeconfig
        set (the rest of its config is the caller's).

        ``crds_apart``: the CRDs are applied to the cluster first and left out of the
        stack (the template's ``operator.installCrds: false``, the e2e program's empty
        ``crdFiles``), as a platform team that applies them apart does. For tests that
        are not about the CRDs: with them in the stack, they are some 80% of every
        preview's and up's time (a preview of the template's operator and two clusters:
        11.7 s with them, 2.4 s without, on an idle machine)."""
        if crds_apart:
            _apply_missing_crds(local_cluster)
        suffix = uuid.uuid4().hex[:8]
        template = template_manifests is not None or template_config is not None
        work_dir = program_copy(work_root / suffix, template=template, source=example, sdks=sdks)
        workspace = auto.LocalWorkspace(
            work_dir=str(work_dir),
            pulumi_home=pulumi_engine.env["PULUMI_HOME"],
            env_vars=program_env(work_dir, pulumi_engine.env),
            pulumi_command=pulumi_engine.command,
        )
        stack = auto.Stack.create(f"e2e-{suffix}", workspace)
        program = ProgramStack(
            stack=stack,
            cluster=local_cluster,
            namespace=f"e2e-{suffix}",
            ray_cluster_name=f"raycluster-{suffix}",
        )
        created.append(program)
        config = {
            "kubeconfig": str(local_cluster.kubeconfig),
            "namespace": program.namespace,
            "crdFiles": json.dumps([] if crds_apart else [str(path) for path in crd_files()]),
            "greeting": "hello",
            "rayClusterName": program.ray_cluster_name,
        }
        if ray_cluster_wait_for is not None:
            config["rayClusterWaitFor"] = ray_cluster_wait_for
        if template:
            config = {"kubeconfig": str(local_cluster.kubeconfig), "namespace": program.namespace}
        if example is not None:
            config = {"kubernetes:kubeconfig": str(local_cluster.kubeconfig)}
        stack.set_all_config({key: auto.ConfigValue(value=value) for key, value in config.items()})
        if template_manifests is not None:
            program.write_config({"manifests": template_manifests})
        if template:
            # The operator's pods never run (kwok): an image that can never be pulled.
            given = template_config or {}
            apart = {"installCrds": False} if crds_apart else {}
            operator = {"image": NEVER_PULLED_IMAGE, **apart, **given.get("operator", {})}
            program.write_config({**given, "operator": operator})
        return program

    try:
        yield create
    finally:
        _destroy(created, local_cluster, pre_existing_crds)


def _destroy(
    created: list[ProgramStack], local_cluster: LocalCluster, pre_existing_crds: list[Path]
) -> None:
    for program in created:
        # A failed test may leave resources behind; destroy is idempotent on an empty stack.
        # An operator run for the stack keeps running until then, to honour finalizers.
        try:
            program.destroy()
            program.stack.workspace.remove_stack(program.stack.name)
        finally:
            if program.operator is not None:
                program.operator.stop()
    present = _present_crds(local_cluster)
    _apply_crds(local_cluster, [path for path in pre_existing_crds if path not in present])


def _apply_missing_crds(cluster: LocalCluster) -> None:
    """Our CRDs in the cluster, established, for a stack that leaves them out."""
    present = _present_crds(cluster)
    missing = [path for path in crd_files() if path not in present]
    if missing:
        _apply_crds(cluster, missing)
        cluster.wait_for_crds(*crd_names())


def _apply_crds(cluster: LocalCluster, files: list[Path]) -> None:
    if files:
        # One kubectl for all of them: each run costs a discovery and a process start.
        cluster.apply_crds(*files)


def _present_crds(cluster: LocalCluster) -> list[Path]:
    """The manifests of our CRDs that are in the cluster, asked in one ``kubectl get``."""
    found = cluster.kubectl(
        "get", "crd", *crd_names(), "-o", "name", "--ignore-not-found"
    ).stdout.split()
    return [
        path
        for path, name in zip(crd_files(), crd_names(), strict=True)
        if f"customresourcedefinition.apiextensions.k8s.io/{name}" in found
    ]
