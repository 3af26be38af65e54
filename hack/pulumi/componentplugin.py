"""``pulumi-resource-ray``: the component provider as an executable plugin.

The Python language host we can build (sdk/v3 v3.79.0) cannot run a plugin directory
(``components/provider/PulumiPlugin.yaml``, ``runtime: python``): its RunPlugin runs
``python <RunPluginRequest.program>``, a field today's engine leaves empty (see
``versions.py``). An executable named ``pulumi-resource-<package>`` needs no language
host: the engine starts it with its own address as the first argument and reads the
port from its stdout, as it does the Kubernetes provider. This one is a shell script
that runs this checkout's plugin directory (``python components/provider``, as a current
CLI would) with the project's interpreter. Not ``python -m pulumi_ray.provider``: the
virtualenv's editable install of ``pulumi_ray`` may be another worktree's (worktrees
share one virtualenv), and a test must run the components it tests.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from hack.pulumi.environment import python_executable

PLUGIN_DIRECTORY = Path(__file__).resolve().parents[2] / "components" / "provider"
"""This checkout's ``components/provider`` (its ``__main__`` imports the checkout's own
packages: the directory's parents come first on ``sys.path``)."""

__all__ = ["PLUGIN_NAME", "write_provider_plugin"]

PLUGIN_NAME = "pulumi-resource-ray"


def write_provider_plugin(directory: Path) -> Path:
    """Write the executable ``pulumi-resource-ray`` into ``directory`` (created if missing)
    and return its path. Put ``directory`` on PATH (the CLI takes ``pulumi-resource-*``
    from there) or name it in a project's ``plugins.providers``."""
    directory.mkdir(parents=True, exist_ok=True)
    script = directory / PLUGIN_NAME
    python = shlex.quote(str(python_executable()))
    plugin_directory = shlex.quote(str(PLUGIN_DIRECTORY))
    script.write_text(
        "#!/bin/sh\n"
        "# The pulumi-ray component provider (hack/pulumi/componentplugin.py wrote this).\n"
        f'exec {python} {plugin_directory} "$@"\n'
    )
    script.chmod(0o755)
    return script
