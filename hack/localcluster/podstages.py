"""How kwok plays the container runtime for pods: the Stage config it is started with.

Without a pod Stage in its config kwok v0.7.0 uses its built-in "fast" stages: every pod
becomes Running and Ready with an IP, a pod owned by a Job is completed (Succeeded, exit
code 0) at once, and a deleted pod goes. ``kwok/pod-stages.yaml`` is those three stages
with one change: a pod labelled ``RUN_FOR_REAL_LABEL: "true"`` is never completed, so a
test can run the pod's command for real (``tests/podrunner.py``) and write its terminal
status itself, with the real exit code. All other pods behave as with the built-ins.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

RUN_FOR_REAL_LABEL: Final = "pulumi-ray.test/run-for-real"
"""Set to ``"true"`` on a pod (e.g. through a RayJob's ``submitterPodTemplate``)."""

STAGES_FILE: Final = Path(__file__).resolve().parent / "kwok" / "pod-stages.yaml"
"""Passed to kwok as ``--config``; names ``RUN_FOR_REAL_LABEL`` in a selector."""
