"""The proxy from the environment follows Go's ``ProxyFromEnvironment``."""

from __future__ import annotations

import pytest

from operator_runtime.runtime.proxy import environment_proxy

PROXY = {"HTTPS_PROXY": "http://proxy:3128"}


@pytest.mark.parametrize(("server", "no_proxy", "proxied"), [
    ("https://api.example.com:6443", "", True),
    ("https://api.example.com:6443", "*", False),
    ("https://api.example.com:6443", "example.com", False),
    ("https://example.com:6443", "example.com", False),
    ("https://example.com:6443", ".example.com", True),
    ("https://api.example.com:6443", ".example.com", False),
    ("https://api.example.com:6443", "*.example.com", False),
    ("https://api.example.com:6443", "api.example.com:443", True),
    ("https://api.example.com:6443", "api.example.com:6443", False),
    ("https://notexample.com:6443", "example.com", True),
    ("https://10.1.2.3:6443", "10.0.0.0/8", False),
    ("https://10.1.2.3:6443", "10.1.2.3", False),
    ("https://10.1.2.3:6443", "192.168.0.0/16, other", True),
    ("https://[fd00::1]:6443", "fd00::/8", False),
    ("https://127.0.0.1:6443", "", False),
    ("https://localhost:6443", "", False),
])  # fmt: skip
def test_no_proxy_rules(server: str, no_proxy: str, proxied: bool) -> None:
    found = environment_proxy(server, {**PROXY, "NO_PROXY": no_proxy})
    assert (found == "http://proxy:3128") is proxied


def test_the_scheme_picks_the_variable_and_a_bare_host_means_http() -> None:
    assert environment_proxy("http://api:80", PROXY) is None
    assert environment_proxy("http://api:80", {"http_proxy": "proxy:8080"}) == "http://proxy:8080"
    assert environment_proxy("https://api", {"https_proxy": "p:1"}) == "http://p:1"
    assert environment_proxy("https://api", {}) is None
