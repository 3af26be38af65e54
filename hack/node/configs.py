"""The real node's configuration files, and the cluster objects its DNS and its volume
provisioner need.

kind's node image is the reference for what a node needs (its kubeadm kubelet settings,
its containerd config); what differs here says why beside it. Every path is under the
node's state directory or its private ``/run``: nothing is written to the machine's
``/etc``, ``/var/lib`` or ``/opt``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hack.node import node as real

if TYPE_CHECKING:
    from hack.localcluster.cluster import LocalCluster

COREDNS_USER = "system:coredns"
STORAGE_NAMESPACE = "local-path-storage"
STORAGE_CLASS = "standard"
"""kind's default StorageClass's name (a claim that names none gets it)."""
PROVISIONER_NAME = "rancher.io/local-path"
PROVISIONER_USER = "local-path-provisioner"
PROVISIONER_CONFIG = "local-path-config"
HELPER_ACCOUNT = "local-path-provisioner-service-account"
FIREWALL_USER = "kube-router"
DNS_SERVICE = "kube-dns"
ENDPOINTS_MANAGER = "pulumi-ray-node"


@dataclass(frozen=True)
class NodeFiles:
    containerd: Path
    kubelet_args: list[str]
    kube_proxy: Path
    corefile: Path
    provisioner_args: list[str]
    """Empty when the node has no volume provisioner."""


def _kubeconfig(cluster: LocalCluster, node: real.RealNode, name: str, user: str,
                group: str | None = None) -> Path:  # fmt: skip
    """A kubeconfig for a component of the node: the API server by the node's way to it,
    as ``user`` in ``group``, with a client certificate of its own."""
    cert, key = cluster.pki.issue(name, user, group)
    return cluster.write_kubeconfig(
        node.state_dir / f"{name}.kubeconfig", user,
        {"client-certificate": str(cert), "client-key": str(key)},
        server=cluster.node_server,
    )  # fmt: skip


def _toml_string(value: str) -> str:
    return json.dumps(value)  # a JSON string is a TOML basic string for these paths


def containerd_config(node: real.RealNode) -> str:
    """containerd 2's config (version 3): CRI with runc through the cgroupfs driver (the
    kubelet's too: no systemd here), CNI from the state directory, and the pause image
    built here as every pod's sandbox."""
    state = node.state_dir
    cni = state / "cni"
    return "\n".join([
        "version = 3",
        f"root = {_toml_string(str(state / 'containerd'))}",
        'state = "/run/containerd"',
        # Plugins this node has no use for; the tracing ones would dial a collector.
        'disabled_plugins = ["io.containerd.tracing.processor.v1.otlp", '
        '"io.containerd.internal.v1.tracing", "io.containerd.nri.v1.nri"]',
        "[grpc]",
        f"  address = {_toml_string(real.CONTAINERD_SOCKET)}",
        "[plugins.'io.containerd.cri.v1.images']",
        '  snapshotter = "overlayfs"',
        "[plugins.'io.containerd.cri.v1.images'.pinned_images]",
        f"  sandbox = {_toml_string(real.SANDBOX_IMAGE)}",
        "[plugins.'io.containerd.cri.v1.runtime']",
        # These machines withhold CAP_SYS_RESOURCE even from root, so no process may lower
        # its OOM score; runc would fail every container asking for one below containerd's
        # (the pause container's -998). kind's rootless nodes set the same.
        "  restrict_oom_score_adj = true",
        "[plugins.'io.containerd.cri.v1.runtime'.containerd]",
        '  default_runtime_name = "runc"',
        "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]",
        '  runtime_type = "io.containerd.runc.v2"',
        "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]",
        f"  BinaryName = {_toml_string(str(node.tools.path('runc')))}",
        "  SystemdCgroup = false",
        "[plugins.'io.containerd.cri.v1.runtime'.cni]",
        f"  bin_dirs = [{_toml_string(str(node.tools.bin_dir))}]",
        f"  conf_dir = {_toml_string(str(cni / 'net.d'))}",
        "[plugins.'io.containerd.grpc.v1.cri']",
        # The kubelet reaches the exec/attach/port-forward stream server in the node's
        # own network namespace; nothing else should.
        '  stream_server_address = "127.0.0.1"',
        '  stream_server_port = "0"',
        "",
    ])  # fmt: skip


