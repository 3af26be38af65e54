"""Run a Python policy pack through the engine we build.

The engine (pkg/v3 v3.259) runs a pack directory through its language host's RunPlugin,
and no longer sends the deprecated ``program`` field; our Python host (sdk/v3 v3.79) only
reads that field, so it starts ``python ''`` in the stack's directory, which runs the
stack's own ``__main__.py`` (a directory argument means its ``__main__``), not the pack.
The engine also takes an executable as ``--policy-pack`` and starts it directly with the
engine's address, so this writes one that starts the pack's ``__main__.py`` with the pack's own
interpreter: the analyzer protocol (GetAnalyzerInfo, config, Analyze, enforcement) is
the engine's, only the start differs. With a newer Python host, pass the directory.
"""

from __future__ import annotations

import shlex
from pathlib import Path


def launcher(pack_dir: Path, python: Path, into: Path) -> Path:
    """An executable in ``into`` that serves the pack in ``pack_dir`` with ``python``."""
    into.mkdir(parents=True, exist_ok=True)
    script = into / f"pulumi-analyzer-{pack_dir.name}"
    main = pack_dir / "__main__.py"
    # -u: the engine reads the analyzer's port from its first line of stdout.
    script.write_text(
        f'#!/bin/sh\nexec {shlex.quote(str(python))} -u {shlex.quote(str(main))} "$@"\n'
    )
    script.chmod(0o755)
    return script
