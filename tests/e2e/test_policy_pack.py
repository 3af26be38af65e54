"""The policy pack (``policy/``) through the real engine: ``pulumi preview --policy-pack``
against the local control plane, for a bad RayCluster applied through ``yaml/v2`` and for
our ``RayCluster`` component with an image the platform does not allow.

The pack runs in its own virtualenv (``make policy-venv``: pulumi-policy pins protobuf 5);
without it these tests fail and say so. How the pack is started is in
``hack/pulumi/policypack.py``.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from hack.localcluster import LocalCluster
from hack.pulumi.policypack import launcher
from tests.e2e.conftest import PulumiEngine
from tests.e2e.stacks import crd_files, program_copy

pytestmark = pytest.mark.timeout(900)

REPO_ROOT = Path(__file__).resolve().parents[2]
PACK_DIR = REPO_ROOT / "policy"
PACK_PYTHON = REPO_ROOT / ".venv-policy" / "bin" / "python"
PROGRAM = Path(__file__).resolve().parent / "policy_program"

PACK_CONFIG = {
    "ray-image-allow-list": {"allowedPrefixes": ["rayproject/ray:"]},
    "ray-gpu-caps": {"maxPerGroup": 8, "maxPerCluster": 16},
}

BAD_CLUSTER = """\
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: handwritten
  namespace: {namespace}
spec:
  headGroupSpec:
    rayStartParams: {{}}
    template:
      spec:
        containers:
          - name: ray-head
            image: rayproject/ray:2.52.0
            resources: {{limits: {{cpu: "1", memory: 2Gi}}}}
  workerGroupSpecs:
    - groupName: workers
      replicsa: 1
      minReplicas: 3
      maxReplicas: 2
      rayStartParams: {{}}
      template:
        spec:
          containers:
            - name: ray-worker
              image: rayproject/ray:2.52.0
              resources: {{limits: {{cpu: "1", memory: 2Gi}}}}
"""


@pytest.fixture(scope="module")
def ray_crds(local_cluster: LocalCluster) -> Iterator[None]:
    local_cluster.apply_crds(*crd_files())
    yield


@pytest.fixture(scope="module")
def pack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not PACK_PYTHON.exists():
        raise AssertionError(f"the policy pack's virtualenv is missing: run `make policy-venv` "
                             f"(expected {PACK_PYTHON})")  # fmt: skip
    return launcher(PACK_DIR, PACK_PYTHON, tmp_path_factory.mktemp("policy-pack"))


def _preview(
    engine: PulumiEngine, cluster: LocalCluster, pack: Path, tmp_path: Path, config: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    work_dir = program_copy(tmp_path, source=PROGRAM)
    env = {**engine.env, "KUBECONFIG": str(cluster.kubeconfig)}
    pulumi = str(engine.engine.path("pulumi"))
    stack = f"policy-{uuid.uuid4().hex[:8]}"
    subprocess.run([pulumi, "stack", "init", stack], cwd=work_dir, env=env, check=True)
    for key, value in {"kubeconfig": str(cluster.kubeconfig), **config}.items():
        subprocess.run([pulumi, "config", "set", key, value], cwd=work_dir, env=env, check=True)
    pack_config = tmp_path / "policy-config.json"
    pack_config.write_text(json.dumps(PACK_CONFIG))
    return subprocess.run(
        [pulumi, "preview", "--color", "never", "--policy-pack", str(pack),
         "--policy-pack-config", str(pack_config)],
        cwd=work_dir, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def test_yaml_v2_cluster_fails_the_preview_with_our_messages(
    pulumi_engine: PulumiEngine,
    local_cluster: LocalCluster,
    ray_crds: None,
    pack: Path,
    tmp_path: Path,
) -> None:
    namespace = f"policy-{uuid.uuid4().hex[:6]}"
    manifest = tmp_path / "cluster.yaml"
    manifest.write_text(BAD_CLUSTER.format(namespace=namespace))
    result = _preview(
        pulumi_engine, local_cluster, pack, tmp_path,
        {"source": "yaml", "manifest": str(manifest), "namespace": namespace},
    )  # fmt: skip
    output = result.stdout + result.stderr
    assert result.returncode != 0, output[-4000:]
    assert "mandatory" in output and "ray-api-validation" in output, output[-4000:]
    prefix = f"RayCluster {namespace}/handwritten: spec.workerGroupSpecs[0]"
    assert f"{prefix}.replicsa:" in output and "[FIELD_UNKNOWN]" in output, output[-4000:]
    assert "[RAYCLUSTER_MIN_GT_MAX]" in output or "[FIELD_" in output, output[-4000:]


def test_component_cluster_passes_and_an_org_rule_fails_it(
    pulumi_engine: PulumiEngine,
    local_cluster: LocalCluster,
    ray_crds: None,
    pack: Path,
    tmp_path: Path,
) -> None:
    namespace = f"policy-{uuid.uuid4().hex[:6]}"
    allowed = _preview(
        pulumi_engine, local_cluster, pack, tmp_path / "allowed",
        {"source": "component", "image": "rayproject/ray:2.52.0", "namespace": namespace},
    )  # fmt: skip
    assert allowed.returncode == 0, (allowed.stdout + allowed.stderr)[-4000:]
    refused = _preview(
        pulumi_engine, local_cluster, pack, tmp_path / "refused",
        {"source": "component", "image": "docker.io/library/ray:latest", "namespace": namespace},
    )  # fmt: skip
    output = refused.stdout + refused.stderr
    assert refused.returncode != 0, output[-4000:]
    assert "ray-image-allow-list" in output, output[-4000:]
    assert "image 'docker.io/library/ray:latest' is not from an allowed registry" in output
    assert "[POLICY_IMAGE_NOT_ALLOWED]" in output, output[-4000:]
    assert "ray-api-validation" not in output.split("Policies:")[-1], output[-4000:]