def cni_config(node: real.RealNode) -> dict[str, Any]:
    """The pods' network: one bridge with the node as gateway (and default route: Ray
    finds its node IP by it), hairpin for a pod reaching itself through a Service, no
    masquerade (nothing leaves the sandbox), addresses from host-local with its data in
    the state directory (its default is the machine's /var/lib/cni)."""
    return {
        "cniVersion": "1.0.0",
        "name": "pulumi-ray",
        "plugins": [
            {
                "type": "bridge",
                "bridge": "cni0",
                "isGateway": True,
                "isDefaultGateway": True,
                "hairpinMode": True,
                "ipMasq": False,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": real.POD_SUBNET, "gateway": real.POD_GATEWAY}]],
                    "dataDir": str(node.state_dir / "cni" / "ipam"),
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": True}, "backend": "nftables"},
        ],
    }


def kubelet_config(node: real.RealNode, cluster: LocalCluster, serving: tuple[Path, Path]
                   ) -> dict[str, Any]:  # fmt: skip
    """kind's kubeadm settings where they apply (no eviction on disk pressure, no image
    GC, swap tolerated), a cgroup root of this node's own, and the API server's identity
    alone let in (x509 from our CA, authorised by the API server: the ``Webhook`` modes)."""
    cert, key = serving
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": real.NODE_IP,
        "port": 10250,
        "readOnlyPort": 0,
        "healthzBindAddress": real.NODE_IP,
        "healthzPort": real.KUBELET_HEALTH_PORT,
        "tlsCertFile": str(cert),
        "tlsPrivateKeyFile": str(key),
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(cluster.pki.ca_cert)},
        },
        "authorization": {"mode": "Webhook"},
        "containerRuntimeEndpoint": f"unix://{real.CONTAINERD_SOCKET}",
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": f"/{node.cgroup_root}",
        "cgroupsPerQOS": True,
        # These machines mount cgroup v1; the kubelet 1.34 still runs on it.
        "failCgroupV1": False,
        "failSwapOn": False,
        "protectKernelDefaults": False,  # the values it wants are shadowed (init.py)
        "clusterDNS": [real.CLUSTER_DNS_IP],
        "clusterDomain": real.CLUSTER_DOMAIN,
        "resolvConf": str(node.state_dir / "resolv.conf"),
        "imageGCHighThresholdPercent": 100,
        "evictionHard": {
            "nodefs.available": "0%",
            "nodefs.inodesFree": "0%",
            "imagefs.available": "0%",
        },
        "serializeImagePulls": False,
        "rotateCertificates": False,
        "serverTLSBootstrap": False,
        "maxPods": 110,
    }


def kube_proxy_config(cluster: LocalCluster, node: real.RealNode) -> dict[str, Any]:
    """nftables mode; conntrack left as the kernel has it: ``nf_conntrack_max`` is the
    machine's and cannot be written from a network namespace (kind sets the same)."""
    kubeconfig = _kubeconfig(cluster, node, "kube-proxy", "system:kube-proxy")
    return {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "mode": "nftables",
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "hostnameOverride": real.NODE_NAME,
        "clusterCIDR": real.POD_RANGE,
        "healthzBindAddress": f"{real.NODE_IP}:{real.PROXY_HEALTH_PORT}",
        "metricsBindAddress": "127.0.0.1:10249",
        "conntrack": {
            "maxPerCore": 0,
            "min": 0,
            "tcpEstablishedTimeout": "0s",
            "tcpCloseWaitTimeout": "0s",
        },
    }


