"""Run a container of the operator image the way a kubelet and runc would, without either.

Our own launcher because this machine (like many CI runners) has no container runtime,
and the proof the image must give is the pod's, not a process's: the image's root
filesystem, read-only; a tmpfs ``/tmp`` (the Deployment's emptyDir); ``/proc``; a
``/dev`` of null, zero, random and urandom; the ServiceAccount's token, ``ca.crt`` and
``namespace`` read-only at ``/var/run/secrets/kubernetes.io/serviceaccount``; an
``/etc/hosts`` naming ``localhost`` and the pod, as the kubelet writes one; the image's
user (numeric and not root, as ``runAsNonRoot`` demands), no supplementary groups, no
capabilities (bounding set included) and ``no_new_privs``; the environment the image,
the kubelet and the container spec give, and nothing from this machine's.

``launch`` starts ``unshare --mount --uts`` on this module; the inner process (``main``)
builds the mounts in its new mount namespace, chroots, drops its privileges and then
becomes the container's process (``exec``): the pid ``launch`` returns is the operator's,
so a SIGTERM reaches it as the kubelet's would. No ``--fork`` and no PID namespace:
neither is needed for a mount namespace, and ``unshare --fork`` ignores SIGTERM.
Not reproduced: the seccomp profile and a network namespace of its own (the operator
shares the sandbox's, where the local API server listens on loopback).
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any, Final

from hack.image import config_document

__all__ = [
    "SERVICE_ACCOUNT_DIR",
    "ContainerRun",
    "ImageConfig",
    "image_config",
    "launch",
    "service_account_files",
]

SERVICE_ACCOUNT_DIR: Final = "/var/run/secrets/kubernetes.io/serviceaccount"
DEFAULT_PATH: Final = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
"""What runc's callers (containerd, CRI-O) put in the environment when the image has no PATH."""
DEVICES: Final = ("null", "zero", "random", "urandom")
HOSTS_SUFFIX: Final = ".hosts"
"""Beside the spec file: the container's ``/etc/hosts``, which ``launch`` writes."""

_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 0x1, 0x2, 0x4, 0x8
_MS_REMOUNT, _MS_BIND, _MS_REC = 0x20, 0x1000, 0x4000
_PR_CAPBSET_DROP, _PR_SET_NO_NEW_PRIVS, _PR_CAP_AMBIENT = 24, 38, 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_LINUX_CAPABILITY_VERSION_3 = 0x20080522


@dataclass(frozen=True)
class ImageConfig:
    """The parts of an OCI image config a runtime reads to start a container."""

    entrypoint: tuple[str, ...]
    cmd: tuple[str, ...]
    env: tuple[str, ...]
    """``NAME=value`` entries, in the image's order."""
    user: str
    workdir: str


def image_config(layout: Path) -> ImageConfig:
    """The config of the one image in an OCI layout."""
    config: dict[str, Any] = config_document(layout).get("config") or {}
    return ImageConfig(
        entrypoint=tuple(config.get("Entrypoint") or ()),
        cmd=tuple(config.get("Cmd") or ()),
        env=tuple(config.get("Env") or ()),
        user=str(config.get("User") or ""),
        workdir=str(config.get("WorkingDir") or "/"),
    )


@dataclass(frozen=True)
class ContainerRun:
    """One container of a pod: the image and what the pod spec and the kubelet add."""

    root: str
    """The image's unpacked root filesystem."""
    image: ImageConfig
    command: tuple[str, ...]
    """The container's ``command``; empty runs the image's entrypoint, as Kubernetes does."""
    args: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    """The container's env and the kubelet's (``KUBERNETES_SERVICE_HOST``...), which win
    over the image's."""
    service_account: str
    """A directory with ``token``, ``ca.crt`` and ``namespace``, mounted read-only."""
    hostname: str
    """The pod's name: a container's hostname, from which the operator names itself."""
    tmp_size: str = "64m"


