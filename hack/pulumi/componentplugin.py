"""``pulumi-resource-ray``: the component provider as an executable plugin.

The Python language host we can build (sdk/v3 v3.79.0) cannot run a plugin directory
(``components/provider/PulumiPlugin.yaml``, ``runtime: python``): its RunPlugin runs
``python <RunPluginRequest.program>``, a field today's engine leaves empty (see
``versions.py``). An executable named ``pulumi-resource-<package>`` needs no language
host: the engine starts it with its own address as the first argument and reads the
port from its stdout, as it does the Kubernetes provider. This one is a shell script
that runs ``python -m pulumi_ray.provider`` with the project's interpreter, whose
editable install of this checkout serves its components.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from hack.pulumi.environment import python_executable

__all__ = ["PLUGIN_NAME", "write_provider_plugin"]

PLUGIN_NAME = "pulumi-resource-ray"


def write_provider_plugin(directory: Path) -> Path:
    """Write the executable ``pulumi-resource-ray`` into ``directory`` (created if missing)
    and return its path. Put ``directory`` on PATH (the CLI takes ``pulumi-resource-*``
    from there) or name it in a project's ``plugins.providers``."""
    directory.mkdir(parents=True, exist_ok=True)
    script = directory / PLUGIN_NAME
    python = shlex.quote(str(python_executable()))
    script.write_text(
        "#!/bin/sh\n"
        "# The pulumi-ray component provider (hack/pulumi/componentplugin.py wrote this).\n"
        f'exec {python} -m pulumi_ray.provider "$@"\n'
    )
    script.chmod(0o755)
    return script
