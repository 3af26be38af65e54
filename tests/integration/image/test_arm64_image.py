"""The operator image's linux/arm64 platform, proven on this amd64 machine under
user-mode emulation (hack/image/emulator.py: Debian's qemu-aarch64-static, called
explicitly, no binfmt_misc registration).

What this proves: the arm64 root filesystem's own interpreter, loader and libraries
(libssl, libffi, the aarch64 wheels' extension modules) load and import the operator,
build a TLS context from the image's CA bundle and read its zoneinfo; and the bytecode
the build machine compiled for it is, byte for byte, what that interpreter compiles.
What it does not: the emulator is not an arm64 CPU or kernel (no 64 KiB pages, no
seccomp, no real memory ordering), and qemu-user falls back to this machine's files for
a path missing under the prefix, so each file the image must have is also checked to be
in the image, and every mapped library to come from it.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from hack.image import ImageBuild, built, config_document, root_filesystem
from hack.image.emulator import emulator

EMULATED_SECONDS = 600
"""An emulated interpreter runs some 10-20 times slower than a native one."""
COMPARED_TREES = (
    "usr/lib/python3/dist-packages/operator_runtime",
    "usr/lib/python3/dist-packages/pydantic",
    "usr/lib/python3.11/asyncio",
    "usr/lib/python3.11/email",
)
"""Trees whose every module is compiled again under emulation and compared: the
operator, a dependency and some of the standard library (all three layers)."""


@pytest.fixture(scope="module")
def image() -> ImageBuild:
    return built()


@pytest.fixture(scope="module")
def rootfs(image: ImageBuild) -> Path:
    return root_filesystem(image, "arm64")


def _emulated(rootfs: Path, program: str, env: dict[str, str]) -> str:
    completed = subprocess.run(
        [str(emulator()), "-L", str(rootfs), str(rootfs / "usr/bin/python3.11"), "-c", program],
        env=env, capture_output=True, text=True, timeout=EMULATED_SECONDS,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-3000:]
    return completed.stdout


def _image_env(layout: Path) -> dict[str, str]:
    config: dict[str, Any] = config_document(layout, "arm64")
    return dict(entry.split("=", 1) for entry in config["config"]["Env"])


def test_the_arm64_config_names_its_platform(image: ImageBuild) -> None:
    config = config_document(image.layout, "arm64")
    assert (config["os"], config["architecture"]) == ("linux", "arm64")
    assert config["config"] == config_document(image.layout, "amd64")["config"]


def test_the_arm64_interpreter_imports_the_operator_with_tls_and_zoneinfo(
    image: ImageBuild, rootfs: Path
) -> None:
    for needed in ("etc/ssl/certs/ca-certificates.crt", "usr/share/zoneinfo/America/New_York"):
        assert (rootfs / needed).is_file(), f"/{needed} is not in the arm64 image"
    program = (
        "import json, platform, sys, operator_runtime.cli, operator_runtime.controllers\n"
        "import pydantic_core, ssl, zoneinfo\n"
        "context = ssl.create_default_context()\n"
        "zone = zoneinfo.ZoneInfo('America/New_York')\n"
        "libraries = sorted({line.split()[-1] for line in open('/proc/self/maps')\n"
        "                    if '.so' in line.split()[-1]})\n"
        "print(json.dumps({'machine': platform.machine(), 'prefix': sys.prefix,\n"
        "  'certificates': context.cert_store_stats()['x509_ca'], 'zone': str(zone),\n"
        "  'openssl': ssl.OPENSSL_VERSION, 'libraries': libraries}))\n"
    )
    facts = json.loads(_emulated(rootfs, program, _image_env(image.layout)))
    assert facts["machine"] == "aarch64"
    assert facts["prefix"] == str(rootfs / "usr")
    assert facts["certificates"] > 100
    assert facts["zone"] == "America/New_York"
    assert facts["openssl"].startswith("OpenSSL 3.0.")
    outside = [lib for lib in facts["libraries"] if not lib.startswith(f"{rootfs}/")]
    assert outside == [], f"libraries loaded from outside the arm64 image: {outside}"
    assert any("pydantic_core" in lib and "aarch64" in lib for lib in facts["libraries"])


def test_the_shipped_bytecode_is_what_the_arm64_interpreter_compiles(
    rootfs: Path, tmp_path: Path
) -> None:
    sources = sorted(
        source.relative_to(rootfs).as_posix()
        for tree in COMPARED_TREES
        for source in (rootfs / tree).rglob("*.py")
    )
    assert len(sources) > 200, sources[:5]
    # As hack/image/python.compile_bytecode does: unchecked-hash pycs naming the in-image
    # path, under a fixed hash seed; written outside the image.
    program = (
        "import json, pathlib, py_compile, sys\n"
        "rootfs, out, sources = sys.argv[1], pathlib.Path(sys.argv[2]), json.loads(sys.argv[3])\n"
        "for index, source in enumerate(sources):\n"
        "    py_compile.compile(f'{rootfs}/{source}', cfile=str(out / f'{index}.pyc'),\n"
        "        dfile='/' + source, doraise=True,\n"
        "        invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)\n"
    )
    completed = subprocess.run(
        [str(emulator()), "-L", str(rootfs), str(rootfs / "usr/bin/python3.11"), "-c", program,
         str(rootfs), str(tmp_path), json.dumps(sources)],
        env={"PYTHONHASHSEED": "0", "LANG": "C.UTF-8"},
        capture_output=True, text=True, timeout=EMULATED_SECONDS,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-3000:]

    def shipped(source: str) -> bytes:
        pyc = Path(source).parent / "__pycache__" / f"{Path(source).stem}.cpython-311.pyc"
        return (rootfs / pyc).read_bytes()

    differing = [
        source
        for index, source in enumerate(sources)
        if (tmp_path / f"{index}.pyc").read_bytes() != shipped(source)
    ]
    assert differing == [], f"{len(differing)} of {len(sources)} differ, e.g. {differing[:5]}"
