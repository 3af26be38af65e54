"""Where the API server is and how to reach it: a kubeconfig or the in-cluster service
account, read by us into one frozen ``ApiServerConfig``.

Why not the ``kubernetes`` package, a well-kept library that does this: importing it
loads its whole generated client (about 900 model and API classes) for a few dozen lines
of config reading. Measured on this project's environment (Python 3.11, kubernetes
37.0.2): a bare interpreter peaks at 10.5 MiB RSS, ``import kubernetes`` at 54 MiB,
``import operator_runtime.cli`` at 63 MiB with it and 45 MiB without, and an idle
operator (benchmarks/operator_rss.py) holds 75 MiB with it, 57 MiB without; its memory
is one of the issue 31 figures (at most half of KubeRay's). So we read what an operator
meets ourselves:

- in-cluster: ``KUBERNETES_SERVICE_HOST``/``_PORT`` and the service-account directory's
  ``token`` (re-read when it changes, see ``credentials``) and ``ca.crt``;
- one kubeconfig file (``--kubeconfig``, else ``$KUBECONFIG`` naming one path, else,
  outside a pod, ``~/.kube/config``: ``load_configuration`` has the order), its
  ``current-context``; the cluster's ``server``,
  ``certificate-authority(-data)``, ``insecure-skip-tls-verify``, ``tls-server-name``;
  the user's ``token``, ``tokenFile``, ``client-certificate(-data)``,
  ``client-key(-data)``, ``exec`` (v1 and v1beta1) and impersonation (``as``,
  ``as-uid``, ``as-groups``, ``as-user-extra``: ``impersonation``). Relative paths are
  resolved against the kubeconfig's directory, as kubectl does.

The forms we do not read are refused at start, naming the key and what to use instead
(``unsupported_reason``): an ``auth-provider`` (removed from client-go in 1.26: an exec
plugin replaces each), ``username``/``password`` (basic authentication, removed from the
API server in 1.19), an exec ``apiVersion`` other than v1/v1beta1 (v1alpha1 was removed
in 1.24), a ``socks5`` ``proxy-url``, and several paths in ``$KUBECONFIG`` (not merged:
name one file, or flatten them with ``kubectl config view --flatten``). Other keys we do
not know are ignored with a warning, as client-go ignores them. The ``kubernetes``
package is not imported at all.

Inputs are treated as hostile: files are read up to a bound, exec plugins run with a
bounded time and output, and every error names the kubeconfig, context or user, and field.
"""

from __future__ import annotations

import base64
import binascii
import logging
import os
import ssl
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from operator_runtime.api.useryaml import UserYamlError, YamlLimits, load_yaml
from operator_runtime.runtime.credentials import (
    CredentialError,
    Credentials,
    ExecCredentials,
    ExecPlugin,
    NoCredentials,
    StaticToken,
    TokenFile,
    exec_info,
    read_bounded,
    run_exec_plugin,
)

log = logging.getLogger(__name__)

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
MAX_KUBECONFIG_BYTES = 4 * 1024 * 1024
"""A kubeconfig larger than this is refused (a few hundred contexts fit in far less)."""
KUBECONFIG_YAML_LIMITS = YamlLimits(max_bytes=MAX_KUBECONFIG_BYTES)

EXEC_API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
CLUSTER_KEYS = frozenset({
    "server", "certificate-authority", "certificate-authority-data",
    "insecure-skip-tls-verify", "tls-server-name", "extensions", "disable-compression",
    "proxy-url",
})  # fmt: skip
USER_KEYS = frozenset({
    "token", "tokenFile", "client-certificate", "client-certificate-data", "client-key",
    "client-key-data", "exec", "extensions", "as", "as-uid", "as-groups", "as-user-extra",
})  # fmt: skip
IMPERSONATION_KEYS = frozenset({"as", "as-uid", "as-groups", "as-user-extra"})
PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy")
UNSUPPORTED_USER_KEYS: dict[str, str] = {
    "auth-provider": "auth-provider plugins were removed from client-go (Kubernetes 1.26); "
    "use the exec plugin that replaces yours: gke-gcloud-auth-plugin (gcp), kubelogin "
    "(azure), kubectl oidc-login (oidc)",
    "username": "basic authentication was removed from the API server (Kubernetes 1.19); "
    "use a token, a client certificate or an exec plugin",
    "password": "basic authentication was removed from the API server (Kubernetes 1.19); "
    "use a token, a client certificate or an exec plugin",
}
"""Kubeconfig user keys kubectl users may still have that the operator refuses, and why."""


