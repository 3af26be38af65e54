"""An image's Debian base: pinned bookworm packages, extracted, never installed.

A ``Base`` says what an image's base is made of: the packages it roots at, the
dependencies it leaves out, its lock file and its user. ``lock()`` resolves the
dependency closure of its roots against the apt sources this machine has
(``/etc/apt/sources.list.d/debian.sources``, the same on a fresh CI machine) and writes
the lock: one package a line with its version, architecture, sha256, size and URL.
Another architecture's closure (the operator image's arm64 base) is resolved the same
way from a private copy of apt's indexes for it (``update_indexes``), so the machine's
own apt configuration is never changed. ``fetch()`` downloads exactly those files into
the cache and checks each hash (the mirror is plain HTTP; the hashes come from apt's
signed indexes). ``extract()`` unpacks them the
way distroless images are made: no maintainer scripts, no dpkg database, so no package
manager or apt, and what a postinst would generate is made here. What a scanner needs to
know which packages are there is written the way distroless writes it: each package's
control paragraph as ``/var/lib/dpkg/status.d/<package>`` (``STATUS_DIR``), read by
Trivy, Grype and syft, with no ``/var/lib/dpkg/status`` for a package manager.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from hack import gobuild
from hack.image.user import ImageUser

ARCH = "amd64"
"""The build machine's architecture: the default of every lock. The operator image locks
each of its platforms (``Base.lock_path``); the other images are amd64 only."""

INSTALL_MACHINERY: Mapping[str, str] = {
    # What installing needs, and a root filesystem that is never installed into lacks.
    "debconf": "maintainer-script configuration; no maintainer script runs",
    "debconf-2.0": "the virtual name of debconf",
    "perl-base": "needed only by debconf and maintainer scripts",
    "dpkg": "no package manager in the image",
}

DROPPED_PATHS = (
    "usr/share/doc",
    "usr/share/man",
    "usr/share/info",
    "usr/share/locale",
    "usr/share/lintian",
    "usr/share/bug",
    "usr/share/gcc",
    "usr/share/gdb",
    "usr/share/ca-certificates",  # folded into the bundle below
    "usr/sbin/update-ca-certificates",
    "etc/ca-certificates",
    "usr/lib/python3.11/config-3.11-*-linux-gnu",
)
"""Documentation, locales, and what only a postinst or a compiler reads (glob patterns)."""


@dataclass(frozen=True)
class Base:
    """One image's Debian base."""

    lock_file: Path
    roots: tuple[str, ...]
    """The packages asked for; the lock holds their dependency closure."""
    excluded: Mapping[str, str]
    """Dependencies left out, each with why: the lock's header repeats them."""
    user: ImageUser
    links: Mapping[str, str]
    """Symlinks a postinst or an alternative would make (``usr/bin/python``), to their targets."""
    lock_command: str
    """How this base's lock is written (``python -m hack.image lock``), for messages."""
    providers: Mapping[str, str] = field(default_factory=dict)
    """The package chosen for a purely virtual name a dependency asks for (``awk``)."""
    status_entries: bool = False
    """Whether the root filesystem lists its packages in ``STATUS_DIR`` for scanners."""

    def lock_path(self, arch: str = ARCH) -> Path:
        """The lock of ``arch``'s packages: ``lock_file`` for the build machine's,
        ``<stem>-<arch>.lock`` beside it for another."""
        if arch == ARCH:
            return self.lock_file
        return self.lock_file.with_name(f"{self.lock_file.stem}-{arch}{self.lock_file.suffix}")

    @property
    def refresh(self) -> str:
        """What to do when the mirror has dropped a locked version."""
        return (
            f"refresh the lock with `{self.lock_command}` and commit "
            f"{self.lock_file.relative_to(Path(__file__).resolve().parents[2])}"
        )


OPERATOR = Base(
    lock_file=Path(__file__).resolve().parent / "debian.lock",
    roots=(
        "python3.11-minimal",
        "libpython3.11-minimal",
        "libpython3.11-stdlib",
        "ca-certificates",
        "tzdata",
        "netbase",  # /etc/services and /etc/protocols, which socket lookups read
    ),
    excluded={
        **INSTALL_MACHINERY,
        "openssl": "the CLI; Python links libssl3, and the CA bundle is generated here",
        # Libraries only stdlib modules the operator never imports load (checked in the
        # image test: operator_runtime imports in the unpacked root).
        "libreadline8": "readline: interactive prompts only",
        "readline-common": "readline: interactive prompts only",
        "libncursesw6": "curses: terminals only",
        "libtinfo6": "curses and readline: terminals only",
        "libnsl2": "the nis module (NIS/YP), removed from Python 3.13",
        "libtirpc3": "only through libnsl2",
        "libdb5.3": "the dbm.ndbm module; shelve/dbm fall back to dbm.dumb",
    },
    user=ImageUser(
        name="nonroot",
        uid=65532,
        group="nonroot",
        gid=65532,
        home="home/nonroot",
        home_mode=0o700,
        shell="/sbin/nologin",
    ),
    links={"usr/bin/python": "python3.11"},
    lock_command="python -m hack.image lock",
    status_entries=True,
)
"""The operator image's base: Python and what its ssl and zoneinfo read, nothing else
(no shell)."""

