"""Build the Pulumi CLI, its language hosts and the Kubernetes provider from Go modules.

No release downloads are reachable where this project is built, so each binary comes from
the Go module proxy through a wrapper module (``gomod/<binary>``) whose go.sum pins it.
The result lands in ``<cache>/pulumi/<stamp>/bin`` with a ``VERSIONS`` stamp file; the
stamp covers the versions, the wrapper modules' go.mod/go.sum and this recipe, so a pin
change builds afresh and an unchanged pin reuses the binaries (a warm run costs a few
stats). The Go build cache is shared, so a rebuild only recompiles what changed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from hack import gobuild
from hack.pulumi import versions

FAMILY = "pulumi-engine"
GOMOD_DIR = Path(__file__).resolve().parent / "gomod"

BINARIES = (
    "pulumi",
    "pulumi-language-python",
    "pulumi-language-python-exec",
    "pulumi-language-nodejs",
    "pulumi-language-go",
    "pulumi-language-yaml",
    "pulumi-resource-kubernetes",
    "pulumi-gen-sdk",
)

SDK_VERSION_PACKAGE = "github.com/pulumi/pulumi/sdk/v3/go/common/version"
"""Where every binary built from pulumi/pulumi reads its version (set by -ldflags -X)."""

LANGUAGE_HOSTS = {
    "pulumi-language-python": (
        "github.com/pulumi/pulumi/sdk/v3/python/cmd/pulumi-language-python",
        SDK_VERSION_PACKAGE,
        versions.LANGUAGE_PYTHON,
    ),
    "pulumi-language-nodejs": (
        "github.com/pulumi/pulumi/sdk/v3/nodejs/cmd/pulumi-language-nodejs",
        SDK_VERSION_PACKAGE,
        versions.LANGUAGE_NODEJS,
    ),
    "pulumi-language-go": (
        "github.com/pulumi/pulumi/sdk/v3/go/pulumi-language-go",
        SDK_VERSION_PACKAGE,
        versions.LANGUAGE_GO,
    ),
    "pulumi-language-yaml": (
        "github.com/pulumi/pulumi-yaml/cmd/pulumi-language-yaml",
        "github.com/pulumi/pulumi-yaml/pkg/version",
        versions.LANGUAGE_YAML,
    ),
}
"""binary (= wrapper directory) -> (its main package, its version variable's package, version)."""

RECIPE_REVISION = 3
"""Bump when the build steps change in a way the go.mod/go.sum digest cannot see."""

GEN_SDK_MAIN = GOMOD_DIR / "pulumi-gen-sdk" / "main.go"
"""The one wrapper with source of ours: its text is part of the stamp."""

PROVIDER_COMMAND = "github.com/pulumi/pulumi-kubernetes/provider/v4/cmd/pulumi-resource-kubernetes"

Engine = gobuild.Built


def engine() -> Engine:
    """The engine for the current pins, built or not."""
    digest = gobuild.wrapper_digest(
        GOMOD_DIR, versions.WRAPPER_MODULES, f"recipe {RECIPE_REVISION}",
        GEN_SDK_MAIN.read_text(),
        *(f"{name} {module} {version}"
          for name, (module, version) in sorted(versions.WRAPPER_MODULES.items())),
    )  # fmt: skip
    stamp = (
        f"pulumi-{versions.PULUMI}-yaml-{versions.LANGUAGE_YAML}"
        f"-kubernetes-v{versions.KUBERNETES_PROVIDER}-{digest}"
    )
    return Engine(root=gobuild.cache_root() / "pulumi" / stamp, binaries=BINARIES)


def _run_go(what: str, arguments: list[str], wrapper: str) -> None:
    gobuild.run_go(FAMILY, what, arguments, GOMOD_DIR / wrapper)


def _module_dir(module: str, wrapper: str) -> Path:
    """Download (if needed) a module of a wrapper's build list and return its directory."""
    result = subprocess.run(
        [gobuild.go(), "mod", "download", "-json", module],
        cwd=GOMOD_DIR / wrapper,
        env=gobuild.go_env(),
        capture_output=True,
        text=True,
    )
    info = json.loads(result.stdout) if result.stdout.strip() else {}
    if result.returncode != 0 or "Dir" not in info:
        raise RuntimeError(
            f"go mod download {module} in {wrapper} failed: {info.get('Error') or result.stderr}"
        )
    return Path(info["Dir"])


def _version_ldflags(package: str, version: str) -> str:
    return f"-s -w -X {package}.Version={version}"


def _build_cli(out_dir: Path) -> None:
    _run_go(
        f"go build pulumi {versions.PULUMI}",
        [
            "build",
            "-trimpath",
            "-ldflags",
            _version_ldflags(SDK_VERSION_PACKAGE, versions.PULUMI),
            "-o",
            str(out_dir / "pulumi"),
            "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi",
        ],
        "pulumi",
    )


def _build_language_host(out_dir: Path, binary: str) -> None:
    package, version_package, version = LANGUAGE_HOSTS[binary]
    _run_go(
        f"go build {binary} {version}",
        [
            "build",
            "-trimpath",
            "-ldflags",
            _version_ldflags(version_package, version),
            "-o",
            str(out_dir / binary),
            package,
        ],
        binary,
    )


def _build_gen_sdk(out_dir: Path) -> None:
    # Our own main package: the wrapper module is the program (see its main.go for why
    # SDKs are not generated with `pulumi package gen-sdk`).
    _run_go(
        f"go build pulumi-gen-sdk (pkg/v3 {versions.PULUMI} codegen)",
        ["build", "-trimpath", "-ldflags", "-s -w", "-o", str(out_dir / "pulumi-gen-sdk"), "."],
        "pulumi-gen-sdk",
    )


def _copy_python_exec_script(out_dir: Path) -> None:
    # The Python host runs the program through this script, found beside its own
    # executable. It is a plain file of the sdk/v3 module (python/cmd/), taken from the
    # release of the Python SDK it drives; the CLI's wrapper has that sdk/v3 in its build list.
    sdk_dir = _module_dir(f"github.com/pulumi/pulumi/sdk/v3@{versions.EXEC_SCRIPT_SDK}", "pulumi")
    script = out_dir / "pulumi-language-python-exec"
    shutil.copyfile(sdk_dir / "python" / "cmd" / "pulumi-language-python-exec", script)
    script.chmod(0o755)


def _writable_copy(source: Path, target: Path) -> None:
    # Module cache files and directories are read-only; the copy must take new files.
    shutil.copytree(source, target)
    for directory, _, files in os.walk(target):
        Path(directory).chmod(0o755)
        for name in files:
            (Path(directory) / name).chmod(0o644)


def _write_provider_embeds(command_dir: Path) -> None:
    """Produce the files the provider's main embeds, beside it.

    Upstream makes them with `go generate` (cmd/pulumi-resource-kubernetes/generate.go)
    before building, so they are not in the module zip. Its whole job is: the shipped
    schema.json with ``version`` set, and terraform-mapping.json, both re-serialised
    compactly; the same is done here.
    """
    schema = json.loads((command_dir / "schema.json").read_text())
    schema["version"] = versions.KUBERNETES_PROVIDER
    mapping = json.loads((command_dir / "terraform-mapping.json").read_text())
    (command_dir / "schema-embed.json").write_text(json.dumps(schema, separators=(",", ":")))
    (command_dir / "terraform-mapping-embed.json").write_text(
        json.dumps(mapping, separators=(",", ":"))
    )


def _build_provider(out_dir: Path, scratch: Path) -> None:
    """Build the provider from a writable copy of its module, with the wrapper's pins.

    `go build -overlay` cannot add the embedded files (it refuses to overlay anything in
    the module cache), so the module is copied, completed, and put in place of the
    original by a replace in a scratch copy of the wrapper's go.mod (-modfile). Every other
    module keeps the version and go.sum hash the committed wrapper pins.
    """
    wrapper = "pulumi-resource-kubernetes"
    gobuild.progress(
        FAMILY, f"preparing the kubernetes provider v{versions.KUBERNETES_PROVIDER} source"
    )
    module = "github.com/pulumi/pulumi-kubernetes/provider/v4"
    source = scratch / "provider"
    _writable_copy(
        _module_dir(f"{module}@{versions.KUBERNETES_PROVIDER_MODULE_VERSION}", wrapper), source
    )
    _write_provider_embeds(source / "cmd" / "pulumi-resource-kubernetes")
    mod_file = scratch / "go.mod"
    go_mod = (GOMOD_DIR / wrapper / "go.mod").read_text()
    mod_file.write_text(f"{go_mod}\nreplace {module} => {source}\n")
    shutil.copyfile(GOMOD_DIR / wrapper / "go.sum", scratch / "go.sum")
    _run_go(
        f"go build pulumi-resource-kubernetes v{versions.KUBERNETES_PROVIDER}",
        [
            "build",
            "-trimpath",
            f"-modfile={mod_file}",
            "-ldflags",
            _version_ldflags(f"{module}/pkg/version", versions.KUBERNETES_PROVIDER),
            "-o",
            str(out_dir / "pulumi-resource-kubernetes"),
            PROVIDER_COMMAND,
        ],
        wrapper,
    )


def _stamp_text() -> str:
    lines = [f"{module} {version}" for module, version in sorted(versions.WRAPPER_MODULES.values())]
    lines.append(
        f"pulumi-language-python-exec github.com/pulumi/pulumi/sdk/v3 {versions.EXEC_SCRIPT_SDK}"
    )
    lines.append(
        "pulumi-resource-kubernetes github.com/pulumi/pulumi/pkg/v3 "
        f"{versions.KUBERNETES_PROVIDER_PULUMI_SDK}"
    )
    lines += [f"pypi {name}=={version}" for name, version in sorted(versions.PYPI_PINS.items())]
    go_version = subprocess.run([gobuild.go(), "env", "GOVERSION"], capture_output=True, text=True)
    lines.append(f"go {go_version.stdout.strip()}")
    return "".join(f"{line}\n" for line in lines)


def _build(out_dir: Path) -> None:
    _build_cli(out_dir)
    for binary in LANGUAGE_HOSTS:
        _build_language_host(out_dir, binary)
    _copy_python_exec_script(out_dir)
    _build_gen_sdk(out_dir)
    with tempfile.TemporaryDirectory(prefix="pulumi-provider-") as scratch:
        _build_provider(out_dir, scratch=Path(scratch))


def ensure_built(*, force: bool = False) -> Engine:
    """Build the engine unless the cache already holds this stamp; return it."""
    return gobuild.ensure(
        engine(), family=FAMILY, build=_build, versions_text=_stamp_text(), force=force,
        expected="10-30 minutes", make_target="pulumi-engine",
    )  # fmt: skip
