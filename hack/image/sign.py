"""A cosign signature over the operator image's index digest, with a key the release
holds, and its verification as a user runs it (``cosign verify --key``).

What is signed is the digest ``push`` printed (``<registry>/<repo>@sha256:...``), never
a tag, which can be moved after signing. One signature covers both platforms: the index
names each platform's manifest by digest, and each manifest its config and layers.

The format is sigstore's: cosign 3 signs an in-toto statement whose subject is the
digest, in a DSSE envelope inside a sigstore bundle, and attaches the bundle to the
index in the registry as an OCI referrer.

Offline, and said so: no transparency log (Rekor), no certificate authority (Fulcio),
no timestamp authority, no signing config or trust root from sigstore's TUF repository.
The key alone is the trust, as with a GPG-signed checksum file. cosign is told so on
both sides (``SIGN_FLAGS``, ``VERIFY_FLAGS``; cosign 3 marks ``--tlog-upload`` deprecated
in favour of a signing config file without a log, which would also want a trust root
file: the two flags say the same with nothing to keep beside them). Its TUF directory is
an empty one of the call's and its TUF mirror a closed port on loopback, so that a TUF
download, should a cosign version start one, fails on this machine instead of leaving
it. The image test traces cosign's connections to prove that its only peer is the
registry.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

from hack.image.tools import PinnedTool

__all__ = [
    "COSIGN",
    "SIGNATURE_ARTIFACT_TYPE",
    "SigningError",
    "VerificationFailed",
    "digest_reference",
    "generate_key_pair",
    "sign",
    "verify",
]

COSIGN = PinnedTool(
    name="cosign",
    wrapper=Path(__file__).resolve().parent / "cosignmod",
    module="github.com/sigstore/cosign/v3",
    version="v3.1.3",
    package="github.com/sigstore/cosign/v3/cmd/cosign",
    recipe_revision=1,
    expected="some twenty minutes on two loaded cores, cold",
)
SIGNATURE_ARTIFACT_TYPE = "application/vnd.dev.sigstore.bundle.v0.3+json"
"""The artifact type of the referrer cosign attaches: a sigstore bundle."""
SIGN_FLAGS = ("--use-signing-config=false", "--tlog-upload=false", "--yes")
"""No signing config from TUF, no Rekor entry, no prompt about one."""
VERIFY_FLAGS = ("--insecure-ignore-tlog=true",)
"""Trust the key alone: there is no Rekor entry to check (``insecure`` is cosign's word
for a signature no public log has seen)."""
CLOSED_LOOPBACK_URL = "http://127.0.0.1:1"
"""Where a TUF download would go: nothing listens there, so it fails at once, here."""
COSIGN_SECONDS = 300
DIGEST_REFERENCE = re.compile(r"^(?P<repository>[^@\s]+)@(?P<digest>sha256:[0-9a-f]{64})$")


class SigningError(RuntimeError):
    """cosign could not sign (or generate a key): a bad key, password or registry."""


class VerificationFailed(RuntimeError):
    """cosign found no signature that the key verifies over that digest."""


def digest_reference(reference: str) -> str:
    """``reference`` if it pins a digest; a tag is refused, since it can be moved."""
    if DIGEST_REFERENCE.match(reference) is None:
        raise SigningError(
            f"{reference!r} does not name a digest: sign "
            "<registry>/<repo>@sha256:<index digest>, as `python -m hack.image push` prints it"
        )
    return reference


def _environment(workdir: Path) -> dict[str, str]:
    """The caller's environment (registry credentials, COSIGN_PASSWORD) with sigstore's
    TUF repository out of reach."""
    tuf_root = workdir / "tuf"
    tuf_root.mkdir(parents=True, exist_ok=True)
    return {**os.environ, "TUF_ROOT": str(tuf_root), "TUF_MIRROR": CLOSED_LOOPBACK_URL}


def _run(
    arguments: list[str], workdir: Path, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """cosign ``arguments`` in ``cwd`` (the caller's by default: a key path given
    relative to it still names the key)."""
    return subprocess.run(
        [str(COSIGN.binary()), *arguments], cwd=cwd, env=_environment(workdir),
        capture_output=True, text=True, timeout=COSIGN_SECONDS,
    )  # fmt: skip


def generate_key_pair(directory: Path) -> tuple[Path, Path]:
    """``cosign.key`` (encrypted with $COSIGN_PASSWORD) and ``cosign.pub`` in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    completed = _run(["generate-key-pair"], directory, cwd=directory)
    if completed.returncode != 0:
        raise SigningError(f"cosign generate-key-pair failed: {completed.stderr[-2000:]}")
    return directory / "cosign.key", directory / "cosign.pub"


def sign(reference: str, key: str, workdir: Path) -> None:
    """Sign ``reference``'s digest with ``key`` (a cosign key file, or a KMS URI cosign
    knows) and attach the signature to it in its registry."""
    completed = _run(["sign", "--key", key, *SIGN_FLAGS, digest_reference(reference)], workdir)
    if completed.returncode != 0:
        raise SigningError(f"cosign sign {reference} failed: {completed.stderr[-2000:]}")


def verify(reference: str, public_key: str, workdir: Path) -> list[dict[str, Any]]:
    """What cosign verified of ``reference`` with ``public_key``: one entry per
    signature, each naming the digest it covers. Raises ``VerificationFailed`` when none
    verifies."""
    completed = _run(
        ["verify", "--key", public_key, *VERIFY_FLAGS, "--output", "json", reference], workdir
    )
    if completed.returncode != 0:
        raise VerificationFailed(f"cosign verify {reference}: {completed.stderr.strip()[-2000:]}")
    verified: list[dict[str, Any]] = json.loads(completed.stdout)
    return verified
