"""The operator image ``make image`` built (hack/image): reproducible, configured as the
Deployment runs it, distroless, able to import the operator, and pushable.

Offline: the build's inputs (locked .debs, wheels, the Go tool) are in the cache
``make image`` filled; these tests assemble again from it and push to a registry on
loopback. Running the operator from the image as a pod would is
tests/integration/image's run-from-image test.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from components.operator.deployment import OPERATOR_COMMAND
from hack.image import ImageBuild, built, config_document, root_filesystem
from hack.image import build as image_build
from hack.image.oci import source_date
from tests.integration.image.rebuild import assert_builds_again_the_same
from tests.integration.image.records import record_mismatches
from tests.integration.image.registry import loopback_registry

REPO_ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def image() -> ImageBuild:
    return built()


@pytest.fixture(scope="module")
def config(image: ImageBuild) -> dict[str, Any]:
    return config_document(image.layout)


@pytest.fixture(scope="module")
def rootfs(image: ImageBuild) -> Path:
    return root_filesystem(image)


def test_assembling_again_from_the_cached_inputs_gives_the_same_digest(
    image: ImageBuild, tmp_path: Path
) -> None:
    assert_builds_again_the_same(
        image, image_build.build, tmp_path / "again", "HEAD moved since `make image`?"
    )


def test_every_installed_files_record_is_borne_out_by_the_image(rootfs: Path) -> None:
    # pip's rows for the console scripts the build removes hashed a shebang naming this
    # machine's interpreter, so the digest changed with the checkout's path.
    site = rootfs / "usr/lib/python3/dist-packages"
    assert len(list(site.glob("*.dist-info/RECORD"))) > 20
    assert record_mismatches(site) == []


def test_the_config_runs_the_deployments_command_as_nonroot(config: dict[str, Any]) -> None:
    settings = config["config"]
    # The Deployment's command is OPERATOR_COMMAND (tests/components/test_operator.py).
    assert settings["Entrypoint"] == list(OPERATOR_COMMAND)
    # A Cmd would be appended to the entrypoint by `docker run`, but not by the Deployment.
    assert "Cmd" not in settings or not settings["Cmd"]
    # Numeric, so the kubelet can check runAsNonRoot.
    assert settings["User"] == "65532:65532"
    assert settings["WorkingDir"] == "/home/nonroot"
    env = dict(entry.split("=", 1) for entry in settings["Env"])
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"
    assert env["PYTHONUNBUFFERED"] == "1"
    labels = settings["Labels"]
    assert labels["org.opencontainers.image.version"] == importlib.metadata.version("pulumi-ray")
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert labels["org.opencontainers.image.revision"] == head, "HEAD moved: run `make image`"
    assert config["created"] == source_date().isoformat().replace("+00:00", "Z")
    assert config["architecture"] == "amd64" and config["os"] == "linux"


def test_the_index_holds_one_image_per_platform(image: ImageBuild) -> None:
    assert [p.arch for p in image.platforms] == ["amd64", "arm64"]
    assert len({p.digest for p in image.platforms}) == 2


def test_the_root_filesystem_has_python_and_no_shell_or_package_manager(rootfs: Path) -> None:
    for absent in (
        "bin/sh", "usr/bin/sh", "bin/bash", "usr/bin/bash", "bin/dash", "usr/bin/dpkg",
        "usr/bin/apt", "usr/bin/apt-get", "var/lib/dpkg/status", "usr/bin/perl", "usr/bin/openssl",
        "usr/share/doc", "usr/share/man",
    ):  # fmt: skip
        assert not os.path.lexists(rootfs / absent), f"/{absent} is in the image"
    assert (rootfs / "usr/bin/python3.11").is_file()
    assert os.readlink(rootfs / "usr/bin" / OPERATOR_COMMAND[0]) == "python3.11"
    bundle = (rootfs / "etc/ssl/certs/ca-certificates.crt").read_text()
    assert bundle.count("BEGIN CERTIFICATE") > 100
    assert (rootfs / "usr/share/zoneinfo/Etc/UTC").read_bytes().startswith(b"TZif")
    assert (rootfs / "tmp").stat().st_mode & 0o7777 == 0o1777
    assert "nonroot:x:65532:65532:" in (rootfs / "etc/passwd").read_text()
    assert (rootfs / "home/nonroot").stat().st_uid == 65532


def test_every_module_has_bytecode_since_the_pods_root_is_read_only(rootfs: Path) -> None:
    missing = [
        source.relative_to(rootfs).as_posix()
        for directory in ("usr/lib/python3.11", "usr/lib/python3/dist-packages")
        for source in (rootfs / directory).rglob("*.py")
        if not (source.parent / "__pycache__" / f"{source.stem}.cpython-311.pyc").is_file()
    ]
    assert missing == [], f"{len(missing)} modules without bytecode, e.g. {missing[:5]}"


def test_the_operator_imports_in_the_root_as_nonroot(rootfs: Path, config: dict[str, Any]) -> None:
    program = (
        "import sys, operator_runtime.cli, operator_runtime.controllers, ssl, zoneinfo\n"
        "ssl.create_default_context()\n"
        "zoneinfo.ZoneInfo('America/New_York')\n"
        "print(sys.version_info[:2])\n"
    )
    completed = subprocess.run(
        [shutil.which("chroot") or "chroot", "--userspec=65532:65532", str(rootfs),
         "/usr/bin/python3.11", "-c", program],
        env=dict(entry.split("=", 1) for entry in config["config"]["Env"]),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "(3, 11)"


@pytest.fixture
def registry() -> Iterator[str]:
    with loopback_registry() as address:
        yield address


def test_push_then_pull_by_digest_gives_the_same_image(image: ImageBuild, registry: str) -> None:
    reference = f"{registry}/team/ray-operator:0.1.0"
    pushed = subprocess.run(
        [sys.executable, "-m", "hack.image", "push", reference],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert pushed.returncode == 0, pushed.stderr
    assert pushed.stdout.strip() == f"{registry}/team/ray-operator@{image.digest}"
    pulled = subprocess.run(
        [str(image_build.ocitool()), "pull", pushed.stdout.strip()],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert pulled.returncode == 0, pulled.stderr
    assert pulled.stdout.strip() == image.digest
    # Each platform's SBOM came along as a referrer of that platform's image.
    repository = pushed.stdout.strip().rsplit("@", 1)[0]
    for platform in image.platforms:
        listed = subprocess.run(
            [str(image_build.ocitool()), "referrers", f"{repository}@{platform.digest}"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert listed.returncode == 0, listed.stderr
        (referrer,) = json.loads(listed.stdout)["manifests"]
        assert referrer["artifactType"] == "application/spdx+json"
