"""The operator needs no Pulumi at run time: it starts and reconciles from a virtualenv
where neither ``pulumi`` nor ``pulumi_kubernetes`` is installed.

The virtualenv is made offline (the sandbox has no package index): it sees every
package of the test environment through a ``.pth`` file, except the two Pulumi ones.
The import-layer contract (``lint-imports``) says the same statically.
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

from hack.localcluster import LocalCluster
from operator_runtime.runtime.kinds import RAY_CLUSTER
from tests.integration.raycluster.conftest import (  # noqa: F401 (fixtures)
    gc_probe,
    make_client,
    ray_crds,
    raycluster,
)
from tests.operatorprocess import OperatorProcess
from tests.waiting import wait_for

REPO_ROOT = Path(__file__).resolve().parents[2]
PULUMI_PREFIXES = ("pulumi", "__editable__")
"""The two Pulumi packages and their dist-info; and this project's editable hook (the
repository root goes on the path instead)."""


def virtualenv_without_pulumi(root: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "venv")], check=True)
    deps = root / "deps"
    deps.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if not entry.name.lower().startswith(PULUMI_PREFIXES):
            (deps / entry.name).symlink_to(entry)
    python = root / "venv" / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    # addsitedir also runs the .pth files of the packages (namespace packages and such).
    (Path(site) / "test-deps.pth").write_text(
        f"import site; site.addsitedir({str(deps)!r})\n{REPO_ROOT}\n"
    )
    return python


def test_the_operator_runs_without_pulumi(
    ray_crds: LocalCluster,  # noqa: F811
    namespace: str,
    tmp_path: Path,
) -> None:
    python = virtualenv_without_pulumi(tmp_path)
    # The components do need Pulumi: importing them fails here, which proves it is gone.
    for module in ("pulumi", "pulumi_kubernetes", "components"):
        probe = subprocess.run([str(python), "-c", f"import {module}"], capture_output=True)
        assert probe.returncode != 0, f"{module} must not be importable in this virtualenv"
    version = subprocess.run(
        [str(python), "-m", "operator_runtime", "--version"], capture_output=True, text=True
    )
    assert version.returncode == 0, version.stderr
    kube = make_client(ray_crds)
    with OperatorProcess(ray_crds.kubeconfig, namespace, python=python) as operator:
        kube.create(raycluster("no-pulumi", namespace, workers=1))
        wait_for(
            "the RayCluster ready",
            lambda: (kube.get(RAY_CLUSTER, "no-pulumi", namespace).get("status") or {}).get("state")
            == "ready",
            60, 0.5, explain=operator.tail,
        )  # fmt: skip
        assert "ModuleNotFoundError" not in operator.log()