def corefile(kubeconfig: Path) -> str:
    """Cluster DNS only: no ``forward``, since the sandbox has no name server beyond."""
    return "\n".join([
        ".:53 {",
        "    errors",
        "    health 127.0.0.1:8080",
        f"    ready {real.NODE_IP}:{real.DNS_READY_PORT}",
        f"    kubernetes {real.CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{",
        f"        kubeconfig {kubeconfig}",
        "        pods insecure",
        "        fallthrough in-addr.arpa ip6.arpa",
        "        ttl 30",
        "    }",
        "    cache 30",
        "}",
        "",
    ])  # fmt: skip


def _bound_to_user(role_kind: str, user: str, namespace: str | None = None) -> dict[str, Any]:
    """The binding of the ClusterRole (or, in ``namespace``, the Role) named ``user`` to
    the user of that name: a node component's identity is its client certificate's."""
    metadata = {"name": user, **({"namespace": namespace} if namespace else {})}
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": f"{role_kind}Binding",
        "metadata": metadata,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": user},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    }  # fmt: skip


def dns_objects() -> list[dict[str, Any]]:
    """What CoreDNS, a process of the node rather than a pod, needs in the cluster: read
    access for its identity, and the ``kube-dns`` Service pointing at it (selector-less,
    with an EndpointSlice of our own, since no pod backs it)."""
    labels = {"k8s-app": "kube-dns"}
    return [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": COREDNS_USER},
         "rules": [
             {"apiGroups": [""], "resources": ["services", "pods", "namespaces"],
              "verbs": ["list", "watch"]},
             {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"],
              "verbs": ["list", "watch"]},
         ]},
        _bound_to_user("ClusterRole", COREDNS_USER),
        {"apiVersion": "v1", "kind": "Service",
         "metadata": {"name": DNS_SERVICE, "namespace": "kube-system", "labels": labels},
         "spec": {"clusterIP": real.CLUSTER_DNS_IP,
                  "ports": [{"name": "dns", "port": 53, "protocol": "UDP"},
                            {"name": "dns-tcp", "port": 53, "protocol": "TCP"}]}},
        {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
         "metadata": {"name": f"{DNS_SERVICE}-{real.NODE_NAME}", "namespace": "kube-system",
                      "labels": {"kubernetes.io/service-name": DNS_SERVICE,
                                 "endpointslice.kubernetes.io/managed-by": ENDPOINTS_MANAGER}},
         "addressType": "IPv4",
         "endpoints": [{"addresses": [real.NODE_IP], "conditions": {"ready": True},
                        "nodeName": real.NODE_NAME}],
         "ports": [{"name": "dns", "port": 53, "protocol": "UDP"},
                   {"name": "dns-tcp", "port": 53, "protocol": "TCP"}]},
    ]  # fmt: skip


def volumes_dir(node: real.RealNode) -> Path:
    """Where the provisioner makes each volume's directory, on the node."""
    return node.state_dir / "volumes"


def helper_pod(helper_image: str) -> dict[str, Any]:
    """The pod the provisioner runs its ``setup`` and ``teardown`` scripts in (it adds
    the volume's parent directory, the scripts, the node and the command). kind's runs
    busybox, as root; this node has no busybox, and the image named here (ours: the Ray
    image) runs as a user that cannot write the node's directories, hence root."""
    return {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "helper-pod"},
        "spec": {
            "priorityClassName": "system-node-critical",
            "securityContext": {"runAsUser": 0, "runAsGroup": 0},
            "containers": [{"name": "helper-pod", "image": helper_image,
                            "imagePullPolicy": "IfNotPresent"}],
        },
    }  # fmt: skip


