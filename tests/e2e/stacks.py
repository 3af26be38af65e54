"""Stacks of the e2e program (``program/``) and the facts the tests check them against."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pulumi.automation as auto
import yaml

from hack.localcluster import LocalCluster
from hack.pulumi import python_executable

PROGRAM_DIR = Path(__file__).resolve().parent / "program"
REPO_ROOT = Path(__file__).resolve().parents[2]
CRD_DIR = REPO_ROOT / "operator_runtime" / "api" / "crds"
TEMPLATE_FILES = ("Pulumi.yaml", "__main__.py")
"""The repository's own stack template (the root program)."""


def crd_files() -> list[Path]:
    """Our generated CRDs; an empty or missing directory is an error, never a skip."""
    files = sorted(CRD_DIR.glob("*.yaml"))
    if not files:
        raise FileNotFoundError(f"no CRD manifests in {CRD_DIR}: run `make crds`")
    return files


def crd_names() -> list[str]:
    return [str(yaml.safe_load(path.read_text())["metadata"]["name"]) for path in crd_files()]


@dataclass
class ProgramStack:
    """One stack of the e2e program, with its engine output and events kept for asserts."""

    stack: auto.Stack
    cluster: LocalCluster
    namespace: str
    ray_cluster_name: str
    output: list[str] = field(default_factory=list)

    def set_config(self, key: str, value: str) -> None:
        self.stack.set_config(key, auto.ConfigValue(value=value))

    def _echo(self, line: str) -> None:
        # Kept for the asserts (which quote its tail), not printed: a preview --diff of
        # the CRDs alone is some 80,000 lines.
        self.output.append(line)

    def preview(self) -> tuple[auto.PreviewResult, list[auto.StepEventMetadata]]:
        """``pulumi preview --diff``; returns the result and each resource's planned step."""
        steps: list[auto.StepEventMetadata] = []

        def collect(event: auto.EngineEvent) -> None:
            if event.resource_pre_event is not None:
                steps.append(event.resource_pre_event.metadata)

        self.output.clear()
        result = self.stack.preview(
            diff=True, color="never", on_output=self._echo, on_event=collect
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


def program_copy(tmp_path: Path, *, template: bool = False) -> Path:
    """The e2e program (or, with ``template``, the root stack template) in a scratch
    directory, set to run in the project's virtualenv.

    The engine writes ``Pulumi.<stack>.yaml`` beside ``Pulumi.yaml``, so the program
    never runs from the repository itself.
    """
    work_dir = tmp_path / "program"
    if template:
        work_dir.mkdir(parents=True)
        for name in TEMPLATE_FILES:
            shutil.copyfile(REPO_ROOT / name, work_dir / name)
    else:
        shutil.copytree(PROGRAM_DIR, work_dir, ignore=shutil.ignore_patterns("__pycache__"))
    project = yaml.safe_load((work_dir / "Pulumi.yaml").read_text())
    # Read by language hosts that take it from the engine; the v3.79 host we can build
    # uses PULUMI_PYTHON_CMD instead (see hack/pulumi/environment.py). Both name .venv.
    project["runtime"]["options"] = {"virtualenv": str(python_executable().parents[1])}
    (work_dir / "Pulumi.yaml").write_text(yaml.safe_dump(project, sort_keys=False))
    return work_dir
