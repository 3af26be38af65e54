"""Run the component provider: ``python -m pulumi_ray.provider <engine address>``, or
this directory as a script (``python components/provider <engine address>``), which is how
a Pulumi Python language host runs a plugin directory with a ``PulumiPlugin.yaml``.

Run as a directory, this file has no package (``__package__`` is empty) and the plugin
directory itself is ``sys.path[0]``; the package that contains it is imported by its
directory's name instead, so the relative imports inside it hold whatever name the
package is installed under.
"""

import importlib
import sys
from pathlib import Path

if __package__:
    from . import serve
else:
    _here = Path(__file__).resolve().parent
    # The plugin directory on the path would let its modules shadow top-level ones.
    sys.path[0] = str(_here.parents[1])
    serve = importlib.import_module(f"{_here.parent.name}.{_here.name}").serve

serve()