def launch(run: ContainerRun, spec_file: Path, output: IO[bytes]) -> subprocess.Popen[bytes]:
    """Start the container; its output goes to ``output``, like a runtime's log pipe."""
    spec_file.write_text(json.dumps(asdict(run)))
    # The kubelet's hosts file for a pod on the pod network; the container shares this
    # sandbox's network, so its own name is loopback too.
    spec_file.with_suffix(HOSTS_SUFFIX).write_text(
        f"127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
        f"127.0.0.1\t{run.hostname}\n"
    )
    repo_root = Path(__file__).resolve().parents[2]
    return subprocess.Popen(
        ["unshare", "--mount", "--uts", "--propagation", "private", "--",
         sys.executable, "-m", "hack.image.run", str(spec_file)],
        stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
        # Only what the launcher itself needs; the container's env is built from scratch.
        env={"PATH": os.environ.get("PATH", DEFAULT_PATH), "PYTHONPATH": str(repo_root)},
    )  # fmt: skip


def _load(spec_file: Path) -> ContainerRun:
    raw = json.loads(spec_file.read_text())
    image = raw["image"]
    return ContainerRun(
        root=raw["root"],
        image=ImageConfig(
            entrypoint=tuple(image["entrypoint"]), cmd=tuple(image["cmd"]),
            env=tuple(image["env"]), user=image["user"], workdir=image["workdir"],
        ),
        command=tuple(raw["command"]), args=tuple(raw["args"]),
        env=tuple((name, value) for name, value in raw["env"]),
        service_account=raw["service_account"], hostname=raw["hostname"],
        tmp_size=raw["tmp_size"],
    )  # fmt: skip


class ContainerError(RuntimeError):
    """The container cannot be started as its pod spec says (a kubelet's CreateContainerError)."""


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        raise ContainerError(f"{what}: {os.strerror(ctypes.get_errno())}")


def _mount(
    source: str | None, target: Path, fstype: str | None, flags: int, data: str = ""
) -> None:
    _check(
        _libc().mount(
            source.encode() if source else None, str(target).encode(),
            fstype.encode() if fstype else None, flags, data.encode() if data else None,
        ),
        f"mount {source or fstype} on {target}",
    )  # fmt: skip


def _in_root(root: Path, path: str) -> Path:
    """``path`` as the container sees it, under ``root``: a symlink in the image (Debian's
    ``/var/run -> /run``) is followed inside the image, never into this machine."""
    current, parts, hops = root, list(PurePosixPath(path).parts[1:]), 0
    while parts:
        part = parts.pop(0)
        if part == "..":
            current = current.parent if current != root else root
            continue
        candidate = current / part
        if candidate.is_symlink():
            hops += 1
            if hops > 40:
                raise ContainerError(f"{path}: too many symlinks in the image")
            target = PurePosixPath(os.readlink(candidate))
            if target.is_absolute():
                current, target = root, target.relative_to("/")
            parts = [*target.parts, *parts]
            continue
        current = candidate
    return current


def _user(root: Path, user: str) -> tuple[int, int, str]:
    """(uid, gid, home) of the image's user. ``runAsNonRoot`` refuses a name (the kubelet
    cannot tell whether it is root) and uid 0."""
    uid_text, _, gid_text = user.partition(":")
    if not uid_text.isdigit() or (gid_text and not gid_text.isdigit()):
        raise ContainerError(
            f"image config User {user!r}: runAsNonRoot needs a numeric user to verify"
        )
    uid = int(uid_text)
    if uid == 0:
        raise ContainerError("image config User is root (uid 0) and the pod has runAsNonRoot")
    gid, home = 0, "/"
    passwd = _in_root(root, "/etc/passwd")
    if passwd.is_file():
        for line in passwd.read_text().splitlines():
            fields = line.split(":")
            if len(fields) >= 6 and fields[2] == uid_text:
                gid, home = int(fields[3]), fields[5] or "/"
                break
    return uid, int(gid_text) if gid_text else gid, home


def _container_env(run: ContainerRun, home: str) -> dict[str, str]:
    """The image's env, then the pod's; PATH, HOSTNAME and HOME as runtimes add them."""
    env = dict(entry.partition("=")[::2] for entry in run.image.env)
    env.setdefault("PATH", DEFAULT_PATH)
    env["HOSTNAME"] = run.hostname
    env.update(run.env)
    env.setdefault("HOME", home)
    return env