class KubeconfigError(Exception):
    """No API server configuration can be made; the message says where and why."""


@dataclass(frozen=True)
class ApiServerConfig:
    """The API server's URL, the TLS to reach it and the credentials to show it."""

    server: str
    """``https://host:port`` (no trailing slash)."""
    ca_pem: str | None = None
    """The certificate authorities to trust; None: the system's."""
    verify: bool = True
    tls_server_name: str | None = None
    """The name the server's certificate is checked against (and sent as SNI) instead of
    the URL's host."""
    client_certificate: bytes | None = field(default=None, repr=False)
    client_key: bytes | None = field(default=None, repr=False)
    credentials: Credentials = field(default_factory=NoCredentials, repr=False)
    rotate_client_certificate: bool = False
    """The client certificate is the exec plugin's: follow the one it prints now."""
    impersonation: tuple[tuple[str, str], ...] = ()
    """The ``Impersonate-*`` headers of the user's ``as``, ``as-uid``, ``as-groups`` and
    ``as-user-extra`` (``impersonation``), a name repeated for each group or value."""
    proxy: str | None = None
    """A cluster's ``proxy-url`` (http or https); without it the transport asks the
    environment (``proxy_from_environment``)."""
    source: str = ""
    """Where this came from, for messages: ``kubeconfig /p (context c)``, ``in-cluster``."""

    def ssl_context(self) -> ssl.SSLContext:
        """A fresh client context: the CA, verification and client certificate."""
        try:
            if self.ca_pem:
                context = ssl.create_default_context(cadata=self.ca_pem)
            else:
                context = ssl.create_default_context()
        except (ssl.SSLError, ValueError) as exc:
            raise KubeconfigError(f"{self.source}: certificate authority: {exc}") from None
        # Python 3.13 made its default context strict (VERIFY_X509_STRICT), which
        # refuses certificates Go's verifier takes: a CA whose basicConstraints is not
        # critical, a server certificate without an authority key identifier (EKS's,
        # kubernetes-client/python#2394). client-go accepts them, so do we; the chain,
        # the dates and the host name are still checked.
        context.verify_flags &= ~ssl.VERIFY_X509_STRICT
        if not self.verify:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if self.client_certificate:
            _load_client_certificate(context, self.client_certificate, self.client_key,
                                     self.source)  # fmt: skip
        return context


def _load_client_certificate(
    context: ssl.SSLContext, certificate: bytes, key: bytes | None, source: str
) -> None:
    # The ssl module loads a chain only from files: they live in a private directory
    # for the time of the call (the kubernetes package left its copies in /tmp).
    with tempfile.TemporaryDirectory(prefix="ray-operator-tls-") as directory:
        cert_path = os.path.join(directory, "client.crt")
        key_path = os.path.join(directory, "client.key") if key else None
        for path, data in ((cert_path, certificate), (key_path, key)):
            if path and data:
                descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(descriptor, "wb") as handle:
                    handle.write(data)
        try:
            context.load_cert_chain(cert_path, key_path)
        except (ssl.SSLError, OSError) as exc:
            raise KubeconfigError(f"{source}: client certificate and key: {exc}") from None


