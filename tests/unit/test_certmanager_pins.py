"""``hack.certmanager``'s pin agrees with its wrapper module, and the wrapper's main
starts the controllers the module docstring names."""

from __future__ import annotations

import re

from hack import certmanager


def test_wrapper_module_pins_the_version() -> None:
    go_mod = (certmanager.GOMOD_DIR / "go.mod").read_text()
    module = re.escape(certmanager.MODULE)
    found = re.search(rf"^\s*(?:require\s+)?{module} (\S+)", go_mod, re.MULTILINE)
    assert found is not None and found.group(1) == certmanager.VERSION
    go_sum = (certmanager.GOMOD_DIR / "go.sum").read_text()
    assert f"{certmanager.MODULE} {certmanager.VERSION} h1:" in go_sum


def test_main_starts_only_the_mtls_controllers() -> None:
    main = (certmanager.GOMOD_DIR / "main.go").read_text()
    listed = re.search(r"var enabled = \[\]string\{(.*?)\}", main, re.DOTALL)
    assert listed is not None
    assert re.findall(r'"([^"]+)"', listed.group(1)) == [
        "issuers",
        "certificaterequests-approver",
        "certificaterequests-issuer-ca",
        "certificaterequests-issuer-selfsigned",
        "certificates-trigger",
        "certificates-key-manager",
        "certificates-request-manager",
        "certificates-issuing",
        "certificates-readiness",
    ]
    imported = set(re.findall(r'"github.com/cert-manager/cert-manager/(pkg/[^"]+)"', main))
    assert not {path for path in imported if re.search(r"acme|vault|venafi|webhook", path)}
