"""The operator image signed as a release signs it (hack/image/sign.py): cosign's
signature over the pushed index digest, with a key pair made here, verified by cosign as
a user verifies it; offline (no transparency log, no TUF, no peer but the loopback
registry, inside the sandbox's network namespace).

A verification is worth what its failures are, so beside the one that passes: another
key fails, a digest the release did not sign fails (a platform's own manifest; an index
pushed over the signed one's tag) and a signature whose bytes were changed fails.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hack.image import ImageBuild, built, oci
from hack.image.sign import (
    SIGNATURE_ARTIFACT_TYPE,
    SigningError,
    VerificationFailed,
    generate_key_pair,
    sign,
    verify,
)
from tests.integration.image.registry import loopback_registry

REPO_ROOT = Path(__file__).resolve().parents[3]
PASSWORD = "a password for this test's throwaway keys"
COMMAND_SECONDS = 300
MANIFEST_TYPE = "application/vnd.oci.image.manifest.v1+json"
INDEX_TYPE = "application/vnd.oci.image.index.v1+json"
INET_PEER = re.compile(
    r"sa_family=AF_INET6?, sin6?_port=htons\((?P<port>\d+)\).*?"
    r"(?:inet_addr\(|inet_pton\(AF_INET6, )\"(?P<address>[^\"]+)\""
)
OTHER_PEER = re.compile(r"sa_family=(?!AF_INET6?,)(?P<family>\w+)")


@dataclass(frozen=True)
class KeyPair:
    private: Path
    public: Path


@dataclass(frozen=True)
class Signed:
    registry: str
    repository: str
    """``<registry>/<repo>``, where the index was pushed and signed."""
    reference: str
    """``<repository>@<index digest>``, as ``push`` printed it."""
    sign_peers: frozenset[str]
    """Every address the signing command and its children connected to."""


@pytest.fixture(scope="module")
def image() -> ImageBuild:
    return built()


@pytest.fixture(scope="module", autouse=True)
def password() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("COSIGN_PASSWORD", PASSWORD)
        yield


@pytest.fixture(scope="module")
def release_key(tmp_path_factory: pytest.TempPathFactory) -> KeyPair:
    return KeyPair(*generate_key_pair(tmp_path_factory.mktemp("release-key")))


@pytest.fixture(scope="module")
def other_key(tmp_path_factory: pytest.TempPathFactory) -> KeyPair:
    return KeyPair(*generate_key_pair(tmp_path_factory.mktemp("other-key")))


def _hack_image(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hack.image", *arguments],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=COMMAND_SECONDS,
    )  # fmt: skip


def _traced(
    trace: Path, *arguments: str
) -> tuple[subprocess.CompletedProcess[str], frozenset[str]]:
    """``python -m hack.image ARGUMENTS`` under strace, and every peer that it or a child
    (cosign) connected to: ``host:port``, or the socket family for any other kind."""
    strace = shutil.which("strace")
    assert strace is not None, "strace (Debian's, on every machine of this kind) is not on PATH"
    completed = subprocess.run(
        [strace, "--follow-forks", "--trace=connect", f"--output={trace}",
         sys.executable, "-m", "hack.image", *arguments],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=COMMAND_SECONDS,
    )  # fmt: skip
    calls = [line for line in trace.read_text().splitlines() if "connect(" in line]
    peers = {f"{m['address']}:{m['port']}" for c in calls if (m := INET_PEER.search(c))}
    peers |= {m["family"] for c in calls if (m := OTHER_PEER.search(c))}
    return completed, frozenset(peers)


def _push(layout: Path | None, reference: str) -> str:
    """Push ``layout`` (the built image's by default) to ``reference``; what was printed."""
    if layout is None:
        pushed = _hack_image("push", reference)
    else:
        pushed = subprocess.run(
            [str(oci.ocitool()), "push", "--layout", str(layout), reference],
            capture_output=True, text=True, timeout=COMMAND_SECONDS,
        )  # fmt: skip
    assert pushed.returncode == 0, pushed.stderr
    return pushed.stdout.strip()


def _push_and_sign(registry: str, repository: str, key: KeyPair, trace: Path) -> Signed:
    """Push and sign as docs/releasing.md tells a release to, through the same commands."""
    pushed = _push(None, f"{registry}/{repository}:0.1.0")
    signing, peers = _traced(trace, "sign", pushed, "--key", str(key.private))
    assert signing.returncode == 0, signing.stderr
    return Signed(registry, f"{registry}/{repository}", pushed, peers)


@pytest.fixture(scope="module")
def registry() -> Iterator[str]:
    with loopback_registry() as address:
        yield address


@pytest.fixture(scope="module")
def signed(registry: str, release_key: KeyPair, tmp_path_factory: pytest.TempPathFactory) -> Signed:
    trace = tmp_path_factory.mktemp("sign") / "connect.trace"
    return _push_and_sign(registry, "team/ray-operator", release_key, trace)


def test_the_release_key_verifies_the_index_digest(
    image: ImageBuild, signed: Signed, release_key: KeyPair, tmp_path: Path
) -> None:
    assert signed.reference == f"{signed.repository}@{image.digest}"
    (verified,) = verify(signed.reference, str(release_key.public), tmp_path)
    assert verified["critical"]["image"]["docker-manifest-digest"] == image.digest
    # The command a release runs to check its own signature before announcing it.
    checked, peers = _traced(
        tmp_path / "connect.trace", "verify", signed.reference, "--key", str(release_key.public)
    )
    assert checked.returncode == 0, checked.stderr
    assert image.digest in checked.stdout
    # Offline for real: neither signing nor verifying reached for Rekor, Fulcio or TUF.
    assert signed.sign_peers == {signed.registry}
    assert peers == {signed.registry}


def test_the_signature_is_a_referrer_of_the_index_and_the_sboms_stay_reachable(
    image: ImageBuild, signed: Signed
) -> None:
    (signature,) = _referrers(signed.repository, image.digest)
    assert signature["artifactType"] == SIGNATURE_ARTIFACT_TYPE
    for platform in image.platforms:
        (sbom,) = _referrers(signed.repository, platform.digest)
        assert sbom["artifactType"] == oci.SBOM_MEDIA_TYPE


def test_another_key_does_not_verify(signed: Signed, other_key: KeyPair, tmp_path: Path) -> None:
    with pytest.raises(VerificationFailed, match="failed to verify signature"):
        verify(signed.reference, str(other_key.public), tmp_path)
    checked = _hack_image("verify", signed.reference, "--key", str(other_key.public))
    assert checked.returncode == 1


def test_a_platform_digest_is_not_covered_by_the_index_signature(
    image: ImageBuild, signed: Signed, release_key: KeyPair, tmp_path: Path
) -> None:
    # The index names the platform's manifest, so pulling the index by its digest
    # checks the platform; the platform's digest alone carries no signature of its own.
    amd64 = f"{signed.repository}@{image.platform('amd64').digest}"
    with pytest.raises(VerificationFailed, match="no signatures found"):
        verify(amd64, str(release_key.public), tmp_path)


def test_an_index_pushed_over_the_signed_tag_does_not_verify(
    image: ImageBuild, signed: Signed, release_key: KeyPair, tmp_path: Path
) -> None:
    moving = f"{signed.repository}:moving"
    assert _push(None, moving) == signed.reference
    verify(moving, str(release_key.public), tmp_path / "before")
    # One annotation more on the index: every platform and layer as signed, the index not.
    other = _layout_with_an_annotated_index(image.layout, tmp_path / "other")
    moved = _push(other, moving)
    assert moved != signed.reference
    with pytest.raises(VerificationFailed, match="no signatures found"):
        verify(moving, str(release_key.public), tmp_path / "after")
    verify(signed.reference, str(release_key.public), tmp_path / "by-digest")


def test_a_signature_whose_bytes_changed_does_not_verify(
    image: ImageBuild, registry: str, release_key: KeyPair, tmp_path: Path
) -> None:
    # Its own repository: the signature this test breaks is no other test's.
    repository = "team/tampered"
    signed = _push_and_sign(registry, repository, release_key, tmp_path / "connect.trace")
    verify(signed.reference, str(release_key.public), tmp_path / "before")
    (referrer,) = _referrers(signed.repository, image.digest)
    artifact = json.loads(_get(registry, f"{repository}/manifests/{referrer['digest']}"))
    (layer,) = artifact["layers"]
    bundle = json.loads(_get(registry, f"{repository}/blobs/{layer['digest']}"))
    # The key's signature and nothing else: no log entry, certificate or timestamp.
    assert list(bundle["verificationMaterial"]) == ["publicKey"]
    (envelope_signature,) = bundle["dsseEnvelope"]["signatures"]
    flipped = bytearray(base64.b64decode(envelope_signature["sig"]))
    flipped[-1] ^= 0x01
    envelope_signature["sig"] = base64.b64encode(bytes(flipped)).decode()
    content = json.dumps(bundle).encode()
    layer.update(digest=_put_blob(registry, repository, content), size=len(content))
    swapped = _swap_referrer(registry, repository, image.digest, referrer["digest"], artifact)
    (tampered,) = _referrers(signed.repository, image.digest)
    assert tampered["digest"] == swapped != referrer["digest"]
    with pytest.raises(VerificationFailed, match="failed to verify signature"):
        verify(signed.reference, str(release_key.public), tmp_path / "after")


def test_a_tag_is_refused_for_signing(signed: Signed, release_key: KeyPair, tmp_path: Path) -> None:
    with pytest.raises(SigningError, match="does not name a digest"):
        sign(f"{signed.repository}:0.1.0", str(release_key.private), tmp_path)


def _layout_with_an_annotated_index(layout: Path, out: Path) -> Path:
    """A copy of ``layout`` (blobs linked where they can be) whose index carries one more
    annotation: a different index digest over the same images."""
    blobs = out / "blobs" / "sha256"
    blobs.mkdir(parents=True)
    for blob in (layout / "blobs" / "sha256").iterdir():
        try:
            (blobs / blob.name).hardlink_to(blob)
        except OSError:  # another file system: ocitool refuses a symlinked blob
            shutil.copyfile(blob, blobs / blob.name)
    (out / "oci-layout").write_bytes((layout / "oci-layout").read_bytes())
    top = json.loads((layout / "index.json").read_text())
    for descriptor in top["manifests"]:
        if descriptor["mediaType"] == INDEX_TYPE:
            index = json.loads((blobs / descriptor["digest"].split(":")[1]).read_bytes())
            index.setdefault("annotations", {})["org.example.pushed-over"] = "a test"
            content = json.dumps(index).encode()
            digest = hashlib.sha256(content).hexdigest()
            (blobs / digest).write_bytes(content)
            descriptor.update(digest=f"sha256:{digest}", size=len(content))
    (out / "index.json").write_text(json.dumps(top))
    return out


# The registry API (distribution-spec), for what ocitool has no command for.


def _request(
    registry: str, path: str, *, method: str = "GET", data: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[bytes, Any]:  # fmt: skip
    request = urllib.request.Request(
        f"http://{registry}/v2/{path}", data=data, method=method, headers=headers or {}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return response.read(), response.headers


def _get(registry: str, path: str) -> bytes:
    return _request(registry, path, headers={"Accept": MANIFEST_TYPE})[0]


def _referrers(repository: str, digest: str) -> list[dict[str, Any]]:
    listed = subprocess.run(
        [str(oci.ocitool()), "referrers", f"{repository}@{digest}"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    manifests: list[dict[str, Any]] = json.loads(listed.stdout).get("manifests") or []
    return manifests


def _put_blob(registry: str, repository: str, content: bytes) -> str:
    digest = f"sha256:{hashlib.sha256(content).hexdigest()}"
    _, headers = _request(registry, f"{repository}/blobs/uploads/", method="POST")
    location = headers["Location"]
    separator = "&" if "?" in location else "?"
    upload = location.removeprefix("/v2/") + f"{separator}digest={digest}"
    _request(registry, upload, method="PUT", data=content,
             headers={"Content-Type": "application/octet-stream"})  # fmt: skip
    return digest


def _swap_referrer(
    registry: str, repository: str, subject: str, old: str, artifact: dict[str, Any]
) -> str:
    """Put ``artifact`` in the place of ``subject``'s referrer ``old``, as whoever holds
    the registry could; its digest. The loopback registry has no referrers API, so its
    clients list referrers in the fallback tag ``sha256-<hex>`` (the OCI spec's), which
    is rewritten to name the new one."""
    content = json.dumps(artifact).encode()
    new = _put_manifest(registry, repository, content)
    tag = f"{repository}/manifests/{subject.replace(':', '-')}"
    listing = json.loads(_request(registry, tag, headers={"Accept": INDEX_TYPE})[0])
    for descriptor in listing["manifests"]:
        if descriptor["digest"] == old:
            descriptor.update(digest=new, size=len(content))
    _request(registry, tag, method="PUT", data=json.dumps(listing).encode(),
             headers={"Content-Type": INDEX_TYPE})  # fmt: skip
    _request(registry, f"{repository}/manifests/{old}", method="DELETE")
    return new


def _put_manifest(registry: str, repository: str, content: bytes) -> str:
    digest = f"sha256:{hashlib.sha256(content).hexdigest()}"
    _request(registry, f"{repository}/manifests/{digest}", method="PUT", data=content,
             headers={"Content-Type": MANIFEST_TYPE})  # fmt: skip
    return digest
