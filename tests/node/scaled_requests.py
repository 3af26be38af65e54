"""KubeRay's e2e clusters are sized for its CI's kind node of four cores; this node has two.
For the packages whose clusters would not fit (all but ``test_kuberay_e2e.WHOLE_NODE_PACKAGES``), a
mutating admission webhook served by the test process halves the CPU *requests* of every
Ray pod either operator makes, so the scheduler places what kind's node would.

Limits are left as the test wrote them, and Ray counts a pod's CPUs from its limit (or
``num-cpus``), so each Ray node is the size the test asked for: only the scheduler's sum
changes, and it changes alike for both operators. The webhook selects pods by the label
both operators put on theirs (``app.kubernetes.io/created-by=kuberay-operator``), and
fails closed: a pod it could not scale is refused, so a run never silently goes back to
the unscaled sizes.

Why a webhook: the kubelet reports the machine's cores as the node's capacity and has no
setting to report more, and KubeRay's tests are run unchanged.
"""

from __future__ import annotations

import base64
import contextlib
import json
import math
import ssl
import threading
from collections.abc import Iterator, Mapping
from fractions import Fraction
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from hack.localcluster import LocalCluster
from operator_runtime.api.labels import CREATED_BY_KUBERAY, LabelKey
from operator_runtime.render.quantity import parse_quantity

SCALE = Fraction(1, 2)
"""This node's cores over KubeRay CI's kind node's."""

NAME = "pulumi-ray-e2e-cpu-requests"
RAY_PODS: Mapping[str, str] = {LabelKey.CREATED_BY.value: CREATED_BY_KUBERAY}
"""The label both operators put on every pod they make."""

MAX_REVIEW_BYTES = 4 * 1024 * 1024
"""An AdmissionReview larger than this is refused unread (a pod is far smaller)."""


def scaled_cpu_requests(pod: Mapping[str, Any], scale: Fraction = SCALE) -> list[dict[str, str]]:
    """JSON-patch operations replacing each container's CPU request with ``scale`` times
    it, rounded up to a millicore (never to zero); containers without one are left."""
    operations = []
    spec = pod.get("spec") or {}
    for field in ("initContainers", "containers"):
        for index, container in enumerate(spec.get(field) or ()):
            cpu = ((container.get("resources") or {}).get("requests") or {}).get("cpu")
            if cpu is None:
                continue
            millis = max(1, math.ceil(parse_quantity(cpu) * 1000 * scale))
            path = f"/spec/{field}/{index}/resources/requests/cpu"
            operations.append({"op": "replace", "path": path, "value": f"{millis}m"})
    return operations


def review_response(review: Mapping[str, Any], scale: Fraction = SCALE) -> dict[str, Any]:
    """The AdmissionReview answering ``review``: allowed, with the scaling patch."""
    request = review["request"]
    response: dict[str, Any] = {"uid": request["uid"], "allowed": True}
    operations = scaled_cpu_requests(request.get("object") or {}, scale)
    if operations:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(json.dumps(operations).encode()).decode()
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": response}  # fmt: skip


class _Handler(BaseHTTPRequestHandler):
    scaled: list[str]

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if not 0 < length <= MAX_REVIEW_BYTES:
            self.send_error(413 if length else 411)
            return
        try:
            answer = review_response(json.loads(self.rfile.read(length)))
        except (ValueError, KeyError, TypeError) as error:
            self.send_error(400, str(error)[:200])
            return
        if "patch" in answer["response"]:
            self.scaled.append(answer["response"]["uid"])
        body = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass  # one line per pod would bury the suite's own output


@contextlib.contextmanager
def cpu_requests_scaled(
    cluster: LocalCluster, work_dir: Path, selector: Mapping[str, str] = RAY_PODS
) -> Iterator[list[str]]:
    """Serve the webhook on loopback (where the API server, in the same sandbox, calls
    it) with a certificate from the cluster's CA, and register it for the pods
    ``selector`` matches; yields the UIDs of the admission requests it patched.
    Unregistered and stopped on exit."""
    cert, key = cluster.pki.issue_pem(NAME, server_addresses=("127.0.0.1",))
    work_dir.mkdir(parents=True, exist_ok=True)
    (work_dir / "tls.crt").write_bytes(cert)
    (work_dir / "tls.key").write_bytes(key)
    (work_dir / "tls.key").chmod(0o600)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(work_dir / "tls.crt", work_dir / "tls.key")
    scaled: list[str] = []
    handler = type("Handler", (_Handler,), {"scaled": scaled})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, name=NAME, daemon=True)
    thread.start()
    configuration = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": NAME},
        "webhooks": [{
            "name": "cpu-requests.e2e.pulumi-ray.invalid",
            "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            "failurePolicy": "Fail",
            "timeoutSeconds": 10,
            "objectSelector": {"matchLabels": dict(selector)},
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                       "resources": ["pods"], "scope": "Namespaced"}],
            "clientConfig": {
                "url": f"https://127.0.0.1:{server.server_address[1]}/mutate",
                "caBundle": base64.b64encode(cluster.pki.ca_cert.read_bytes()).decode(),
            },
        }],
    }  # fmt: skip
    try:
        cluster.apply(input=json.dumps(configuration))
        yield scaled
    finally:
        cluster.kubectl("delete", "mutatingwebhookconfiguration", NAME, "--ignore-not-found")
        server.shutdown()
        server.server_close()
