"""Who the operator is to the API server, asked per request: a ``Credential`` (the
``Authorization`` header, and an exec plugin's client certificate).

Two sources need more than a constant:

- a token file (the in-cluster service account's ``token``, a kubeconfig's ``tokenFile``):
  the kubelet rotates bound service-account tokens by swapping the file, so the header
  must follow the file. client-go re-reads such a file at most once a minute; we look at
  the file's identity (inode, size, mtime) at most once a second and read it again when it
  changed, so a rotated token is in use within a second, for one ``stat`` a second;
- an exec plugin (``client.authentication.k8s.io`` v1 or v1beta1 ``ExecCredential``): run
  when no credential is held or the held one reached its ``expirationTimestamp``, or after
  the server answered 401 to it (to that credential, not an older one), as client-go does;
  its output and run time are bounded; a certificate it prints is rotated like a token.

Every source is called from many worker threads at once; each holds a lock while it
refreshes, so one plugin run serves all of them.
"""

from __future__ import annotations

import base64
import datetime
import json
import os
import selectors
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

MAX_SECRET_BYTES = 1024 * 1024
"""A token, certificate, key or CA bundle larger than this is refused: none is near it
(a bound token is ~1 KiB, a system CA bundle ~220 KiB)."""

TOKEN_FILE_RECHECK_SECONDS = 1.0
"""How long a token file is trusted unchanged before its identity is looked at again."""

EXEC_TIMEOUT_SECONDS = 60.0
"""An exec plugin still running after this is killed: a cloud CLI fetching a token takes
a few seconds; one waiting for a human (no terminal here) would never finish."""

MAX_EXEC_OUTPUT_BYTES = 1024 * 1024
"""A plugin printing more than this (stdout, or stderr) is killed and its output refused."""


class CredentialError(Exception):
    """A credential cannot be read or produced; the message names its source and field."""


@dataclass(frozen=True)
class Credential:
    """What one request shows the API server: an ``Authorization`` value and, from an
    exec plugin, a client certificate and key. The transport hands the object back to
    ``Credentials.rejected`` when the server answers 401 to it."""

    authorization: str | None = None
    """The header's value (``Bearer <token>``), or None to send none."""
    client_certificate: bytes | None = field(default=None, repr=False)
    client_key: bytes | None = field(default=None, repr=False)


ANONYMOUS: Final = Credential()


class Credentials(Protocol):
    """Who the operator is, asked per request."""

    def current(self) -> Credential:
        """The credential for the next request (refreshed first if it must be)."""
        ...

    def authorization(self) -> str | None:
        """``current().authorization``."""
        ...

    def rejected(self, credential: Credential) -> None:
        """The API server answered 401 to a request that showed ``credential``: if it is
        still the one held, it is stale and the next ``current`` gets a fresh one (a
        burst of 401s to one credential refreshes it once)."""
        ...


class NoCredentials:
    """Anonymous, or a client certificate only."""

    def current(self) -> Credential:
        return ANONYMOUS

    def authorization(self) -> str | None:
        return None

    def rejected(self, credential: Credential) -> None:
        pass


@dataclass(frozen=True)
class StaticToken:
    """A kubeconfig's ``token``: it never changes while the process runs."""

    token: str = field(repr=False)
    _credential: Credential = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_credential", Credential(f"Bearer {self.token}"))

    def current(self) -> Credential:
        return self._credential

    def authorization(self) -> str | None:
        return self._credential.authorization

    def rejected(self, credential: Credential) -> None:
        pass


