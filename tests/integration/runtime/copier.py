"""A small controller that exercises the runtime against a real API server.

For every ConfigMap labelled ``runtime-test/role=source`` it keeps a child ConfigMap
``<name>-copy`` (owned by the source, labelled ``runtime-test/role=copy``) whose data
equals the source's, deletes the child when the source is gone, and records on the
source which data it copied and which process did it. Annotations on the source steer
failure modes: ``runtime-test/fail-times`` (raise that many times), ``runtime-test/sleep``
(seconds per reconcile), ``runtime-test/hold`` (wait until ``release()``, at most that
many seconds), ``runtime-test/conflict-once`` (cause one 409 on purpose).

``register`` is the ``--controller-plugin`` entry point for operator subprocesses.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import os
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Sequence

from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.context import ControllerContext
from operator_runtime.runtime.errors import NotFound
from operator_runtime.runtime.kinds import CONFIG_MAP, Object
from operator_runtime.runtime.reconcile import ObjectKey, Result, Watch, own, owned
from operator_runtime.runtime.registry import ControllerRegistry

ROLE = "runtime-test/role"
SOURCES = f"{ROLE}=source"
COPIES = f"{ROLE}=copy"
COPIED = "runtime-test/copied"
BY = "runtime-test/reconciled-by"


def data_digest(data: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


class Copier:
    name = "copier"

    def __init__(self, context: ControllerContext) -> None:
        self.client: KubeClient = context.client
        self.sources = context.informers.cache(CONFIG_MAP, label_selector=SOURCES)
        self.copies = context.informers.cache(CONFIG_MAP, label_selector=COPIES)
        self.events = context.events(self.name)
        self.lock = threading.Lock()
        self.reconciles: Counter[ObjectKey] = Counter()
        self.finished: dict[ObjectKey, float] = {}
        self.failed_at: defaultdict[ObjectKey, list[float]] = defaultdict(list)
        """When each failing attempt failed (``time.monotonic``), before any logging: how
        many times a key failed is the length of its list."""
        self.conflicted: set[ObjectKey] = set()
        self.released = threading.Event()

    def release(self) -> None:
        """Let every reconcile held by ``runtime-test/hold`` go on."""
        self.released.set()

    def watches(self) -> Sequence[Watch]:
        return (
            own(CONFIG_MAP, label_selector=SOURCES),
            owned(CONFIG_MAP, CONFIG_MAP, label_selector=COPIES),
        )

    def reconcile(self, key: ObjectKey) -> Result:
        with self.lock:
            self.reconciles[key] += 1
        source = self.sources.get(key.namespace, key.name)
        if source is None:
            self._delete_copy(key)
            return Result()
        annotations = source["metadata"].get("annotations") or {}
        self._misbehave(key, source, annotations)
        data = dict(source.get("data") or {})
        self._write_copy(key, source, data)
        digest = data_digest(data)
        if annotations.get(COPIED) != digest:
            # Conditional on the resourceVersion we read: a stale cache gets a 409.
            self.client.patch(
                CONFIG_MAP, key.name, key.namespace,
                {"metadata": {"annotations": {COPIED: digest, BY: str(os.getpid())}}},
                resource_version=source["metadata"]["resourceVersion"],
            )  # fmt: skip
            self.events.record(source, "Normal", "Copied", f"copied {len(data)} keys")
        with self.lock:
            self.finished[key] = time.monotonic()
        return Result()

    def _misbehave(self, key: ObjectKey, source: Object, annotations: dict[str, str]) -> None:
        if "runtime-test/sleep" in annotations:
            time.sleep(float(annotations["runtime-test/sleep"]))
        if "runtime-test/hold" in annotations:
            self.released.wait(float(annotations["runtime-test/hold"]))
        with self.lock:
            failed = self.failed_at[key]
            fail = len(failed) < int(annotations.get("runtime-test/fail-times", "0"))
            if fail:
                failed.append(time.monotonic())
                times = len(failed)
        if fail:
            raise RuntimeError(f"failing on purpose ({times})")
        if annotations.get("runtime-test/conflict-once") and key not in self.conflicted:
            self.conflicted.add(key)
            # Someone else writes the source after we read it: our write must conflict.
            self.client.patch(
                CONFIG_MAP,
                key.name,
                key.namespace,
                {"metadata": {"labels": {"runtime-test/bumped": "yes"}}},
            )

    def _write_copy(self, key: ObjectKey, source: Object, data: dict[str, str]) -> None:
        name = f"{key.name}-copy"
        existing = self.copies.get(key.namespace, name)
        if existing is None:
            self.client.create({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {
                    "name": name, "namespace": key.namespace, "labels": {ROLE: "copy"},
                    "ownerReferences": [{
                        "apiVersion": "v1", "kind": "ConfigMap", "name": key.name,
                        "uid": source["metadata"]["uid"], "controller": True,
                    }],
                },
                "data": data,
            })  # fmt: skip
        elif (existing.get("data") or {}) != data:
            updated = copy.deepcopy(existing)
            updated["data"] = data
            self.client.update(updated)

    def _delete_copy(self, key: ObjectKey) -> None:
        existing = self.copies.get(key.namespace, f"{key.name}-copy")
        if existing is None:
            return
        with contextlib.suppress(NotFound):  # already gone: nothing to do
            self.client.delete(CONFIG_MAP, existing["metadata"]["name"], key.namespace,
                               uid=existing["metadata"]["uid"])  # fmt: skip


def register(registry: ControllerRegistry) -> None:
    registry.register("copier", Copier)
