"""Certificates and keys for a throwaway control plane.

One CA signs the API server's serving certificate and an admin client certificate in
``system:masters`` (RBAC stays on; the admin is simply allowed everything). The admin
also has a random bearer token in the API server's static token file, which the
control plane's own kubeconfig uses (``admin_token``). A separate RSA key pair signs
service-account tokens. The CA's key stays beside its certificate so
that a real node (``hack/node``) can be given identities of its own later
(``Pki.issue``): the kubelet's, kube-proxy's, the API server's kubelet client.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_VALIDITY = datetime.timedelta(days=30)


@dataclass(frozen=True)
class Pki:
    """Paths of the PEM files in a PKI directory."""

    directory: Path

    @property
    def ca_cert(self) -> Path:
        return self.directory / "ca.crt"

    @property
    def ca_key(self) -> Path:
        return self.directory / "ca.key"

    @property
    def serving_cert(self) -> Path:
        return self.directory / "apiserver.crt"

    @property
    def serving_key(self) -> Path:
        return self.directory / "apiserver.key"

    @property
    def admin_cert(self) -> Path:
        return self.directory / "admin.crt"

    @property
    def admin_key(self) -> Path:
        return self.directory / "admin.key"

    @property
    def token_file(self) -> Path:
        """The API server's ``--token-auth-file``: the admin's token, user and group."""
        return self.directory / "tokens.csv"

    def admin_token(self) -> str:
        """The admin's bearer token (the token file's first field).

        What the control plane's kubeconfig authenticates with, rather than the admin
        certificate: the API server checks a client certificate's chain to the CA on
        every request, an ECDSA verification that was a tenth of its CPU under an
        operator and a test (a profile over 150 s of tests/integration/rayjob); a
        static token is looked up. The certificate stays valid for whoever dials with
        it."""
        return self.token_file.read_text().split(",", 1)[0]

    @property
    def service_account_key(self) -> Path:
        return self.directory / "sa.key"

    @property
    def service_account_public_key(self) -> Path:
        return self.directory / "sa.pub"

    def issue_pem(
        self,
        common_name: str,
        organization: str | None = None,
        *,
        server_addresses: tuple[str, ...] = (),
        validity: datetime.timedelta = _VALIDITY,
    ) -> tuple[bytes, bytes]:
        """A certificate signed by this CA and its key, as PEM: a client certificate for
        ``common_name`` (the user) in ``organization`` (the group), or, with
        ``server_addresses``, a serving certificate for those IP addresses."""
        ca_cert = x509.load_pem_x509_certificate(self.ca_cert.read_bytes())
        ca_key = serialization.load_pem_private_key(self.ca_key.read_bytes(), password=None)
        if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
            raise TypeError(f"{self.ca_key}: not the EC key this module writes")
        key = ec.generate_private_key(ec.SECP256R1())
        serving = bool(server_addresses)
        certificate = _issue(
            _name(common_name, organization),
            key.public_key(),
            ca_cert.subject,
            ca_key,
            usage=ExtendedKeyUsageOID.SERVER_AUTH if serving else ExtendedKeyUsageOID.CLIENT_AUTH,
            san=[x509.IPAddress(ipaddress.ip_address(a)) for a in server_addresses] or None,
            validity=validity,
        )
        return certificate.public_bytes(serialization.Encoding.PEM), _key_pem(key)

    def issue(
        self,
        name: str,
        common_name: str,
        organization: str | None = None,
        *,
        server_addresses: tuple[str, ...] = (),
    ) -> tuple[Path, Path]:
        """:meth:`issue_pem`, written as ``NAME.crt`` and ``NAME.key`` in this directory."""
        cert, key = self.issue_pem(common_name, organization, server_addresses=server_addresses)
        cert_path, key_path = self.directory / f"{name}.crt", self.directory / f"{name}.key"
        cert_path.write_bytes(cert)
        write_secret(key_path, key)
        return cert_path, key_path


def _key_pem(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> None:
    write_secret(path, _key_pem(key))


def write_secret(path: Path, content: bytes | str) -> None:
    """``content`` in ``path``, readable by its owner alone from the start."""
    data = content.encode() if isinstance(content, str) else content
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as file:
        os.fchmod(file.fileno(), 0o600)  # a file left from before keeps its mode otherwise
        file.write(data)


def _name(common_name: str, organization: str | None = None) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        attributes.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(attributes)


def _issue(
    subject: x509.Name,
    public_key: ec.EllipticCurvePublicKey,
    issuer: x509.Name,
    issuer_key: ec.EllipticCurvePrivateKey,
    *,
    ca: bool = False,
    usage: x509.ObjectIdentifier | None = None,
    san: list[x509.GeneralName] | None = None,
    validity: datetime.timedelta = _VALIDITY,
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + validity)
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if usage is not None:
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    if san:
        builder = builder.add_extension(x509.SubjectAlternativeName(san), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def create(directory: Path, *, extra_server_addresses: tuple[str, ...] = ()) -> Pki:
    """Write a fresh CA, serving and admin certificates, and service-account keys;
    ``extra_server_addresses`` are further IP addresses the API server is dialled at
    (a real node's way to it)."""
    directory.mkdir(parents=True, exist_ok=True)
    pki = Pki(directory)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("pulumi-ray-local-ca")
    ca_cert = _issue(ca_name, ca_key.public_key(), ca_name, ca_key, ca=True)
    pki.ca_cert.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    _write_key(pki.ca_key, ca_key)

    serving_key = ec.generate_private_key(ec.SECP256R1())
    serving_names: list[x509.GeneralName] = [
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
        x509.IPAddress(ipaddress.ip_address("10.96.0.1")),
        x509.DNSName("localhost"),
        x509.DNSName("kubernetes"),
        x509.DNSName("kubernetes.default"),
        x509.DNSName("kubernetes.default.svc"),
        x509.DNSName("kubernetes.default.svc.cluster.local"),
        *(x509.IPAddress(ipaddress.ip_address(a)) for a in extra_server_addresses),
    ]
    serving = _issue(
        _name("kube-apiserver"),
        serving_key.public_key(),
        ca_name,
        ca_key,
        usage=ExtendedKeyUsageOID.SERVER_AUTH,
        san=serving_names,
    )
    pki.serving_cert.write_bytes(serving.public_bytes(serialization.Encoding.PEM))
    _write_key(pki.serving_key, serving_key)

    admin_key = ec.generate_private_key(ec.SECP256R1())
    admin = _issue(
        _name("pulumi-ray-admin", "system:masters"),
        admin_key.public_key(),
        ca_name,
        ca_key,
        usage=ExtendedKeyUsageOID.CLIENT_AUTH,
    )
    pki.admin_cert.write_bytes(admin.public_bytes(serialization.Encoding.PEM))
    _write_key(pki.admin_key, admin_key)
    token = secrets.token_urlsafe(32)  # no comma: the file is CSV
    write_secret(pki.token_file, f"{token},pulumi-ray-admin,pulumi-ray-admin,system:masters\n")

    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    _write_key(pki.service_account_key, sa_key)
    pki.service_account_public_key.write_bytes(
        sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return pki