def storage_objects(node: real.RealNode, helper_image: str) -> list[dict[str, Any]]:
    """What the provisioner, a process of the node, needs in the cluster: its rights, the
    namespace and account of its helper pods, its ConfigMap (the same keys kind's
    has) and the default StorageClass. Each volume is a ``0777`` directory, as kind
    makes it, so a container of any user (Redis's 999, Ray's 1000) can write it."""
    config = {"nodePathMap": [{"node": "DEFAULT_PATH_FOR_NON_LISTED_NODES",
                               "paths": [str(volumes_dir(node))]}]}  # fmt: skip
    core_read = ["nodes", "persistentvolumeclaims", "configmaps", "pods", "pods/log"]
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": STORAGE_NAMESPACE}},
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": {"name": HELPER_ACCOUNT, "namespace": STORAGE_NAMESPACE}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": PROVISIONER_USER},
         "rules": [
             {"apiGroups": [""], "resources": core_read, "verbs": ["get", "list", "watch"]},
             {"apiGroups": [""], "resources": ["persistentvolumes"],
              "verbs": ["get", "list", "watch", "create", "patch", "update", "delete"]},
             {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
             {"apiGroups": ["storage.k8s.io"], "resources": ["storageclasses"],
              "verbs": ["get", "list", "watch"]},
         ]},
        _bound_to_user("ClusterRole", PROVISIONER_USER),
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": {"name": PROVISIONER_USER, "namespace": STORAGE_NAMESPACE},
         "rules": [{"apiGroups": [""], "resources": ["pods"],
                    "verbs": ["get", "list", "watch", "create", "patch", "update",
                              "delete"]}]},
        _bound_to_user("Role", PROVISIONER_USER, STORAGE_NAMESPACE),
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": PROVISIONER_CONFIG, "namespace": STORAGE_NAMESPACE},
         "data": {
             "config.json": json.dumps(config, indent=2),
             "setup": '#!/bin/sh\nset -eu\nmkdir -m 0777 -p "$VOL_DIR"\n',
             "teardown": '#!/bin/sh\nset -eu\nrm -rf "$VOL_DIR"\n',
             "helperPod.yaml": json.dumps(helper_pod(helper_image), indent=2),
         }},
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
         "metadata": {"name": STORAGE_CLASS, "annotations": {
             "storageclass.kubernetes.io/is-default-class": "true"}},
         "provisioner": PROVISIONER_NAME,
         "reclaimPolicy": "Delete",
         "volumeBindingMode": "WaitForFirstConsumer"},
    ]  # fmt: skip


def firewall_objects() -> list[dict[str, Any]]:
    """What kube-router's firewall, a process of the node, needs in the cluster: read
    access for its identity to what its informers list (it starts the informers of all
    its controllers, even those it does not run), and its events."""
    read = ["get", "list", "watch"]
    return [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": FIREWALL_USER},
         "rules": [
             {"apiGroups": [""],
              "resources": ["pods", "namespaces", "nodes", "services", "endpoints"],
              "verbs": read},
             {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"],
              "verbs": read},
             {"apiGroups": ["networking.k8s.io"], "resources": ["networkpolicies"],
              "verbs": read},
             {"apiGroups": ["", "events.k8s.io"], "resources": ["events"],
              "verbs": ["create", "patch", "update"]},
         ]},
        _bound_to_user("ClusterRole", FIREWALL_USER),
    ]  # fmt: skip


def firewall_args(node: real.RealNode, cluster: LocalCluster) -> list[str]:
    """Its objects applied and its kubeconfig written; how to start kube-router as the
    firewall alone: no routing, no service proxy (kube-proxy's), no CNI config of its
    own and no SNAT, only NetworkPolicies as iptables chains and ipsets in the node's
    network namespace."""
    from hack.localcluster.cluster import SERVICE_CLUSTER_IP_RANGE

    cluster.apply(input=json.dumps({"apiVersion": "v1", "kind": "List",
                                    "items": firewall_objects()}))  # fmt: skip
    kubeconfig = _kubeconfig(cluster, node, FIREWALL_USER, FIREWALL_USER)
    return [
        f"--kubeconfig={kubeconfig}",
        "--run-firewall=true", "--run-router=false", "--run-service-proxy=false",
        "--run-loadbalancer=false", "--enable-cni=false", "--enable-pod-egress=false",
        f"--hostname-override={real.NODE_NAME}",
        f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
        f"--health-port={real.FIREWALL_HEALTH_PORT}",
        "--metrics-port=0",
        "--v=1",
    ]  # fmt: skip


