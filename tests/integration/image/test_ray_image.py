"""The Ray image ``make ray-image`` built (hack/image/ray): reproducible, configured as
Ray's own image is, and able to run what the operator renders into a Ray pod.

The image is unpacked once per module and run by ``hack.image.run`` as a container
would be (its user 1000:100, no capabilities, its env, a kubelet's ``/etc/hosts``).
The probes and commands come from the render layer, for a RayCluster at the pinned Ray
version (below 2.53, so the probes are KubeRay's ``wget ... | grep success`` execs):
each probe is run in the image against a small HTTP server on 127.0.0.1 at the ports it
dials, answering ``success`` (the probe passes), answering a failure (it fails), and with
nothing listening (it fails). The containers' scripts are checked in the image's bash,
and every ``ray`` subcommand and flag they use against the image's ``ray`` CLI. Only
loopback is dialled.
"""

from __future__ import annotations

import contextlib
import json
import shlex
import threading
from collections.abc import Callable, Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from hack import sandbox
from hack.image import ImageBuild, config_document, manifest, root_filesystem
from hack.image.ray import RAY_IMAGE, RAY_VERSION, built
from hack.image.ray import build as ray_build
from hack.image.run import ContainerRun, ImageConfig, image_config, service_account_files
from operator_runtime.api import RayCluster
from operator_runtime.api.labels import NodeType
from operator_runtime.render import PodParams, build_pod
from tests.integration.image.containers import Ran, run_to_end
from tests.integration.image.rebuild import assert_builds_again_the_same
from tests.integration.image.records import record_mismatches

REPO_ROOT = Path(__file__).resolve().parents[3]
RUN_SECONDS = 120.0
"""Bounds one command in the image; importing ray and ray.serve takes a few seconds."""
PROBE_PORTS = (52365, 8265)
"""The raylet's health check (dashboard agent) and the GCS's (dashboard), KubeRay's."""


# --- what the operator renders ----------------------------------------------------------


def _rendered_pods() -> dict[str, dict[str, Any]]:
    """A head and a worker pod of a RayCluster at the pinned version, as rendered."""
    template = {"spec": {"containers": [{"name": "ray", "image": RAY_IMAGE}]}}
    cluster = RayCluster.model_validate(
        {
            "metadata": {"name": "probe", "namespace": "ray"},
            "spec": {
                "rayVersion": RAY_VERSION,
                "headGroupSpec": {"rayStartParams": {}, "template": template},
                "workerGroupSpecs": [
                    {"groupName": "workers", "rayStartParams": {}, "template": template}
                ],
            },
        }
    )
    return {
        node_type.value: build_pod(
            params=PodParams(cluster=cluster, node_type=node_type, group_name="workers")
        )
        for node_type in (NodeType.HEAD, NodeType.WORKER)
    }


PODS = _rendered_pods()
PROBES = {
    f"{pod}-{kind}": tuple(container[kind]["exec"]["command"])
    for pod, rendered in PODS.items()
    for container in rendered["spec"]["containers"]
    for kind in ("readinessProbe", "livenessProbe")
}
SCRIPTS = {
    f"{pod}-{container['name']}": (*container["command"], *container.get("args", ()))
    for pod, rendered in PODS.items()
    for container in (*rendered["spec"].get("initContainers", ()), *rendered["spec"]["containers"])
}


# --- running in the image ---------------------------------------------------------------


Run = Callable[[Sequence[str]], Ran]


@pytest.fixture(scope="module")
def image() -> ImageBuild:
    return built()


@pytest.fixture(scope="module")
def config(image: ImageBuild) -> ImageConfig:
    return image_config(image.layout)


@pytest.fixture(scope="module")
def run(image: ImageBuild, config: ImageConfig, tmp_path_factory: pytest.TempPathFactory) -> Run:
    """Run a command in a container of the image (as a pod's ``command``) to its end."""
    root = root_filesystem(image)
    directory = tmp_path_factory.mktemp("ray-image")
    secrets = service_account_files(directory / "serviceaccount", {})
    runs = iter(range(1_000_000))

    def run_command(command: Sequence[str]) -> Ran:
        number = next(runs)
        container = ContainerRun(
            root=str(root), image=config, command=tuple(command), args=(), env=(),
            service_account=str(secrets), hostname="ray-head",
        )  # fmt: skip
        return run_to_end(container, directory, f"run-{number}", RUN_SECONDS)

    return run_command


