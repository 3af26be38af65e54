"""The real node's pins agree where they are written: versions.py and the wrapper
go.mod/go.sum files; the Debian lock holds what the node extracts; every binary the node
promises is built by one recipe, and CoreDNS compiles in exactly the plugins named."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hack import gobuild
from hack.node import build, debs, versions
from hack.node.build import GOMOD_DIR
from tests.gomodpins import assert_wrapper_pins


@pytest.mark.parametrize("wrapper", sorted(versions.WRAPPER_MODULES))
def test_wrapper_module_pins_the_version(wrapper: str) -> None:
    assert_wrapper_pins(GOMOD_DIR, wrapper, *versions.WRAPPER_MODULES[wrapper])


@pytest.mark.parametrize("version", sorted(versions.KUBELET_WRAPPERS))
def test_kubelet_wrapper_pins_its_version(version: str) -> None:
    assert_wrapper_pins(GOMOD_DIR, versions.KUBELET_WRAPPERS[version], "k8s.io/kubernetes", version)


def test_every_wrapper_directory_is_pinned() -> None:
    directories = {path.parent.name for path in GOMOD_DIR.glob("*/go.mod")}
    assert directories == set(versions.WRAPPER_MODULES) | set(versions.KUBELET_WRAPPERS.values())


def test_node_kubernetes_is_the_control_planes_release() -> None:
    from hack.localcluster import versions as control_plane

    assert versions.KUBERNETES == control_plane.KUBERNETES
    # A kubelet for each other control-plane version, none for a version it lacks.
    assert set(versions.KUBELET_WRAPPERS) == set(control_plane.KUBERNETES_WRAPPERS) - {
        control_plane.KUBERNETES
    }


def test_another_kubelet_replaces_only_the_kubelet_and_kube_proxy(tmp_path: Path) -> None:
    node = gobuild.Built(root=tmp_path / "node", binaries=build.BINARIES)
    kubelet = gobuild.Built(root=tmp_path / "kubelet", binaries=build.KUBELET_BINARIES)
    tools = build.WithKubelet(root=node.root, binaries=node.binaries, kubelet=kubelet)
    assert tools.path("kubelet") == kubelet.path("kubelet")
    assert tools.path("kube-proxy") == kubelet.path("kube-proxy")
    assert tools.path("containerd") == node.path("containerd")
    assert tools.bin_dir == node.bin_dir  # kube-proxy's nft and containerd's CNI plugins


def test_debian_lock_parses_and_holds_nft_and_libseccomp() -> None:
    packages = debs.locked()
    names = [package.name for package in packages]
    assert len(names) == len(set(names)), "a package is locked twice"
    assert {versions.NFT_ROOT, versions.SECCOMP_PACKAGE} <= set(names)
    assert not set(versions.NFT_EXCLUDED) & set(names)
    for package in packages:
        assert re.fullmatch(r"[0-9a-f]{64}", package.sha256), package.name
        assert package.size > 0
        assert package.url.startswith("http") and package.url.endswith(".deb")


def test_firewall_lock_holds_iptables_and_ipset_apart_from_the_nodes_lock() -> None:
    packages = debs.firewall_locked()
    names = [package.name for package in packages]
    assert len(names) == len(set(names)), "a package is locked twice"
    assert set(versions.FIREWALL_ROOTS) <= set(names)
    assert not set(versions.FIREWALL_EXCLUDED) & set(names)
    # Apart, so that a change to the firewall's packages does not move the node's stamp.
    assert not set(versions.FIREWALL_ROOTS) & {p.name for p in debs.locked()}
    for package in packages:
        assert re.fullmatch(r"[0-9a-f]{64}", package.sha256), package.name
        assert package.url.startswith("http") and package.url.endswith(".deb")


def test_the_firewall_and_storage_wrappers_are_built_apart_from_the_node() -> None:
    assert set(versions.FIREWALL_WRAPPERS) <= set(versions.WRAPPER_MODULES)
    assert not set(build.NODE_WRAPPERS) & {*versions.FIREWALL_WRAPPERS,
                                            *versions.STORAGE_WRAPPERS}  # fmt: skip
    assert build.FIREWALL_BINARIES == ("kube-router", "iptables", "iptables-save",
                                       "iptables-restore", "ipset")  # fmt: skip


def test_every_binary_is_built_by_exactly_one_recipe() -> None:
    assert len(build.BINARIES) == len(set(build.BINARIES))
    assert set(build.BINARIES) == {
        "kubelet", "kube-proxy", "containerd", "containerd-shim-runc-v2", "ctr", "runc",
        "bridge", "host-local", "loopback", "portmap", "coredns", "pause", "nft",
    }  # fmt: skip


def test_coredns_main_compiles_in_exactly_the_named_plugins_in_order() -> None:
    main_go = (GOMOD_DIR / "coredns" / "main.go").read_text()
    imported = re.findall(r'_ "github.com/coredns/coredns/plugin/(\w+)"', main_go)
    # The metrics package registers the plugin named prometheus.
    named = ["prometheus" if name == "metrics" else name for name in imported]
    assert sorted(named) == sorted(versions.COREDNS_PLUGINS)
    directives = re.search(r"directives = \[\]string\{(.*?)\}", main_go, re.DOTALL)
    assert directives is not None
    assert tuple(re.findall(r'"(\w+)"', directives.group(1))) == versions.COREDNS_PLUGINS
    assert '"forward"' not in main_go
