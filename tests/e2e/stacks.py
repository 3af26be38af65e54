"""Stacks of the e2e program (``program/``) and of the examples, in any language, and the
facts the tests check them against."""

from __future__ import annotations

import functools
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pulumi.automation as auto
import yaml

from components.schema import PACKAGE_NAME
from hack.localcluster import LocalCluster
from hack.localcluster.deployed_operator import OperatorAsServiceAccount
from hack.pulumi import sdk, use_project_virtualenv
from hack.pulumi.componentplugin import write_provider_plugin
from operator_runtime.api import crds

PROGRAM_DIR = Path(__file__).resolve().parent / "program"
REPO_ROOT = Path(__file__).resolve().parents[2]
RAY_CLUSTER = "kubernetes:ray.io/v1:RayCluster"
CRD_DIR = crds.CRD_DIR
TEMPLATE_FILES = ("Pulumi.yaml", "__main__.py")
"""The repository's own stack template (the root program)."""


def crd_files() -> list[Path]:
    """Our generated CRDs; an empty or missing directory is an error, never a skip."""
    files = sorted(CRD_DIR.glob("*.yaml"))
    if not files:
        raise FileNotFoundError(f"no CRD manifests in {CRD_DIR}: run `make crds`")
    return files


def crd_names() -> tuple[str, ...]:
    """The CRDs' names, in ``crd_files()`` order, from the committed JSON bundle (parsed
    once per process; test_crds holds it to the YAML files)."""
    return tuple(str(manifest["metadata"]["name"]) for manifest in crds.load_bundle())


@dataclass
class ProgramStack:
    """One stack of the e2e program, with its engine output and events kept for asserts."""

    stack: auto.Stack
    cluster: LocalCluster
    namespace: str
    ray_cluster_name: str
    output: list[str] = field(default_factory=list)
    operator: OperatorAsServiceAccount | None = None
    """The operator a RayOperator of this stack deployed, run locally (see ``run_operator``)."""

    @property
    def config_file(self) -> Path:
        return Path(self.stack.workspace.work_dir) / f"Pulumi.{self.stack.name}.yaml"

    def write_config(self, values: dict[str, Any]) -> None:
        """Set ``pulumi-ray:`` keys in the stack file, objects as objects (as a platform
        team keeps them), which ``pulumi config set`` can only do one path at a time."""
        document = (
            yaml.safe_load(self.config_file.read_text()) if self.config_file.exists() else None
        )
        document = document or {}
        document.setdefault("config", {}).update(
            {f"pulumi-ray:{key}": value for key, value in values.items()}
        )
        self.config_file.write_text(yaml.safe_dump(document, sort_keys=False))

    def run_operator(
        self, *, namespace: str, name: str, work_dir: Path
    ) -> OperatorAsServiceAccount:
        """Run, in the background, the operator that this stack's RayOperator deploys: once
        its Deployment and RBAC exist, with the Deployment's arguments and a token of its
        ServiceAccount (kwok pods run no containers)."""
        self.operator = OperatorAsServiceAccount(
            cluster=self.cluster,
            namespace=namespace,
            deployment=name,
            service_account=name,
            work_dir=work_dir,
        )
        self.operator.start_when_deployed()
        return self.operator

    def state_file_text(self) -> str:
        """The stack's state file as the (local, file://) backend stored it on disk: not
        ``stack export``, which the automation API runs with ``--show-secrets``."""
        backend = Path(urlparse(self.stack.workspace.env_vars["PULUMI_BACKEND_URL"]).path)
        found = list((backend / ".pulumi" / "stacks").rglob(f"{self.stack.name}.json"))
        if len(found) != 1:
            raise FileNotFoundError(f"state file of {self.stack.name} under {backend}: {found}")
        return found[0].read_text()

    def set_config(self, key: str, value: str) -> None:
        self.stack.set_config(key, auto.ConfigValue(value=value))

    def _echo(self, line: str) -> None:
        # Kept for the asserts (which quote its tail), not printed: a preview --diff of
        # the CRDs alone is some 80,000 lines.
        self.output.append(line)

    def preview(
        self, *, refresh: bool = False
    ) -> tuple[auto.PreviewResult, list[auto.StepEventMetadata]]:
        """``pulumi preview --diff [--refresh]``; returns the result and each resource's
        planned step."""
        steps: list[auto.StepEventMetadata] = []

        def collect(event: auto.EngineEvent) -> None:
            if event.resource_pre_event is not None:
                steps.append(event.resource_pre_event.metadata)

        self.output.clear()
        result = self.stack.preview(
            diff=True, color="never", refresh=refresh, on_output=self._echo, on_event=collect
        )
        return result, steps

    def up(self) -> auto.UpResult:
        self.output.clear()
        return self.stack.up(color="never", on_output=self._echo)

    def destroy(self) -> auto.DestroyResult:
        self.output.clear()
        return self.stack.destroy(color="never", on_output=self._echo)

    @property
    def text(self) -> str:
        return "".join(self.output)


class GeneratedSdks:
    """Our package's TypeScript and Go SDKs under ``root``, each generated (the TypeScript
    one also compiled, some seconds) the first time a program of its language needs it."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @functools.cached_property
    def nodejs(self) -> Path:
        """The compiled npm package."""
        sdk.generate("nodejs", self.root / "nodejs")
        return sdk.compile_typescript_sdk(self.root / "nodejs")

    @functools.cached_property
    def go(self) -> Path:
        """The Go module's root."""
        sdk.generate("go", self.root / "go")
        return self.root / "go"


