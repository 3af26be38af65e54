"""Gang schedulers built from their Go modules, for the gang-scheduling tests (issue 30).

Each is pinned by a wrapper module ``gomod/<name>/`` whose go.mod repeats the scheduler's
own ``replace`` block (a dependency's replaces do not apply to the module that requires
it). A build puts the scheduler binary and the CRDs it reads in
``<cache>/<name>/<stamp>/bin/``.

What builds here (2026-11, Go 1.26, the Go module proxy this machine reaches):

- ``sigs.k8s.io/scheduler-plugins`` v0.34.7 ``cmd/scheduler`` (kube-scheduler with the
  Coscheduling plugin), its Kubernetes staging modules at v0.34.4 (the proxy refuses
  ``k8s.io/cluster-bootstrap`` v0.34.7, which its own go.mod names): builds and runs
  against the local control plane (``tests/integration/batch/test_gang_schedulers.py``).
- ``volcano.sh/volcano`` v1.14.1 ``cmd/scheduler``, its ``volcano.sh/apis`` at the
  published v1.14.0 (its go.mod points at a staging directory; the proxy has no apis
  v1.14.1): builds and runs there too, with no Volcano controller or admission webhook.

Tried and not pinned (2026-11-26), so YuniKorn and KAI are held to KubeRay's output side
by side instead of run:

- ``github.com/apache/yunikorn-k8shim`` v1.9.0 ``pkg/cmd/shim``: the proxy's checksum
  database has no entry (``verifying go.mod: ... sum.golang.org/lookup/...
  yunikorn-k8shim@v1.9.0: 404 Not Found``) and it refuses the ``yunikorn-core``
  v1.9.0-1 and ``yunikorn-scheduler-interface`` v1.9.0-0 its go.mod names. It builds
  with ``GONOSUMDB=github.com/apache`` and both swapped to v1.9.0: not upstream's build,
  and unverified sums.
- KAI: ``github.com/kai-scheduler/KAI-scheduler`` (v0.13.4, v0.16.8, v0.17.0) and the
  older ``github.com/NVIDIA/KAI-scheduler`` path (v0.10.5, v0.12.23, v0.20.0) are refused
  with 403; only NVIDIA's v0.20.1 is served, a version its authors retracted. It builds
  (scheduler, binder and podgrouper are three processes).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from hack import gobuild

GOMOD_DIR: Final = Path(__file__).resolve().parent / "gomod"
RECIPE_REVISION: Final = 2
"""Bump when the build steps change in a way the wrapper digest cannot see."""
BINARY: Final = "scheduler"


@dataclass(frozen=True)
class Scheduler:
    """One scheduler: its module, version, command package and CRD files in the module."""

    name: str
    module: str
    version: str
    command: str
    crds: tuple[str, ...]

    @property
    def crd_names(self) -> tuple[str, ...]:
        return tuple(Path(path).name for path in self.crds)


SCHEDULERS: Final = {
    "scheduler-plugins": Scheduler(
        name="scheduler-plugins",
        module="sigs.k8s.io/scheduler-plugins",
        version="v0.34.7",
        command="sigs.k8s.io/scheduler-plugins/cmd/scheduler",
        crds=("config/crd/bases/scheduling.x-k8s.io_podgroups.yaml",),
    ),
    "volcano": Scheduler(
        name="volcano",
        module="volcano.sh/volcano",
        version="v1.14.1",
        command="volcano.sh/volcano/cmd/scheduler",
        # PodGroups and Queues, and the kinds its informers list at start: without them
        # it never syncs its cache and schedules nothing.
        crds=tuple(
            f"config/crd/volcano/bases/{name}.yaml"
            for name in (
                "scheduling.volcano.sh_podgroups",
                "scheduling.volcano.sh_queues",
                "nodeinfo.volcano.sh_numatopologies",
                "topology.volcano.sh_hypernodes",
                "shard.volcano.sh_nodeshards",
            )
        ),
    ),
}


def _built(scheduler: Scheduler) -> gobuild.Built:
    digest = gobuild.wrapper_digest(GOMOD_DIR, [scheduler.name], f"recipe {RECIPE_REVISION}")
    return gobuild.Built(
        root=gobuild.cache_root() / scheduler.name / f"{scheduler.version}-{digest}",
        binaries=(BINARY, *scheduler.crd_names),
    )


def _module_dir(scheduler: Scheduler) -> Path:
    found = subprocess.run(
        [gobuild.go(), "mod", "download", "-json", f"{scheduler.module}@{scheduler.version}"],
        cwd=GOMOD_DIR / scheduler.name, env=gobuild.go_env(), capture_output=True, text=True,
    )  # fmt: skip
    if found.returncode != 0:
        raise RuntimeError(f"go mod download {scheduler.module} failed: {found.stderr.strip()}")
    return Path(json.loads(found.stdout)["Dir"])


def ensure_built(name: str, *, force: bool = False) -> gobuild.Built:
    """Build (or reuse) one scheduler and copy its CRDs beside it."""
    scheduler = SCHEDULERS[name]

    def build(bin_dir: Path) -> None:
        gobuild.run_go(
            name,
            f"go build {name} {scheduler.version}",
            ["build", "-trimpath", "-ldflags", "-s -w", "-o", str(bin_dir / BINARY),
             scheduler.command],
            GOMOD_DIR / name,
        )  # fmt: skip
        source = _module_dir(scheduler)
        for path in scheduler.crds:
            shutil.copyfile(source / path, bin_dir / Path(path).name)

    return gobuild.ensure(
        _built(scheduler),
        family=name,
        build=build,
        versions_text=f"{scheduler.module} {scheduler.version}\n",
        force=force,
        make_target="gang-schedulers",
    )