def _argv(run: ContainerRun) -> list[str]:
    """Kubernetes' rule: ``command`` replaces the entrypoint (and drops Cmd); ``args``
    replace Cmd."""
    if run.command:
        return [*run.command, *run.args]
    return [*run.image.entrypoint, *(run.args or run.image.cmd)]


def _mount_point(root: Path, path: str, *, file: bool = False) -> Path:
    # As runc does: mount points missing from the image are made before it turns read-only.
    target = _in_root(root, path)
    if file:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.touch(exist_ok=True)
    else:
        target.mkdir(parents=True, exist_ok=True)
    return target


def _build_filesystem(run: ContainerRun, hosts: Path) -> Path:
    root = Path(run.root).resolve()
    _mount(str(root), root, None, _MS_BIND | _MS_REC)
    hidden = _MS_NOSUID | _MS_NODEV | _MS_NOEXEC
    _mount("proc", _mount_point(root, "/proc"), "proc", hidden)
    _mount("tmpfs", _mount_point(root, "/tmp"), "tmpfs", _MS_NOSUID | _MS_NODEV,
           f"mode=1777,size={run.tmp_size}")  # fmt: skip
    dev = _mount_point(root, "/dev")
    _mount("tmpfs", dev, "tmpfs", _MS_NOSUID | _MS_NOEXEC, "mode=755,size=64k")
    for device in DEVICES:
        _mount(f"/dev/{device}", _mount_point(root, f"/dev/{device}", file=True), None, _MS_BIND)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                         ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):  # fmt: skip
        (dev / name).symlink_to(target)
    _mount(str(hosts), _mount_point(root, "/etc/hosts", file=True), None, _MS_BIND)
    secrets = _mount_point(root, SERVICE_ACCOUNT_DIR)
    _mount(run.service_account, secrets, None, _MS_BIND)
    _mount(None, secrets, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | hidden)
    # Last: the root itself read-only (readOnlyRootFilesystem); the mounts above keep theirs.
    _mount(None, root, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY)
    return root


def _drop_privileges(uid: int, gid: int) -> None:
    """No groups, no capability in any set (bounding and ambient too), no_new_privs, then
    the user: what ``capabilities.drop: [ALL]`` and ``allowPrivilegeEscalation: false``
    give a container."""
    libc = _libc()
    last = int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    for capability in range(last + 1):
        _check(libc.prctl(_PR_CAPBSET_DROP, capability, 0, 0, 0), f"drop capability {capability}")
    _check(libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "clear ambient")
    _check(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)  # clears the permitted and effective sets
    header = (ctypes.c_uint32 * 2)(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable (two words each)
    _check(libc.capset(header, data), "clear the inheritable capabilities")


def _start(run: ContainerRun, hosts: Path) -> None:
    root = _build_filesystem(run, hosts)
    uid, gid, home = _user(root, run.image.user)
    hostname = run.hostname.encode()
    _check(_libc().sethostname(hostname, len(hostname)), "sethostname")
    os.chroot(root)
    os.chdir(run.image.workdir or "/")
    _drop_privileges(uid, gid)
    env, command = _container_env(run, home), _argv(run)
    if not command:
        raise ContainerError("no command: the image has no entrypoint and the pod gives none")
    try:
        # execvpe looks the program up in the container's PATH, as runc does.
        os.execvpe(command[0], command, env)
    except OSError as error:
        raise ContainerError(
            f"exec {command[0]!r} (PATH={env['PATH']}): {error.strerror}"
        ) from None


def main(arguments: Sequence[str]) -> int:
    (spec_file,) = arguments
    try:
        _start(_load(Path(spec_file)), Path(spec_file).with_suffix(HOSTS_SUFFIX))
    except ContainerError as error:
        print(f"container: {error}", file=sys.stderr)
        return 128
    return 0  # not reached: the container's process replaced this one


def service_account_files(directory: Path, files: Mapping[str, str]) -> Path:
    """A projected-volume stand-in: ``files`` written world-readable (the kubelet's
    default mode 0644) under ``directory``, itself traversable by the container's user."""
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o755)
    for name, text in files.items():
        (directory / name).write_text(text)
        (directory / name).chmod(0o644)
    return directory


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