# --- the image --------------------------------------------------------------------------


def test_building_again_from_the_cached_inputs_gives_the_same_digest(
    image: ImageBuild, tmp_path: Path
) -> None:
    assert_builds_again_the_same(
        image, ray_build.build, tmp_path / "again", "was the recipe changed since `make ray-image`?"
    )


def test_every_installed_files_record_is_borne_out_by_the_image(image: ImageBuild) -> None:
    # The programs' rows are written again for the scripts the build writes (their
    # shebang names the image's python, not this machine's).
    root = root_filesystem(image)
    assert (root / "usr/local/bin/ray").is_file()
    assert record_mismatches(root / "usr/lib/python3/dist-packages") == []


def test_the_config_is_ray_images(image: ImageBuild) -> None:
    settings = config_document(image.layout)["config"]
    # No entrypoint, as Ray's image: a pod's command (/bin/bash -c --) is what runs.
    assert not settings.get("Entrypoint")
    assert settings["Cmd"] == ["/bin/bash"]
    assert settings["User"] == "1000:100"
    assert settings["WorkingDir"] == "/home/ray"
    env = dict(entry.split("=", 1) for entry in settings["Env"])
    assert "/usr/local/bin" in env["PATH"].split(":")
    assert env["LANG"] == "C.UTF-8"
    # The dashboard's start bounds, raised for loaded nodes (hack/image/ray/build.py).
    assert float(env["RAY_DASHBOARD_SUBPROCESS_MODULE_WAIT_READY_TIMEOUT"]) >= 300
    assert float(env["RAY_DASHBOARD_STARTUP_TIMEOUT_S"]) >= 300
    assert settings["Labels"]["org.opencontainers.image.version"] == RAY_VERSION
    assert len(manifest(image.layout)["layers"]) == 3


def test_the_ray_version_is_the_one_the_tests_pin() -> None:
    pins = dict(
        line.strip().split("==", 1)
        for line in (REPO_ROOT / "constraints.txt").read_text().splitlines()
        if "==" in line and not line.startswith("#")
    )
    assert pins["ray"] == RAY_VERSION
    assert RAY_IMAGE.split(":") == ["rayproject/ray", pins["ray"]]


def test_the_user_owns_its_home_and_may_write_tmp(run: Run) -> None:
    # hack.image.run mounts the root read-only (the operator's pods are), so the home's
    # writability is read from its owner and mode; /tmp is the tmpfs a pod would write.
    ran = run(["bash", "-c", "id -u; id -g; echo $HOME; stat -c %u:%g:%a ~ /tmp; "
                             "mkdir /tmp/ray && echo wrote /tmp/ray"])  # fmt: skip
    assert ran.returncode == 0, ran.output
    assert ran.output.splitlines() == [
        "1000", "100", "/home/ray", "1000:100:755", "0:0:1777", "wrote /tmp/ray",
    ]  # fmt: skip


def test_python_and_ray(run: Run) -> None:
    ran = run(["python", "--version"])
    assert ran.returncode == 0 and ran.output.startswith("Python 3.11."), ran.output
    ran = run(["python3", "-c", "import ray, ray.serve; print(ray.__version__)"])
    assert ran.returncode == 0, ran.output
    assert ran.output.strip().splitlines()[-1] == RAY_VERSION
    ran = run(["ray", "--version"])
    assert ran.returncode == 0 and RAY_VERSION in ran.output, ran.output


def test_the_tools_a_pod_runs_are_there(run: Run) -> None:
    ran = run(["bash", "-c", "grep --version; sed --version; wget --version; ps --version; "
                             "openssl version; echo a | sh -c 'grep a'"])  # fmt: skip
    assert ran.returncode == 0, ran.output
    # openssl: what KubeRay's TLS sample makes its certificates with, as Ray's image has it.
    for program in ("GNU grep", "GNU sed", "GNU Wget", "procps-ng", "OpenSSL 3"):
        assert program in ran.output


# --- the probes the operator renders ----------------------------------------------------


class _Answer(BaseHTTPRequestHandler):
    """Every GET gets the server's ``answer``; paths asked are recorded."""

    server: _ProbeServer

    def do_GET(self) -> None:
        status, body = self.server.answer
        self.server.asked.append(self.path)
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


