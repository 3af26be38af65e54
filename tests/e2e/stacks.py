"""Stacks of the e2e program (``program/``) and the facts the tests check them against."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pulumi.automation as auto
import yaml

from hack.localcluster import LocalCluster
from hack.localcluster.deployed_operator import OperatorAsServiceAccount
from hack.pulumi import python_executable
from hack.pulumi.componentplugin import write_provider_plugin
from operator_runtime.api import crds

PROGRAM_DIR = Path(__file__).resolve().parent / "program"
REPO_ROOT = Path(__file__).resolve().parents[2]
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


def program_copy(tmp_path: Path, *, template: bool = False, source: Path | None = None) -> Path:
    """The e2e program (or, with ``template``, the root stack template; or the program in
    ``source``, e.g. an example) in a scratch directory, set to run in the project's
    virtualenv (a YAML program: with this checkout's component provider).

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
            source or PROGRAM_DIR, work_dir, ignore=shutil.ignore_patterns("__pycache__")
        )
    project = yaml.safe_load((work_dir / "Pulumi.yaml").read_text())
    if project["runtime"] == "yaml":
        # A YAML program consumes the components through the component provider: the
        # executable plugin, since the Python host we build cannot run the plugin
        # directory (hack/pulumi/componentplugin.py). Named here, not taken from PATH.
        plugin = write_provider_plugin(work_dir / "plugin")
        project["plugins"] = {"providers": [{"name": "ray", "path": str(plugin.parent)}]}
    else:
        # Read by language hosts that take it from the engine; the v3.79 host we can build
        # uses PULUMI_PYTHON_CMD instead (see hack/pulumi/environment.py). Both name .venv.
        project["runtime"]["options"] = {"virtualenv": str(python_executable().parents[1])}
    (work_dir / "Pulumi.yaml").write_text(yaml.safe_dump(project, sort_keys=False))
    return work_dir
