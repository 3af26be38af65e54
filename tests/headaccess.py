"""What a test needs to reach a Ray head the way the operator would.

- Direct addressing: the operator dials ``<head-svc>.<ns>.svc.cluster.local``, which
  only cluster DNS would resolve. ``mapped_host`` maps such a name to an address in the
  sandbox's private ``/etc/hosts`` for as long as a ``with`` block lasts.
- Through the API server's service proxy (``--use-kubernetes-proxy``): ``ApiServerTls``
  is the server URL, a TLS context trusting its CA with the client certificate loaded,
  and the ``Authorization`` header for a token user, read from a kubeconfig through the
  same loader the operator uses, so it feeds
  ``DashboardPool(verify=access.ssl_context, headers=access.headers)`` or httpx directly.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from hack import sandbox
from operator_runtime.runtime.transport import load_configuration

__all__ = ["ApiServerTls", "apiserver_tls", "mapped_host"]


@contextmanager
def mapped_host(name: str, address: str = "127.0.0.1") -> Iterator[str]:
    """``name`` resolves to ``address`` in this sandbox inside the block; yields ``name``."""
    sandbox.add_host(name, address)
    try:
        yield name
    finally:
        sandbox.remove_host(name)


@dataclass(frozen=True)
class ApiServerTls:
    server: str
    ssl_context: ssl.SSLContext
    headers: dict[str, str] = field(default_factory=dict)


def apiserver_tls(kubeconfig: str | os.PathLike[str]) -> ApiServerTls:
    """The API server of ``kubeconfig``'s current context, and how to authenticate to it."""
    configuration = load_configuration(os.fspath(kubeconfig))
    headers = {}
    authorization = configuration.credentials.authorization()
    if authorization:
        headers["Authorization"] = authorization  # "Bearer <token>"
    return ApiServerTls(configuration.server, configuration.ssl_context(), headers)