class _ProbeServer(ThreadingHTTPServer):
    def __init__(self, port: int, answer: tuple[int, bytes]) -> None:
        super().__init__(("127.0.0.1", port), _Answer)
        self.answer = answer
        self.asked: list[str] = []


@contextlib.contextmanager
def _answering(answer: tuple[int, bytes]) -> Iterator[list[str]]:
    """Servers on 127.0.0.1 at the probes' ports, all answering ``answer``; the paths
    they were asked."""
    asked: list[str] = []
    servers = [_ProbeServer(port, answer) for port in PROBE_PORTS]
    threads = [
        threading.Thread(target=s.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        for s in servers
    ]
    for thread in threads:
        thread.start()
    try:
        yield asked
    finally:
        for server, thread in zip(servers, threads, strict=True):
            server.shutdown()
            server.server_close()
            thread.join()
            asked.extend(server.asked)


@pytest.mark.parametrize("probe", sorted(PROBES), ids=str)
def test_each_rendered_probe_passes_only_when_ray_answers_success(run: Run, probe: str) -> None:
    command = PROBES[probe]
    assert "wget" in command[-1], f"rayVersion {RAY_VERSION}: expected KubeRay's exec probe"
    # Other tests may bind these ports (a Ray head's dashboard): take turns with them.
    with sandbox.fixed_ports(*PROBE_PORTS):
        with _answering((200, b"success")) as asked:
            passed = run(command)
        assert passed.returncode == 0, f"{probe} failed against 'success': {passed.output}"
        dialled = set(asked)
        assert dialled, f"{probe} passed without asking either server"
        for answer in ((503, b"Local Raylet failed"), (200, b"unhealthy")):
            with _answering(answer):
                failed = run(command)
            assert failed.returncode != 0, f"{probe} passed against {answer}"
        unanswered = run(command)
        assert unanswered.returncode != 0, f"{probe} passed with nothing listening"
    expected = {"/api/local_raylet_healthz"} | (
        {"/api/gcs_healthz"} if probe.startswith("head") else set()
    )
    assert dialled == expected


# --- the containers' scripts ------------------------------------------------------------


@pytest.fixture(scope="module")
def ray_cli_options(run: Run) -> dict[str, set[str]]:
    """Each subcommand of the image's ``ray`` CLI and its options, from click itself."""
    program = (
        "import json\n"
        "from ray.scripts.scripts import cli\n"
        "print(json.dumps({name: sorted(o for p in c.params for o in p.opts)"
        " for name, c in cli.commands.items()}))\n"
    )
    ran = run(["python", "-c", program])
    assert ran.returncode == 0, ran.output
    options: dict[str, list[str]] = json.loads(ran.output.strip().splitlines()[-1])
    return {name: set(opts) for name, opts in options.items()}


def _ray_invocations(script: str) -> list[tuple[str, list[str]]]:
    """Each ``ray <subcommand>`` in a shell script, with the ``--flags`` it passes."""
    lexer = shlex.shlex(script, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    tokens = list(lexer)
    found = []
    for index, token in enumerate(tokens):
        if token == "ray" and index + 1 < len(tokens):
            flags = []
            for word in tokens[index + 2 :]:
                if word[0] in ";&|<>()" or word in ("then", "do", "done", "fi"):
                    break
                if word.startswith("--"):
                    flags.append(word.split("=", 1)[0])
            found.append((tokens[index + 1], flags))
    return found


@pytest.mark.parametrize("container", sorted(SCRIPTS), ids=str)
def test_each_rendered_container_script_is_one_the_image_runs(
    run: Run, ray_cli_options: dict[str, set[str]], container: str
) -> None:
    command = SCRIPTS[container]
    assert command[:3] == ("/bin/bash", "-c", "--"), command
    script = command[3]
    # The script parses in the image's bash (-n: read, not run).
    checked = run(["/bin/bash", "-n", "-c", script])
    assert checked.returncode == 0, checked.output
    invocations = _ray_invocations(script)
    assert invocations, f"{container} runs no ray command: {script!r}"
    for subcommand, flags in invocations:
        assert subcommand in ray_cli_options, f"ray {RAY_VERSION} has no `ray {subcommand}`"
        unknown = [flag for flag in flags if flag not in ray_cli_options[subcommand]]
        assert unknown == [], f"`ray {subcommand}` of ray {RAY_VERSION} has no {unknown}"