CA_BUNDLE = "etc/ssl/certs/ca-certificates.crt"
STATUS_DIR = "var/lib/dpkg/status.d"


@dataclass(frozen=True)
class Package:
    """One locked .deb."""

    name: str
    version: str
    arch: str
    sha256: str
    size: int
    url: str

    @property
    def file_name(self) -> str:
        return self.url.rsplit("/", 1)[-1]

    def line(self) -> str:
        return f"{self.name} {self.version} {self.arch} {self.sha256} {self.size} {self.url}"


def progress(message: str) -> None:
    gobuild.progress("image", message)


def read_lock(path: Path) -> list[Package]:
    packages = []
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, version, arch, sha256, size, url = line.split()
        packages.append(Package(name, version, arch, sha256, int(size), url))
    return packages


# --- lock ------------------------------------------------------------------------------


def _indexes_dir(arch: str) -> Path:
    return gobuild.cache_root() / "image" / f"apt-{arch}"


def _apt_options(arch: str) -> list[str]:
    """apt's options to read ``arch``'s indexes: none for the build machine's own; for
    another, the private lists ``update_indexes`` writes (the same sources, keyring and
    signature checks as the machine's, no package state)."""
    if arch == ARCH:
        return []
    state = _indexes_dir(arch)
    return [
        "-o", f"APT::Architecture={arch}", "-o", f"APT::Architectures::={arch}",
        "-o", f"Dir::State::Lists={state / 'lists'}", "-o", f"Dir::Cache={state / 'cache'}",
        "-o", "Dir::State::status=/dev/null", "-o", "Debug::NoLocking=1",
    ]  # fmt: skip


def update_indexes(arch: str) -> None:
    """Download ``arch``'s package indexes from the machine's apt sources into the cache
    (apt checks their signatures); the machine's own indexes stay as they are."""
    if arch == ARCH:
        return
    state = _indexes_dir(arch)
    for directory in (state / "lists" / "partial", state / "cache" / "archives" / "partial"):
        directory.mkdir(parents=True, exist_ok=True)
    progress(f"updating apt's {arch} indexes in {state}")
    subprocess.run(["apt-get", "-q", *_apt_options(arch), "update"], check=True)
    _show.cache_clear()


@functools.cache
def _show(name: str, arch: str = ARCH) -> dict[str, str] | None:
    """apt's candidate record of one package, or None for a purely virtual name."""
    found = subprocess.run(
        ["apt-cache", *_apt_options(arch), "show", "--no-all-versions", f"{name}:{arch}"],
        capture_output=True,
        text=True,
    )
    if found.returncode != 0 or not found.stdout.strip():
        return None
    record: dict[str, str] = {}
    key = ""
    for line in found.stdout.split("\n\n", 1)[0].splitlines():
        if line.startswith(" ") and key:
            record[key] += "\n" + line
        elif ":" in line:
            key, _, value = line.partition(":")
            record[key] = value.strip()
    return record


def _dependencies(record: dict[str, str]) -> list[list[str]]:
    """Depends and Pre-Depends as groups of alternatives, versions and arch tags dropped."""
    text = ", ".join(v for k in ("Pre-Depends", "Depends") if (v := record.get(k)))
    groups = []
    for group in filter(None, (g.strip() for g in text.split(","))):
        groups.append([re.split(r"[\s(:]", a.strip(), maxsplit=1)[0] for a in group.split("|")])
    return groups


def _closure(base: Base, arch: str) -> dict[str, dict[str, str]]:
    records: dict[str, dict[str, str]] = {}
    pending = list(base.roots)
    while pending:
        name = pending.pop()
        if name in records or name in base.excluded:
            continue
        record = _show(name, arch)
        if record is None:
            raise RuntimeError(f"apt knows no package {name!r}: run `apt-get update` first")
        records[name] = record
        for named in _dependencies(record):
            alternatives = [base.providers.get(a, a) for a in named]
            if any(a in base.excluded or a in records for a in alternatives):
                continue
            real = next((a for a in alternatives if _show(a, arch) is not None), None)
            if real is None:
                raise RuntimeError(f"{name} depends on {alternatives}, none of which apt has")
            pending.append(real)
    return records