def read_bounded(path: str, what: str, limit: int = MAX_SECRET_BYTES) -> bytes:
    """``path``'s bytes, refused when larger than ``limit`` (``what`` names it in errors)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise CredentialError(f"{what}: cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise CredentialError(f"{what}: {path} is larger than {limit} bytes")
    return data


class TokenFile:
    """A bearer token kept in a file that may be replaced at any time (see the module)."""

    def __init__(
        self, path: str, what: str, *, recheck: float = TOKEN_FILE_RECHECK_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:  # fmt: skip
        self._path = path
        self._what = what
        self._recheck = recheck
        self._clock = clock
        self._lock = threading.Lock()
        self._identity = self._stat()
        self._credential = Credential(f"Bearer {self._read()}")
        self._checked = clock()

    def _stat(self) -> tuple[int, int, int, int]:
        try:
            st = os.stat(self._path)  # follows the kubelet's ..data symlink swap
        except OSError as exc:
            raise CredentialError(f"{self._what}: {self._path}: {exc.strerror or exc}") from None
        return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)

    def _read(self) -> str:
        token = read_bounded(self._path, self._what).decode("utf-8", "replace").strip()
        if not token:
            raise CredentialError(f"{self._what}: {self._path} is empty")
        return token

    def current(self) -> Credential:
        now = self._clock()
        if now - self._checked >= self._recheck:
            with self._lock:
                if now - self._checked >= self._recheck:
                    self._refresh()
                    self._checked = now
        return self._credential

    def authorization(self) -> str | None:
        return self.current().authorization

    def _refresh(self) -> None:
        # A file missing or empty for a moment (a writer that is not atomic) keeps the
        # last token: a stale token costs a 401 and a retry, no token costs the same.
        try:
            identity = self._stat()
            if identity != self._identity:
                self._credential = Credential(f"Bearer {self._read()}")
                self._identity = identity
        except CredentialError:
            pass

    def rejected(self, credential: Credential) -> None:
        with self._lock:
            if credential is self._credential:
                self._checked = float("-inf")


@dataclass(frozen=True)
class ExecCredential:
    """What an exec plugin printed: a token, or a client certificate and key, and until
    when they hold (None: until the server refuses them)."""

    token: str | None
    client_certificate: bytes | None
    client_key: bytes | None
    expires: datetime.datetime | None


@dataclass(frozen=True)
class ExecPlugin:
    """A kubeconfig user's ``exec`` block, with ``command`` already resolved."""

    api_version: str
    command: str
    args: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    exec_info: str
    """The ``KUBERNETES_EXEC_INFO`` JSON: the ExecCredential's spec (never interactive:
    an operator has no terminal), with the cluster when ``provideClusterInfo`` is set."""
    what: str
    """Names the kubeconfig and user in errors."""
    install_hint: str = ""
    """The kubeconfig's ``installHint``: shown when the command is not found."""


