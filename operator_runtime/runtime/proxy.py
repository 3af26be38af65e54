"""Which proxy carries the operator's requests to the API server: a cluster's
``proxy-url``, else ``HTTPS_PROXY``/``HTTP_PROXY`` minus ``NO_PROXY``, read once at
start, as client-go's ``http.ProxyFromEnvironment`` reads them.

Hand-written rather than ``urllib.request``'s ``getproxies``/``proxy_bypass``: those
differ from Go's rules, which kubectl users have learnt (no CIDR entries in
``NO_PROXY``, and loopback is proxied), and the module is not otherwise loaded.
Go's rules, followed here:

- ``https://`` servers use ``HTTPS_PROXY``, ``http://`` ones ``HTTP_PROXY`` (upper case
  first, then lower case); a value without a scheme means ``http://``;
- ``localhost`` and loopback addresses are never proxied;
- ``NO_PROXY`` is a comma-separated list: ``*`` (nothing is proxied), an IP address, a
  CIDR range, a domain (itself and its subdomains) or ``.domain`` / ``*.domain`` (its
  subdomains only), each optionally with ``:port``.
"""

from __future__ import annotations

import ipaddress
import os
import urllib.parse
from collections.abc import Mapping


def environment_proxy(server: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The proxy URL the environment names for ``server``, or None to go direct."""
    env = os.environ if environ is None else environ
    parts = urllib.parse.urlsplit(server)
    names = ("HTTPS_PROXY", "https_proxy") if parts.scheme == "https" else (
        "HTTP_PROXY", "http_proxy")  # fmt: skip
    proxy = next((env[name] for name in names if env.get(name)), "")
    if not proxy:
        return None
    host = (parts.hostname or "").lower()
    port = parts.port or (443 if parts.scheme == "https" else 80)
    if host == "localhost" or _is_loopback(host):
        return None
    no_proxy = next((env[name] for name in ("NO_PROXY", "no_proxy") if env.get(name)), "")
    if any(_bypasses(entry.strip().lower(), host, port) for entry in no_proxy.split(",")):
        return None
    return proxy if "://" in proxy else f"http://{proxy}"


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _bypasses(entry: str, host: str, port: int) -> bool:
    """Whether one ``NO_PROXY`` entry keeps ``host:port`` off the proxy."""
    if not entry:
        return False
    if entry == "*":
        return True
    try:
        return ipaddress.ip_address(host) in ipaddress.ip_network(entry, strict=False)
    except ValueError:
        pass  # not an address in a range: a name, or a name with a port
    entry_host, _, entry_port = entry.rpartition(":") if _has_port(entry) else (entry, "", "")
    if entry_port and entry_port != str(port):
        return False
    entry_host = entry_host.strip("[]")
    if entry_host.startswith("*."):
        entry_host = entry_host[1:]
    if entry_host.startswith("."):
        return host.endswith(entry_host)
    return host == entry_host or host.endswith("." + entry_host)


def _has_port(entry: str) -> bool:
    """``name:port`` or ``[v6]:port`` (a bare IPv6 address has colons but no port)."""
    if entry.startswith("["):
        return "]:" in entry
    return entry.count(":") == 1
