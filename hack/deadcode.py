"""``python -m hack.deadcode``: code of the operator and the components that nothing uses
(``make lint`` runs it).

Uses are looked for everywhere in the repository (tests, hack, benchmarks, examples);
findings are reported only for ``operator_runtime`` and ``components``, so a helper the
tests rely on is live, and a function only its own module mentions is not. Names that
something outside Python's sight uses (pydantic, pytest, Pulumi, the standard library's
hooks) are listed, with the reason, in ``hack/deadcode_whitelist.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import vulture

ROOT = Path(__file__).resolve().parent.parent
REPORTED = ("operator_runtime", "components")
SEARCHED = (*REPORTED, "hack", "benchmarks", "tests", "examples", "__main__.py")
WHITELIST = ROOT / "hack" / "deadcode_whitelist.py"
# components/status.py is generated from the API models' status fields (which vulture
# does check): its keys are a wire schema the component provider reads by name.
EXCLUDED = ["hack/localcluster/gomod", "*/.venv/*", "*/components/status.py"]


def main() -> int:
    scanner = vulture.Vulture()
    scanner.scavenge([str(ROOT / p) for p in SEARCHED] + [str(WHITELIST)], exclude=EXCLUDED)
    reported = [ROOT / p for p in REPORTED]
    found = [
        item
        for item in scanner.get_unused_code()
        if any(Path(item.filename).resolve().is_relative_to(p) for p in reported)
    ]
    for item in found:
        print(item.get_report())
    if found:
        print(
            f"{len(found)} unused names: remove them, or list them with the reason in "
            f"{WHITELIST.relative_to(ROOT)}",
            file=sys.stderr,
        )
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