def _uris(records: dict[str, dict[str, str]], arch: str) -> dict[str, str]:
    """The mirror URL of each candidate, as apt itself would download it."""
    printed = subprocess.run(
        ["apt-get", *_apt_options(arch), "download", "--print-uris",
         *(f"{n}:{arch}={r['Version']}" for n, r in sorted(records.items()))],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    uris = {}
    for line in printed.splitlines():
        url = line.split()[0].strip("'")
        # The file name is URL-quoted (libstdc%2b%2b6_...); the package name is not.
        uris[urllib.parse.unquote(url.rsplit("/", 1)[-1]).split("_", 1)[0]] = url
    return uris


def _packages(records: dict[str, dict[str, str]], arch: str) -> list[Package]:
    uris = _uris(records, arch)
    return [
        Package(name, r["Version"], r["Architecture"], r["SHA256"], int(r["Size"]), uris[name])
        for name, r in sorted(records.items())
    ]


def locate(names: tuple[str, ...]) -> list[Package]:
    """Exactly ``names``, without their dependencies, as apt's current indexes have them:
    for a tool that is only run from its extracted files (its libraries are the host's)."""
    records = {}
    for name in names:
        record = _show(name)
        if record is None:
            raise RuntimeError(f"apt knows no package {name!r}: run `apt-get update` first")
        records[name] = record
    return _packages(records, ARCH)


def lock(base: Base, arch: str = ARCH) -> list[Package]:
    """Resolve ``base``'s closure for ``arch`` from apt's current indexes and write its
    lock file (``base.lock_path(arch)``)."""
    update_indexes(arch)
    packages = _packages(_closure(base, arch), arch)
    resolved = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    header = [
        f"# The image's Debian packages ({base.lock_command} writes this; commit it).",
        f"{SNAPSHOT_PREFIX}{resolved}",
        f"# The dependency closure of: {' '.join(base.roots)}",
        "# minus what a distroless image leaves out, and why:",
        *(f"#   {name}: {why}" for name, why in sorted(base.excluded.items())),
        "# package version arch sha256 size url",
    ]
    base.lock_path(arch).write_text("\n".join([*header, *(p.line() for p in packages)]) + "\n")
    return packages


# --- fetch and extract ------------------------------------------------------------------


def cache_dir() -> Path:
    return gobuild.cache_root() / "image" / "debs"


def _sha256(path: Path) -> str:
    import hashlib

    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def fetch(
    packages: list[Package],
    directory: Path | None = None,
    refresh: str = OPERATOR.refresh,
    timestamp: str | None = None,
) -> list[Path]:
    """The locked .debs from the cache (``directory``, the image's by default),
    downloading (and checking) what is missing; ``refresh`` says how to renew the lock
    when neither the mirror nor, given the lock's ``timestamp``, snapshot.debian.org has
    a version any more."""
    directory = directory or cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for package in packages:
        path = directory / package.file_name
        if not (path.is_file() and _sha256(path) == package.sha256):
            _download(package, path, refresh, timestamp)
        paths.append(path)
    return paths


MIRROR = "http://deb.debian.org/"
SNAPSHOT = "https://snapshot.debian.org/archive/"
SNAPSHOT_PREFIX = "# snapshot: "
"""A lock's header line naming the time it was resolved at (``20261129T120000Z``)."""


def snapshot_url(url: str, timestamp: str) -> str | None:
    """``url`` (the main mirror's) in snapshot.debian.org's archive as it was at
    ``timestamp``, where Debian keeps every version it ever published; None for a URL
    of another mirror."""
    if not url.startswith(MIRROR):
        return None
    archive, _, pool = url.removeprefix(MIRROR).partition("/")
    return f"{SNAPSHOT}{archive}/{timestamp}/{pool}"


def lock_timestamp(path: Path) -> str | None:
    """The time a lock was resolved at, from its header, if it records one."""
    for line in path.read_text().splitlines():
        if line.startswith(SNAPSHOT_PREFIX):
            return line.removeprefix(SNAPSHOT_PREFIX).strip()
    return None


def _download(package: Package, path: Path, refresh: str, timestamp: str | None = None) -> None:
    """Download from the lock's URL; when the mirror has dropped the version (Debian's
    point releases remove superseded ones), from snapshot.debian.org at ``timestamp``."""
    progress(f"downloading {package.name} {package.version}")
    partial = path.with_name(path.name + ".partial")
    fallback = snapshot_url(package.url, timestamp) if timestamp else None
    try:
        try:
            _copy(package.url, partial)
        except urllib.error.HTTPError as error:
            if fallback is None or error.code != 404:
                raise
            progress(f"{package.url}: 404; trying {fallback}")
            _copy(fallback, partial)
    except urllib.error.HTTPError as error:
        partial.unlink(missing_ok=True)
        raise RuntimeError(
            f"the mirror no longer has {package.name} {package.version} ({package.url}: HTTP "
            f"{error.code}; Debian drops superseded versions"
            f"{f', and {fallback} failed too' if fallback else ''}): {refresh}"
        ) from error
    except OSError as error:
        partial.unlink(missing_ok=True)
        raise RuntimeError(
            f"could not download {package.name} {package.version} from {package.url} "
            f"({error}); the build needs Debian's mirror, outside the sandbox"
        ) from error
    actual = _sha256(partial)  # the same check whichever URL served it
    if actual != package.sha256:
        partial.unlink()
        raise RuntimeError(
            f"{package.name} {package.version} from {package.url} has sha256 {actual}, but "
            f"the lock says {package.sha256}: the mirror changed the file; {refresh}"
        )
    partial.rename(path)


def _copy(url: str, out: Path) -> None:
    with urllib.request.urlopen(url, timeout=120) as response, out.open("wb") as stream:
        shutil.copyfileobj(response, stream)


def extract(debs: list[Path], root: Path, base: Base) -> None:
    """Unpack the .debs' files under ``root``, then do what their postinsts would."""
    for deb in debs:
        subprocess.run(["dpkg-deb", "--extract", str(deb), str(root)], check=True)
        if base.status_entries:
            _status_entry(deb, root)
    _ca_bundle(root)
    for pattern in DROPPED_PATHS:
        for target in sorted(root.glob(pattern)):
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            else:
                target.unlink()
    _system_files(root, base)


def _status_entry(deb: Path, root: Path) -> None:
    """The package's control paragraph as its ``STATUS_DIR`` file, as distroless writes
    it: what a scanner reads to know the package, its version and its source package."""
    control = subprocess.run(
        ["dpkg-deb", "--field", str(deb)], capture_output=True, text=True, check=True
    ).stdout
    name = next(line for line in control.splitlines() if line.startswith("Package:"))
    entry = root / STATUS_DIR / name.partition(":")[2].strip()
    entry.parent.mkdir(parents=True, exist_ok=True)
    entry.write_text(control if control.endswith("\n") else control + "\n")
    entry.chmod(0o644)


def _ca_bundle(root: Path) -> None:
    """The bundle update-ca-certificates writes: every shipped certificate, in the sorted
    order ca-certificates' postinst lists them in /etc/ca-certificates.conf."""
    shipped = root / "usr/share/ca-certificates"
    certificates = sorted(shipped.rglob("*.crt"), key=lambda p: p.relative_to(shipped).as_posix())
    if not certificates:
        raise RuntimeError(f"ca-certificates shipped no certificates under {shipped}")
    bundle = root / CA_BUNDLE
    bundle.parent.mkdir(parents=True, exist_ok=True)
    with bundle.open("w") as out:
        for certificate in certificates:
            text = certificate.read_text()
            out.write(text if text.endswith("\n") else text + "\n")
    bundle.chmod(0o644)


NSSWITCH = "".join(
    f"{database}: {sources}\n"
    for database, sources in (
        ("passwd", "files"), ("group", "files"), ("shadow", "files"), ("hosts", "files dns"),
        ("networks", "files"), ("protocols", "files"), ("services", "files"),
    )
)  # fmt: skip
"""glibc reads these for getpwuid and name lookups; its compiled-in default for hosts
would try nis first."""


def _system_files(root: Path, base: Base) -> None:
    etc = root / "etc"
    etc.mkdir(exist_ok=True)
    user = base.user
    for name, text in (
        ("passwd", user.passwd()), ("group", user.group_file()), ("nsswitch.conf", NSSWITCH),
    ):  # fmt: skip
        (etc / name).write_text(text)
        (etc / name).chmod(0o644)
    # tzdata's postinst would link the configured zone; UTC is what a pod expects.
    localtime = etc / "localtime"
    localtime.unlink(missing_ok=True)
    localtime.symlink_to("/usr/share/zoneinfo/Etc/UTC")
    for link, target in base.links.items():
        (root / link).unlink(missing_ok=True)
        (root / link).symlink_to(target)
    for directory, mode in (("tmp", 0o1777), (user.home, user.home_mode), ("root", 0o700)):
        (root / directory).mkdir(parents=True, exist_ok=True)
        os.chmod(root / directory, mode)
