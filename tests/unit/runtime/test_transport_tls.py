"""The transport trusts the CAs Go trusts: Python 3.13's default context sets
``VERIFY_X509_STRICT``, which refuses CAs that client-go and kubectl accept (EKS's
among them: kubernetes-client/python#2394). Here a CA made with ``cryptography`` as
such clusters' are (basicConstraints not critical, no keyUsage, no key identifiers)
serves a loopback TLS server; on an interpreter before 3.13, its default is simulated.

What strict mode refuses was checked here, one deviation at a time (``DEVIATIONS``)."""

from __future__ import annotations

import datetime
import http.server
import ipaddress
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from operator_runtime.runtime.errors import TransportError
from operator_runtime.runtime.kubeconfig import ApiServerConfig
from operator_runtime.runtime.transport import UrllibTransport

DEVIATIONS = {
    "basicConstraints not critical": "Basic Constraints of CA cert not marked critical",
    "no keyUsage": "CA cert does not include key usage extension",
    "no subjectKeyIdentifier": "Missing Subject Key Identifier",
    "no authorityKeyIdentifier": "Missing Authority Key Identifier",
}
"""Each way a CA or its server certificate may differ from what OpenSSL's strict mode
wants, and the reason that mode gives (OpenSSL 3.0; each alone refuses)."""


def _lenient_ca_and_server(directory: Path, deviation: str) -> tuple[str, Path, Path]:
    """A CA and a server certificate for 127.0.0.1 it signed, strict in every way but
    ``deviation`` (a key of ``DEVIATIONS``)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "lenient-ca")])
    ca_builder = (
        x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
        .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None),
                       critical=deviation != "basicConstraints not critical")
    )  # fmt: skip
    if deviation != "no keyUsage":
        ca_builder = ca_builder.add_extension(x509.KeyUsage(
            digital_signature=False, content_commitment=False, key_encipherment=False,
            data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
            encipher_only=False, decipher_only=False), critical=True)  # fmt: skip
    if deviation != "no subjectKeyIdentifier":
        ca_builder = ca_builder.add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
    ca = ca_builder.sign(ca_key, hashes.SHA256())
    key = ec.generate_private_key(ec.SECP256R1())
    server_builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "apiserver")]))
        .issuer_name(ca_name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(
            [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
    )  # fmt: skip
    if deviation != "no authorityKeyIdentifier":
        server_builder = server_builder.add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
    server = server_builder.sign(ca_key, hashes.SHA256())
    cert_path, key_path = directory / "server.crt", directory / "server.key"
    cert_path.write_bytes(server.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))  # fmt: skip
    return ca.public_bytes(serialization.Encoding.PEM).decode(), cert_path, key_path


class _Version(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b'{"major": "1"}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture(params=sorted(DEVIATIONS))
def lenient_server(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    ca_pem, cert, key = _lenient_ca_and_server(tmp_path, request.param)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Version)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}", ca_pem
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def python_313_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """``ssl.create_default_context`` as Python 3.13 makes it: strict X.509."""
    original = ssl.create_default_context

    def strict(*args: object, **kwargs: object) -> ssl.SSLContext:
        context = original(*args, **kwargs)  # type: ignore[arg-type]
        context.verify_flags |= ssl.VERIFY_X509_STRICT
        return context

    monkeypatch.setattr(ssl, "create_default_context", strict)


def _get_version(server: str, ca_pem: str) -> int:
    transport = UrllibTransport(ApiServerConfig(server=server, ca_pem=ca_pem))
    response = transport.request("GET", "/version", query=[], body=None, headers={},
                                 timeout=(5, 5))  # fmt: skip
    return response.status


def test_strict_mode_refuses_this_ca(lenient_server: tuple[str, str]) -> None:
    """The CA is one the strict flag refuses, so the next test proves something."""
    server, ca_pem = lenient_server
    context = ssl.create_default_context(cadata=ca_pem)
    context.verify_flags |= ssl.VERIFY_X509_STRICT
    import urllib.error
    import urllib.request

    with pytest.raises(urllib.error.URLError) as refused:
        urllib.request.urlopen(f"{server}/version", context=context, timeout=5)
    assert any(reason in str(refused.value) for reason in DEVIATIONS.values())


@pytest.mark.usefixtures("python_313_default")
def test_a_ca_go_accepts_is_accepted_under_python_313_defaults(
    lenient_server: tuple[str, str],
) -> None:
    server, ca_pem = lenient_server
    assert _get_version(server, ca_pem) == 200


@pytest.mark.usefixtures("python_313_default")
def test_another_ca_is_still_refused(lenient_server: tuple[str, str], tmp_path: Path) -> None:
    server, _ = lenient_server
    (tmp_path / "other").mkdir()
    other_ca, _, _ = _lenient_ca_and_server(tmp_path / "other", "no keyUsage")
    with pytest.raises(TransportError, match="certificate verify failed"):
        _get_version(server, other_ca)