def run_exec_plugin(
    plugin: ExecPlugin, *, timeout: float = EXEC_TIMEOUT_SECONDS,
    limit: int = MAX_EXEC_OUTPUT_BYTES,
) -> ExecCredential:  # fmt: skip
    """Runs the plugin once and returns what it printed (bounded, checked)."""
    environment = {**os.environ, **dict(plugin.env), "KUBERNETES_EXEC_INFO": plugin.exec_info}
    try:
        process = subprocess.Popen(
            [plugin.command, *plugin.args], env=environment, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
    except OSError as exc:
        hint = ""
        if isinstance(exc, FileNotFoundError) and plugin.install_hint.strip():
            hint = "; " + " ".join(plugin.install_hint.split())
        raise CredentialError(
            f"{plugin.what}: exec command {plugin.command!r}: {exc.strerror or exc}{hint}"
        ) from None
    stdout, stderr, problem = _collect(process, timeout, limit)
    if problem:
        raise CredentialError(f"{plugin.what}: exec command {plugin.command!r} {problem}")
    if process.returncode != 0:
        tail = " ".join(stderr.decode("utf-8", "replace").split())[-300:]
        raise CredentialError(
            f"{plugin.what}: exec command {plugin.command!r} exited {process.returncode}"
            + (f": {tail}" if tail else "")
        )
    return parse_exec_credential(stdout, plugin.api_version, plugin.what)


def _collect(
    process: subprocess.Popen[bytes], timeout: float, limit: int
) -> tuple[bytes, bytes, str | None]:
    """stdout and stderr of ``process`` until it exits, or a reason it was killed."""
    assert process.stdout is not None and process.stderr is not None
    buffers: dict[Any, bytearray] = {process.stdout: bytearray(), process.stderr: bytearray()}
    deadline = time.monotonic() + timeout
    problem: str | None = None
    with selectors.DefaultSelector() as selector:
        for stream in buffers:
            selector.register(stream, selectors.EVENT_READ)
        while selector.get_map() and problem is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                problem = f"did not finish within {timeout:g} s"
                break
            for key, _ in selector.select(remaining):
                chunk = os.read(key.fd, 64 * 1024)
                if not chunk:
                    selector.unregister(key.fileobj)
                    continue
                buffers[key.fileobj] += chunk
                if len(buffers[key.fileobj]) > limit:
                    problem = f"printed more than {limit} bytes"
    if problem is not None:
        process.kill()
    try:
        process.wait(max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        problem = problem or f"did not exit within {timeout:g} s"
    process.stdout.close()
    process.stderr.close()
    return bytes(buffers[process.stdout]), bytes(buffers[process.stderr]), problem


def parse_exec_credential(output: bytes, api_version: str, what: str) -> ExecCredential:
    """The ExecCredential a plugin printed, checked as client-go checks it."""
    try:
        document = json.loads(output)
    except ValueError as exc:
        raise CredentialError(f"{what}: exec plugin output is not JSON: {exc}") from None
    if not isinstance(document, dict) or document.get("kind") != "ExecCredential":
        raise CredentialError(f"{what}: exec plugin output is not an ExecCredential")
    if document.get("apiVersion") != api_version:
        raise CredentialError(
            f"{what}: exec plugin returned apiVersion {document.get('apiVersion')!r}, "
            f"the kubeconfig asks for {api_version!r}"
        )
    status = document.get("status")
    if not isinstance(status, dict):
        raise CredentialError(f"{what}: exec plugin output has no status")
    token = status.get("token")
    certificate = status.get("clientCertificateData")
    key = status.get("clientKeyData")
    if token is not None and (not isinstance(token, str) or not token):
        raise CredentialError(f"{what}: exec plugin status.token is not a string")
    if (certificate is None) != (key is None):
        raise CredentialError(
            f"{what}: exec plugin status has one of clientCertificateData and "
            f"clientKeyData without the other"
        )
    if certificate is not None and (not isinstance(certificate, str)
                                    or not isinstance(key, str)):  # fmt: skip
        raise CredentialError(f"{what}: exec plugin client certificate is not PEM text")
    if token is None and certificate is None:
        raise CredentialError(
            f"{what}: exec plugin status has neither token nor clientCertificateData"
        )
    return ExecCredential(
        token=token,
        client_certificate=certificate.encode() if isinstance(certificate, str) else None,
        client_key=key.encode() if isinstance(key, str) else None,
        expires=_expiry(status.get("expirationTimestamp"), what),
    )


def _expiry(value: Any, what: str) -> datetime.datetime | None:
    if value is None:
        return None
    try:
        parsed = datetime.datetime.fromisoformat(str(value))
    except ValueError:
        raise CredentialError(
            f"{what}: exec plugin status.expirationTimestamp {value!r} is not RFC 3339"
        ) from None
    if parsed.tzinfo is None:
        raise CredentialError(
            f"{what}: exec plugin status.expirationTimestamp {value!r} has no time zone"
        )
    return parsed


class ExecCredentials:
    """A plugin's token or client certificate, cached until its expiry or a 401 to it,
    then fetched again, one run at a time.

    The first credential is fetched by the loader (``first``), so a plugin that fails
    stops the operator at start. A client certificate from a later run is returned by
    ``current`` like a token, and the transport moves to a TLS pool with it (client-go
    rotates it too). ``rejected`` drops the held credential only if it is the one the
    server refused: N requests refused at once run the plugin once, not N times."""

    def __init__(
        self, plugin: ExecPlugin, first: ExecCredential, *,
        run: Callable[[ExecPlugin], ExecCredential] = run_exec_plugin,
        now: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(datetime.UTC),
    ) -> None:  # fmt: skip
        self._plugin = plugin
        self._run = run
        self._now = now
        self._lock = threading.Lock()
        self._held: tuple[ExecCredential, Credential] | None = _held(first)

    def _valid(self, held: tuple[ExecCredential, Credential] | None) -> bool:
        return held is not None and (held[0].expires is None or self._now() < held[0].expires)

    def current(self) -> Credential:
        held = self._held
        if not self._valid(held):
            with self._lock:  # one run serves every thread that waited for it
                held = self._held
                if not self._valid(held):
                    held = self._held = _held(self._run(self._plugin))
        assert held is not None
        return held[1]

    def authorization(self) -> str | None:
        return self.current().authorization

    def rejected(self, credential: Credential) -> None:
        with self._lock:
            if self._held is not None and self._held[1] is credential:
                self._held = None


def _held(credential: ExecCredential) -> tuple[ExecCredential, Credential]:
    return credential, Credential(
        f"Bearer {credential.token}" if credential.token else None,
        credential.client_certificate, credential.client_key,
    )  # fmt: skip


def exec_info(api_version: str, cluster: Mapping[str, Any] | None, ca_pem: str | None) -> str:
    """``KUBERNETES_EXEC_INFO`` for a plugin, with the cluster when it asked for it."""
    spec: dict[str, Any] = {"interactive": False}
    if cluster is not None:
        info: dict[str, Any] = {"server": cluster.get("server")}
        for name in ("tls-server-name", "insecure-skip-tls-verify", "proxy-url",
                     "disable-compression"):  # fmt: skip
            if cluster.get(name) is not None:
                info[name] = cluster[name]
        if ca_pem:
            info["certificate-authority-data"] = base64.b64encode(ca_pem.encode()).decode()
        config = _exec_extension(cluster)
        if config is not None:
            info["config"] = config
        spec["cluster"] = info
    return json.dumps({"apiVersion": api_version, "kind": "ExecCredential", "spec": spec})


def _exec_extension(cluster: Mapping[str, Any]) -> Any:
    """The cluster's ``client.authentication.k8s.io/exec`` extension, which client-go
    passes to the plugin as ``spec.cluster.config``."""
    for extension in cluster.get("extensions") or ():
        if isinstance(extension, dict) and extension.get("name") == (
            "client.authentication.k8s.io/exec"
        ):
            return extension.get("extension")
    return None
