"""``python -m operator_runtime`` started wrongly: one clear line on stderr and a
non-zero exit, never a traceback. Real processes, a real control plane where one is
needed (the port-in-use case gets past the API server check)."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from hack.localcluster import LocalCluster
from hack.localcluster.cluster import free_port


def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "operator_runtime", *args],
        capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip


def one_line(result: subprocess.CompletedProcess[str], code: int = 1) -> str:
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ray-operator: "), result.stderr
    return lines[0]


def test_version() -> None:
    result = run("--version")
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout.startswith("ray-operator ") and "KubeRay v1.7.0" in result.stdout


def test_a_missing_kubeconfig(tmp_path: Path) -> None:
    line = one_line(run(f"--kubeconfig={tmp_path / 'nope'}"))
    assert line == f"ray-operator: kubeconfig {tmp_path / 'nope'}: no such file"


def test_a_bad_kubeconfig(tmp_path: Path) -> None:
    garbage = tmp_path / "kubeconfig"
    garbage.write_text("clusters: [\n")
    assert one_line(run(f"--kubeconfig={garbage}")).startswith(
        f"ray-operator: kubeconfig {garbage}: "
    )
    empty = tmp_path / "empty"
    empty.write_text("apiVersion: v1\nkind: Config\n")
    assert one_line(run(f"--kubeconfig={empty}")).startswith(f"ray-operator: kubeconfig {empty}: ")


def test_no_kubeconfig_at_all(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "operator_runtime"],
        capture_output=True, text=True, timeout=60, check=False,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(Path.cwd())},
    )  # fmt: skip
    assert "pass --kubeconfig" in one_line(result)


def test_an_unreachable_api_server(tmp_path: Path) -> None:
    port = free_port()  # nothing listens there
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: x\n"
        f"clusters: [{{name: c, cluster: {{server: 'https://127.0.0.1:{port}'}}}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
    )
    line = one_line(run(f"--kubeconfig={kubeconfig}"))
    assert line.startswith(
        f"ray-operator: cannot reach the API server at https://127.0.0.1:{port}: "
    )
    assert "Connection refused" in line


def test_a_port_in_use(local_cluster: LocalCluster) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        flags = {"metrics": "--metrics-addr", "health": "--health-probe-bind-address"}
        for name, flag in flags.items():
            # The other address is a free port, not its default: a test of the chart's
            # arguments binds the defaults (:8080, :8082) meanwhile on another worker.
            (other,) = (f for f in flags.values() if f != flag)
            line = one_line(
                run(
                    f"--kubeconfig={local_cluster.kubeconfig}",
                    f"{flag}=127.0.0.1:{port}",
                    f"{other}=127.0.0.1:{free_port()}",
                    "--enable-leader-election=false",
                )
            )
            assert line == (
                f"ray-operator: cannot listen on 127.0.0.1:{port} ({name}): Address already in use"
            )


def test_a_bad_address(local_cluster: LocalCluster) -> None:
    health = f"--health-probe-bind-address=127.0.0.1:{free_port()}"  # not the default :8082
    line = one_line(
        run(f"--kubeconfig={local_cluster.kubeconfig}", "--metrics-addr=localhost", health)
    )
    assert line == "ray-operator: metrics address 'localhost' is not [host]:port"


def test_an_unknown_flag_is_a_usage_error() -> None:
    result = run("--no-such-flag")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "unrecognized arguments: --no-such-flag" in result.stderr