def _provisioner_args(node: real.RealNode, cluster: LocalCluster) -> list[str]:
    """Its objects applied, its files written; how to start it (empty: no provisioner)."""
    if node.provisioner is None:
        return []
    objects = storage_objects(node, node.provisioner.helper_image)
    cluster.apply(input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    volumes_dir(node).mkdir(exist_ok=True)
    data = next(o for o in objects if o["kind"] == "ConfigMap")["data"]
    config, helper = node.state_dir / "local-path.json", node.state_dir / "local-path-helper.yaml"
    config.write_text(data["config.json"])
    helper.write_text(data["helperPod.yaml"])
    kubeconfig = _kubeconfig(cluster, node, PROVISIONER_USER, PROVISIONER_USER)
    return [
        "start", f"--config={config}", f"--helper-pod-file={helper}",
        f"--kubeconfig={kubeconfig}", f"--provisioner-name={PROVISIONER_NAME}",
        f"--namespace={STORAGE_NAMESPACE}", f"--configmap-name={PROVISIONER_CONFIG}",
        f"--service-account-name={HELPER_ACCOUNT}",
        f"--helper-image={node.provisioner.helper_image}",
    ]  # fmt: skip


def write_all(node: real.RealNode, cluster: LocalCluster) -> NodeFiles:
    """Every file the node's components read, the identities they use, and the cluster
    objects they need; what to start them with."""
    state = node.state_dir
    (state / "cni" / "net.d").mkdir(parents=True, exist_ok=True)
    (state / "cni" / "net.d" / "10-pulumi-ray.conflist").write_text(
        json.dumps(cni_config(node), indent=2) + "\n"
    )
    containerd = state / "containerd.toml"
    containerd.write_text(containerd_config(node))
    (state / "resolv.conf").write_text("# no upstream name server in the sandbox\n")
    serving = cluster.pki.issue("kubelet-serving", real.NODE_NAME,
                                server_addresses=(real.NODE_IP,))  # fmt: skip
    kubelet_file = state / "kubelet.yaml"
    kubelet_file.write_text(json.dumps(kubelet_config(node, cluster, serving), indent=2))
    kubelet_kubeconfig = _kubeconfig(cluster, node, "kubelet", f"system:node:{real.NODE_NAME}",
                                     "system:nodes")  # fmt: skip
    labels = ",".join(f"{k}={v}" for k, v in real.NODE_LABELS.items())
    kubelet_args = [
        f"--config={kubelet_file}",
        f"--kubeconfig={kubelet_kubeconfig}",
        "--root-dir=/var/lib/kubelet",  # the state directory's var/lib/kubelet (init.py)
        f"--hostname-override={real.NODE_NAME}",
        f"--node-ip={real.NODE_IP}",
        f"--node-labels={labels}",
        "--v=1",
    ]
    proxy = state / "kube-proxy.yaml"
    proxy.write_text(json.dumps(kube_proxy_config(cluster, node), indent=2))
    cluster.kubectl("apply", "--server-side", "-f", "-",
                    input=json.dumps({"apiVersion": "v1", "kind": "List",
                                      "items": dns_objects()}))  # fmt: skip
    dns_kubeconfig = _kubeconfig(cluster, node, "coredns", COREDNS_USER)
    core = state / "Corefile"
    core.write_text(corefile(dns_kubeconfig))
    return NodeFiles(containerd=containerd, kubelet_args=kubelet_args, kube_proxy=proxy,
                     corefile=core, provisioner_args=_provisioner_args(node, cluster))  # fmt: skip