def load_configuration(kubeconfig: str | None) -> ApiServerConfig:
    """controller-runtime's ``GetConfig`` order: ``kubeconfig`` (``--kubeconfig``), else
    ``$KUBECONFIG``, else in-cluster if the process runs in a pod, else
    ``~/.kube/config``. A ``$KUBECONFIG`` set in a pod wins over the service account,
    as it does for any client-go program."""
    if kubeconfig:
        return load_kubeconfig(kubeconfig)
    paths = [p for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    if len(paths) > 1:
        raise KubeconfigError(
            f"$KUBECONFIG names {len(paths)} files; the operator reads one: pass --kubeconfig "
            "or set $KUBECONFIG to one file (kubectl config view --flatten merges them)"
        )
    if paths:
        return load_kubeconfig(paths[0])
    in_cluster = load_incluster()
    if in_cluster is not None:
        return in_cluster
    return load_kubeconfig(os.path.expanduser("~/.kube/config"))


def proxy_from_environment(server: str) -> str | None:
    """The proxy ``HTTPS_PROXY``/``HTTP_PROXY`` and ``NO_PROXY`` name for ``server``
    (``operator_runtime.runtime.proxy`` has the rules), or None."""
    if not any(os.environ.get(name) for name in PROXY_VARIABLES):
        return None
    # Imported only when a proxy is set: idle RSS is a budget.
    from operator_runtime.runtime.proxy import environment_proxy

    return environment_proxy(server)


def load_incluster(
    environ: Mapping[str, str] | None = None, directory: str = SERVICE_ACCOUNT_DIR
) -> ApiServerConfig | None:
    """The service account's view of the API server, or None outside a pod (no service
    host/port in the environment, or no token file: the ``kubernetes`` package's test)."""
    env = os.environ if environ is None else environ
    host = env.get("KUBERNETES_SERVICE_HOST", "")
    port = env.get("KUBERNETES_SERVICE_PORT", "")
    token_path = os.path.join(directory, "token")
    if not host or not port or not os.path.isfile(token_path):
        return None
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # IPv6
    what = f"in-cluster service account ({directory})"
    try:
        ca_pem = read_bounded(os.path.join(directory, "ca.crt"), f"{what} ca.crt")
        if not ca_pem.strip():
            raise CredentialError(f"{what} ca.crt: empty")
        credentials = TokenFile(token_path, f"{what} token")
    except CredentialError as exc:
        raise KubeconfigError(str(exc)) from None
    return ApiServerConfig(
        server=f"https://{host}:{port}", ca_pem=_pem_text(ca_pem, f"{what} ca.crt"),
        credentials=credentials, source="in-cluster",
    )  # fmt: skip


def load_kubeconfig(path: str) -> ApiServerConfig:
    """One kubeconfig file's current context."""
    try:
        raw = read_bounded(path, "kubeconfig", MAX_KUBECONFIG_BYTES)
    except CredentialError as exc:
        raise KubeconfigError(str(exc)) from None
    try:
        # The one bounded reader of YAML, in client-go's dialect (sigs.k8s.io/yaml).
        document = load_yaml(raw.decode("utf-8"), limits=KUBECONFIG_YAML_LIMITS)
    except UnicodeDecodeError as exc:
        raise KubeconfigError(f"kubeconfig {path}: not UTF-8: {exc}") from None
    except UserYamlError as exc:
        raise KubeconfigError(f"kubeconfig {path}: not YAML: {exc}") from None
    selected = select_context(document, f"kubeconfig {path}")
    reason = unsupported_reason(selected)
    if reason is not None:
        raise KubeconfigError(f"{selected.where}: {reason}")
    for section, entry, known in (("cluster", selected.cluster, CLUSTER_KEYS),
                                  ("user", selected.user, USER_KEYS)):  # fmt: skip
        unknown = sorted(set(entry) - known - UNSUPPORTED_USER_KEYS.keys())
        if unknown:
            log.warning("%s: %s keys %s are not read (client-go ignores them too)",
                        selected.where, section, ", ".join(unknown))  # fmt: skip
    return _build(selected, Path(os.path.abspath(path)).parent)


@dataclass(frozen=True)
class SelectedContext:
    """A kubeconfig's current context with its cluster and user entries."""

    where: str
    context: str
    cluster_name: str
    cluster: Mapping[str, Any]
    user_name: str
    user: Mapping[str, Any]


def _named(document: Mapping[str, Any], section: str, name: str, where: str) -> Any:
    entries = document.get(section) or []
    if not isinstance(entries, list):
        raise KubeconfigError(f"{where}: {section} is not a list")
    for entry in entries:
        if isinstance(entry, dict) and entry.get("name") == name:
            inner = entry.get(section[:-1])
            if inner is None:
                return {}
            if not isinstance(inner, dict):
                raise KubeconfigError(f"{where}: {section[:-1]} {name!r} is not a mapping")
            return inner
    return None


def _required(
    document: Mapping[str, Any], section: str, name: str, where: str, label: str
) -> Mapping[str, Any]:
    found: Mapping[str, Any] | None = _named(document, section, name, where)
    if found is None:
        raise KubeconfigError(f"{where}: {label} {name!r} is not among {section}")
    return found


def select_context(document: Any, where: str) -> SelectedContext:
    """The current context of a parsed kubeconfig, checked for shape."""
    if not isinstance(document, dict):
        raise KubeconfigError(f"{where}: not a kubeconfig (not a mapping)")
    name = document.get("current-context")
    if not name or not isinstance(name, str):
        raise KubeconfigError(f"{where}: no current-context")
    context = _required(document, "contexts", name, where, "current-context")
    where = f"{where} (context {name!r})"
    cluster_name = context.get("cluster")
    if not cluster_name or not isinstance(cluster_name, str):
        raise KubeconfigError(f"{where}: the context names no cluster")
    cluster = _required(document, "clusters", cluster_name, where, "cluster")
    user_name = context.get("user") or ""
    if not isinstance(user_name, str):
        raise KubeconfigError(f"{where}: the context's user is not a name")
    user = _required(document, "users", user_name, where, "user") if user_name else {}
    return SelectedContext(where, name, cluster_name, cluster, user_name, user)


def unsupported_reason(selected: SelectedContext) -> str | None:
    """Why this context cannot be used, naming the key and what to use instead; None
    when we read it."""
    for key in sorted(set(selected.user) & UNSUPPORTED_USER_KEYS.keys()):
        return f"user {selected.user_name!r} {key}: {UNSUPPORTED_USER_KEYS[key]}"
    plugin = selected.user.get("exec")
    token = selected.user.get("token") or selected.user.get("tokenFile")
    if plugin is not None and not token:
        if not isinstance(plugin, dict):
            return f"user {selected.user_name!r} exec: not a mapping"
        if plugin.get("apiVersion") not in EXEC_API_VERSIONS:
            return (f"user {selected.user_name!r} exec apiVersion {plugin.get('apiVersion')!r}: "
                    f"not supported (v1alpha1 was removed in Kubernetes 1.24); use "
                    f"{EXEC_API_VERSIONS[0]} or {EXEC_API_VERSIONS[1]}")  # fmt: skip
    return None


def _pem_text(data: bytes, what: str) -> str:
    try:
        return data.decode("ascii")
    except UnicodeDecodeError:
        raise KubeconfigError(f"{what}: not PEM text") from None


class _Reader:
    """Reads one context's fields, naming each in its errors."""

    def __init__(self, selected: SelectedContext, base: Path) -> None:
        self.selected = selected
        self.base = base

    def where(self, section: str, key: str) -> str:
        s = self.selected
        owner = f"cluster {s.cluster_name!r}" if section == "cluster" else f"user {s.user_name!r}"
        return f"{s.where}: {owner} {key}"

    def entry(self, section: str) -> Mapping[str, Any]:
        return self.selected.cluster if section == "cluster" else self.selected.user

    def string(self, section: str, key: str) -> str | None:
        value = self.entry(section).get(key)
        if value is None or value == "":
            return None
        if not isinstance(value, str):
            raise KubeconfigError(f"{self.where(section, key)}: not a string")
        return value

    def path(self, section: str, key: str) -> str | None:
        value = self.string(section, key)
        return None if value is None else str(self.base / os.path.expanduser(value))

    def file_or_data(self, section: str, key: str) -> bytes | None:
        """``key-data`` (base64, wins, as in client-go) or the file named by ``key``."""
        data = self.string(section, f"{key}-data")
        if data is not None:
            try:
                return base64.b64decode(data, validate=True)
            except (binascii.Error, ValueError):
                raise KubeconfigError(f"{self.where(section, key + '-data')}: not base64") from None
        path = self.path(section, key)
        if path is None:
            return None
        try:
            return read_bounded(path, self.where(section, key))
        except CredentialError as exc:
            raise KubeconfigError(str(exc)) from None


def _build(selected: SelectedContext, base: Path) -> ApiServerConfig:
    reader = _Reader(selected, base)
    server = reader.string("cluster", "server")
    if server is None or not server.startswith(("https://", "http://")):
        raise KubeconfigError(f"{reader.where('cluster', 'server')}: not an http(s) URL")
    ca = reader.file_or_data("cluster", "certificate-authority")
    ca_pem = _pem_text(ca, reader.where("cluster", "certificate-authority")) if ca else None
    skip = selected.cluster.get("insecure-skip-tls-verify", False)
    if not isinstance(skip, bool):
        raise KubeconfigError(f"{reader.where('cluster', 'insecure-skip-tls-verify')}: "
                              "not true or false")  # fmt: skip
    proxy = reader.string("cluster", "proxy-url")
    if proxy is not None and not proxy.startswith(("http://", "https://")):
        scheme = proxy.split(":")[0]
        raise KubeconfigError(
            f"{reader.where('cluster', 'proxy-url')}: {scheme!r} proxies are not supported "
            "(the operator bundles no SOCKS client); use an HTTP CONNECT proxy (http:// or "
            "https://)"
        )
    certificate = reader.file_or_data("user", "client-certificate")
    key = reader.file_or_data("user", "client-key")
    credentials: Credentials = NoCredentials()
    rotate = False
    try:
        token = reader.string("user", "token")
        token_file = reader.path("user", "tokenFile")
        if token is not None:  # wins over tokenFile, as in the kubernetes package
            credentials = StaticToken(token)
        elif token_file is not None:
            credentials = TokenFile(token_file, reader.where("user", "tokenFile"))
        elif selected.user.get("exec") is not None:
            plugin = _exec_plugin(reader, ca_pem)
            first = run_exec_plugin(plugin)
            credentials = ExecCredentials(plugin, first)
            rotate = not certificate  # a kubeconfig's own certificate wins
            if first.client_certificate and not certificate:
                certificate, key = first.client_certificate, first.client_key
    except CredentialError as exc:
        raise KubeconfigError(str(exc)) from None
    impersonation: tuple[tuple[str, str], ...] = ()
    if IMPERSONATION_KEYS & selected.user.keys():
        # Imported only for a kubeconfig that impersonates: idle RSS is a budget.
        from operator_runtime.runtime.impersonation import (
            ImpersonationError,
            read_impersonation,
        )

        try:
            impersonation = tuple(read_impersonation(
                selected.user, f"{selected.where}: user {selected.user_name!r}"
            ).headers())  # fmt: skip
        except ImpersonationError as exc:
            raise KubeconfigError(str(exc)) from None
    config = ApiServerConfig(
        server=server.rstrip("/"), ca_pem=ca_pem, verify=not skip,
        tls_server_name=reader.string("cluster", "tls-server-name"),
        client_certificate=certificate, client_key=key, credentials=credentials,
        rotate_client_certificate=rotate, impersonation=impersonation, proxy=proxy,
        source=selected.where,
    )  # fmt: skip
    config.ssl_context()  # a bad CA or certificate is a load error, naming the kubeconfig
    return config


def _exec_plugin(reader: _Reader, ca_pem: str | None) -> ExecPlugin:
    plugin: Mapping[str, Any] = reader.selected.user["exec"]
    where = reader.where("user", "exec")
    api_version = str(plugin["apiVersion"])
    command = plugin.get("command")
    if not command or not isinstance(command, str):
        raise KubeconfigError(f"{where}: no command")
    if os.sep in command and not os.path.isabs(command):
        command = str(reader.base / command)  # kubectl: relative to the kubeconfig
    args = plugin.get("args") or []
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise KubeconfigError(f"{where}: args is not a list of strings")
    env: list[tuple[str, str]] = []
    for item in plugin.get("env") or []:
        if not (isinstance(item, dict) and isinstance(item.get("name"), str)
                and isinstance(item.get("value"), str)):  # fmt: skip
            raise KubeconfigError(f"{where}: env entries need a string name and value")
        env.append((item["name"], item["value"]))
    mode = plugin.get("interactiveMode")
    if mode not in (None, "Never", "IfAvailable", "Always"):
        raise KubeconfigError(f"{where}: interactiveMode {mode!r} is not "
                              "Never, IfAvailable or Always")  # fmt: skip
    if mode == "Always":
        raise KubeconfigError(f"{where}: interactiveMode Always needs a terminal; "
                              "an operator has none")  # fmt: skip
    cluster = reader.selected.cluster if plugin.get("provideClusterInfo") else None
    install_hint = plugin.get("installHint") or ""
    if not isinstance(install_hint, str):
        raise KubeconfigError(f"{where}: installHint is not a string")
    return ExecPlugin(
        api_version=api_version, command=command, args=tuple(args), env=tuple(env),
        exec_info=exec_info(api_version, cluster, ca_pem), what=where,
        install_hint=install_hint,
    )  # fmt: skip
