"""``python -m tests.node.nested STATE_DIR READY_FILE``, inside a sandbox: a control plane
with a real node, one pod run to Ready on it, then its own pid written to READY_FILE,
and a wait to be killed (``test_node_leaves_nothing.py``)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from tests.node.harness import OPERATOR_IMAGE, start_real_node_cluster
from tests.waiting import wait_for


def main(state_dir: Path, ready_file: Path) -> None:
    cluster = start_real_node_cluster(state_dir)
    sleeper = {"name": "sleeper", "image": OPERATOR_IMAGE,
               "command": ["python3.11", "-c", "import time; time.sleep(3600)"]}  # fmt: skip
    pod = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "sleeper", "namespace": "default"},
        "spec": {"containers": [sleeper]},
    }  # fmt: skip
    cluster.kubectl("apply", "-f", "-", input=json.dumps(pod))
    wait_for(
        "the sleeper pod to run",
        lambda: cluster.get_json("-n", "default", "pod", "sleeper")["status"].get("phase")
        == "Running",
        timeout=120, interval=0.5,
    )  # fmt: skip
    ready_file.write_text(str(os.getpid()))
    time.sleep(3600)  # until killed


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