def runtime_name(work_dir: Path) -> str:
    """The language of the program in ``work_dir`` (its Pulumi.yaml's runtime)."""
    runtime = yaml.safe_load((work_dir / "Pulumi.yaml").read_text())["runtime"]
    return str(runtime if isinstance(runtime, str) else runtime["name"])


def program_env(work_dir: Path, engine_env: Mapping[str, str]) -> dict[str, str]:
    """The engine's environment for the program in ``work_dir``: a Go program's host runs
    ``go build``, which must find every module in the cache (``make sdk-deps``)."""
    if runtime_name(work_dir) == "go":
        return {**engine_env, **sdk.offline_go_variables(dict(engine_env))}
    return dict(engine_env)


def program_copy(
    tmp_path: Path,
    *,
    template: bool = False,
    source: Path | None = None,
    sdks: GeneratedSdks | None = None,
) -> Path:
    """The e2e program (or, with ``template``, the root stack template; or the program in
    ``source``, e.g. an example) in a scratch directory, set to run in the project's
    virtualenv (a YAML, TypeScript or Go program: with this checkout's component provider
    and, but YAML, the SDK of its language from ``sdks``).

    The engine writes ``Pulumi.<stack>.yaml`` beside ``Pulumi.yaml``, so the program
    never runs from the repository itself.
    """
    work_dir = tmp_path / "program"
    if template:
        work_dir.mkdir(parents=True)
        for name in TEMPLATE_FILES:
            shutil.copyfile(REPO_ROOT / name, work_dir / name)
    else:
        shutil.copytree(
            source or PROGRAM_DIR,
            work_dir,
            ignore=shutil.ignore_patterns("__pycache__", "node_modules", "bin"),
        )
    runtime = runtime_name(work_dir)
    if runtime == "python":
        use_project_virtualenv(work_dir)
        return work_dir
    # Any other language consumes the components through the component provider: the
    # executable plugin, since the Python host we build cannot run the plugin directory
    # (hack/pulumi/componentplugin.py). Named here, not taken from PATH.
    project = yaml.safe_load((work_dir / "Pulumi.yaml").read_text())
    plugin = write_provider_plugin(work_dir / "plugin")
    project["plugins"] = {"providers": [{"name": "ray", "path": str(plugin.parent)}]}
    if runtime in ("nodejs", "go") and sdks is None:
        raise ValueError(f"a {runtime} program needs the generated SDKs: pass sdks=")
    if runtime == "nodejs" and sdks is not None:
        sdk.link_node_modules(work_dir, sdks.nodejs)
    if runtime == "go" and sdks is not None:
        sdk.use_go_sdk(work_dir, sdks.go)
    (work_dir / "Pulumi.yaml").write_text(yaml.safe_dump(project, sort_keys=False))
    return work_dir


Plan = dict[tuple[str, str], Any]
"""The resources a preview plans to create, by (type chain, name) as their URNs have them,
with their inputs."""


def preview_plan(program: ProgramStack) -> tuple[Plan, float]:
    """Preview ``program``: what it plans to create, and the preview's wall time."""
    created: Plan = {}

    def collect(event: auto.EngineEvent) -> None:
        pre = event.resource_pre_event
        if pre is not None and pre.metadata.op == auto.OpType.CREATE:
            assert pre.metadata.new is not None, pre.metadata
            qualified_type, name = pre.metadata.urn.split("::")[2:4]
            created[(qualified_type, name)] = pre.metadata.new.inputs

    program.output.clear()
    started = time.monotonic()
    try:
        program.stack.preview(color="never", on_output=program.output.append, on_event=collect)
    except auto.CommandError as error:
        raise AssertionError(f"preview failed\n{program.text[-4000:]}") from error
    return created, time.monotonic() - started


def _is_ours(qualified_type: str) -> bool:
    """A component of our package (last in the type chain)."""
    return qualified_type.rsplit("$", 1)[-1].startswith(f"{PACKAGE_NAME}:")


def _children(plan: Plan) -> Plan:
    """What the components registered: neither the stack nor a provider nor a component
    itself (a remote component's inputs are its args, a local one's are empty)."""
    return {
        (qualified_type, name): inputs
        for (qualified_type, name), inputs in plan.items()
        if not qualified_type.rsplit("$", 1)[-1].startswith("pulumi:")
        and not _is_ours(qualified_type)
    }


def assert_registers_what_python_does(consumer: Plan, python: Plan) -> int:
    """The consumer (a YAML, TypeScript or Go program) plans the components the Python
    program does, under the same names, and each child resource with the same type chain
    (so the same parents), name and inputs. Returns how many children each has."""
    consumer_children, python_children = _children(consumer), _children(python)
    assert sorted(consumer_children) == sorted(python_children)
    assert len(consumer_children) >= 10, sorted(consumer_children)
    for key, inputs in python_children.items():
        assert consumer_children[key] == inputs, key
    # The inputs compared are the real ones, not two empty maps.
    ray_cluster = next(
        inputs for (t, _), inputs in consumer_children.items() if t.endswith(RAY_CLUSTER)
    )
    assert ray_cluster["spec"]["workerGroupSpecs"][0]["groupName"] == "cpu"
    components = {key for key in consumer if _is_ours(key[0])}
    assert components == {key for key in python if _is_ours(key[0])}
    assert len(components) >= 2, components
    return len(consumer_children)
