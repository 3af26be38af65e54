"""Bounded pod creation: a budget per pass and slow-start batches, as the ReplicaSet
controller does it.

A spec may ask for 2**31 - 1 replicas. Creating the whole difference in one pass would
hold a worker for hours while other clusters wait, so a pass creates at most
``POD_CREATES_PER_PASS`` pods (``take_budget``) and asks to be looked at again. Within
the pass, pods are created in batches of 1, 2, 4, ... running concurrently; the first
batch with a failure is the last, so a template the API server rejects costs one
request, not a hundred. A group that already has pods has shown that its template is
accepted, so its batches start at ``MAX_PARALLEL_CREATES``.

The budget is also one of time: no new batch starts once the pass has been creating
for ``PASS_CREATE_SECONDS``. With the default single worker, a cluster scaling up by
hundreds then holds it for a fraction of a second at a time, and a small cluster
created meanwhile is reconciled between two of its passes (KubeRay's one long pass
keeps it waiting until every pod is created: ray-project/kuberay#3909).
"""

from __future__ import annotations

import contextvars
import logging
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Final

from operator_runtime.controllers.raycluster.reconciliation import Reconciliation

log = logging.getLogger(__name__)
MAX_PARALLEL_CREATES: Final = 4
"""Requests in flight at once within one batch (the client's rate limiter still
applies on top). Four keep up with the default 100 requests/s at up to 40 ms a create;
with 16, the bursts of pod events made the API server drop kwok's watch for being
slow (benchmarks/README.md), where KubeRay creates one pod at a time."""
PASS_CREATE_SECONDS: Final = 0.1
"""No new batch of creates starts after a pass has been creating this long."""


def take_budget(run: Reconciliation, wanted: int, *, pods_each: int = 1) -> int:
    """How many of ``wanted`` creations (of ``pods_each`` pods: a multi-host replica is
    created whole) this pass may do. A fresh budget always admits one, however large;
    when some must wait, the pass is marked for a quick requeue."""
    fits = max(1, run.create_budget // pods_each) if run.create_budget > 0 else 0
    allowed = max(0, min(wanted, fits))
    run.create_budget -= allowed * pods_each
    if allowed < wanted:
        run.more_to_create = True
        log.info(
            "%s: creating %d of %d missing pods in this pass; the rest follows",
            run.key,
            allowed * pods_each,
            wanted * pods_each,
        )
    return allowed


def slow_start(
    calls: Iterable[Callable[[], None]],
    *,
    first: int = 1,
    stop_after: Callable[[], bool] = lambda: False,
) -> int:
    """Run ``calls`` in batches of doubling size from ``first``, each batch
    concurrently; stop after the first batch in which a call raised, and re-raise the
    first such error. No batch starts once ``stop_after()`` says so (the first always
    does). Returns how many calls succeeded. ``calls`` is consumed lazily."""
    pending = iter(calls)
    done, size = 0, max(1, first)
    pool = _pool()
    while True:
        if done and stop_after():
            return done
        batch = [call for _, call in zip(range(size), pending, strict=False)]
        if not batch:
            return done
        if len(batch) == 1:
            batch[0]()  # the first probe runs inline: most passes create one pod
            done += 1
        else:
            slots = threading.BoundedSemaphore(MAX_PARALLEL_CREATES)
            futures = [_submit(pool, slots, call) for call in batch]
            errors = [f.exception() for f in futures]
            failed = [e for e in errors if e is not None]
            done += len(batch) - len(failed)
            if failed:
                if len(failed) > 1:
                    log.info("%d more pod creations failed in the same batch", len(failed) - 1)
                raise failed[0]
        size *= 2


_POOL_THREADS: Final = 4 * MAX_PARALLEL_CREATES
_pool_lock = threading.Lock()
_shared: list[ThreadPoolExecutor] = []


def _pool() -> ThreadPoolExecutor:
    """One pool for every pass in the process, made on first use (a pool per pass
    started up to 16 threads every time, which cost seconds of a busy scale-up). Room
    for a few workers' passes at once; each pass keeps to ``MAX_PARALLEL_CREATES``."""
    with _pool_lock:
        if not _shared:
            _shared.append(ThreadPoolExecutor(_POOL_THREADS, thread_name_prefix="pod-create"))
        return _shared[0]


def _submit(
    pool: ThreadPoolExecutor, slots: threading.BoundedSemaphore, call: Callable[[], None]
) -> Future[None]:
    """Start ``call`` once one of the batch's ``slots`` is free (at most
    ``MAX_PARALLEL_CREATES`` in flight, the next starting as soon as one ends)."""
    slots.acquire()

    def run() -> None:
        try:
            call()
        finally:
            slots.release()

    # Each call runs in a copy of this thread's context, so its log lines carry the
    # reconcile's key and ID like the rest of the pass.
    context = contextvars.copy_context()
    try:
        return pool.submit(context.run, run)
    except BaseException:
        slots.release()
        raise
