"""``queue_name`` and ``suspend`` on the workload components, under Pulumi mocks.

``queue_name`` is Kueue's ``kueue.x-k8s.io/queue-name`` label; Kueue then owns
``spec.suspend``, so the component never sends one, and ``pulumi up`` ends once the object
is ready or held in the queue, whichever it sees first. What those waits do against the
real provider, operator and Kueue is tests/e2e/test_kueue_queued.py's to prove.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pulumi
import pytest

from components import RayCluster, RayCronJob, RayJob, RayService
from components._inputs import RayInputError
from tests.components import workload_mocks
from tests.components.test_workloads_job import job_spec
from tests.components.test_workloads_service import service_spec
from tests.components.workload_mocks import Run, annotations, cluster_spec, run

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
WAIT_FOR = "pulumi.com/waitFor"

Make = Callable[..., object]
KINDS: list[tuple[str, Make, Callable[..., dict[str, Any]]]] = [
    ("RayJob", RayJob, job_spec),
    ("RayCluster", RayCluster, cluster_spec),
    ("RayService", RayService, service_spec),
]
QUEUED_WAIT = {
    "RayJob": (
        'jsonpath={$[?@.jobDeploymentStatus=="Complete" || @.jobDeploymentStatus=="Suspended"]}'
    ),
    "RayCluster": 'jsonpath={$[?@.state=="ready" || @.state=="suspended"]}',
    "RayService": (
        'jsonpath={.status.conditions[?(@.type=="Ready" || @.type=="Suspended")'
        ' && @.status=="True"]}'
    ),
}
SUSPENDED_WAIT = {
    "RayJob": "jsonpath={.status.jobDeploymentStatus}=Suspended",
    "RayCluster": "jsonpath={.status.state}=suspended",
    "RayService": "condition=Suspended",
}
SUSPENDED_STATUS = {
    "RayJob": {"jobDeploymentStatus": "Suspended"},
    "RayCluster": {"state": "suspended"},
    "RayService": {"conditions": [{"type": "Suspended", "status": "True"}]},
}
IDS = [kind for kind, _, _ in KINDS]


def cr_of(kind: str, result: Run) -> workload_mocks.Registration:
    return result.one(f"kubernetes:ray.io/v1:{kind}")


@pytest.mark.parametrize(("kind", "make", "spec"), KINDS, ids=IDS)
def test_queue_name_is_the_label_and_leaves_suspend_to_kueue(
    kind: str, make: Make, spec: Callable[..., dict[str, Any]]
) -> None:
    result = run(
        lambda: make("work", namespace="team-a", queue_name="team-a-queue", labels={"a": "b"},
                     **spec())
    )  # fmt: skip
    cr = cr_of(kind, result)
    assert cr.inputs["metadata"]["labels"] == {"a": "b", QUEUE_LABEL: "team-a-queue"}
    # Kueue's webhook suspends it at creation; a value of ours would undo its admission.
    assert "suspend" not in cr.inputs["spec"]
    assert annotations(cr)[WAIT_FOR] == QUEUED_WAIT[kind]


@pytest.mark.parametrize(("kind", "make", "spec"), KINDS, ids=IDS)
def test_suspend_sets_the_spec_and_waits_for_suspended(
    kind: str, make: Make, spec: Callable[..., dict[str, Any]]
) -> None:
    suspended = cr_of(kind, run(lambda: make("work", suspend=True, **spec())))
    assert suspended.inputs["spec"]["suspend"] is True
    assert annotations(suspended)[WAIT_FOR] == SUSPENDED_WAIT[kind]
    running = cr_of(kind, run(lambda: make("work", suspend=False, **spec())))
    assert running.inputs["spec"]["suspend"] is False
    assert annotations(running)[WAIT_FOR] not in (SUSPENDED_WAIT[kind], QUEUED_WAIT[kind])


def test_suspend_in_args_form_and_from_a_dict_as_other_languages_give_it() -> None:
    cr = cr_of(
        "RayCluster",
        run(lambda: RayCluster("demo", {"spec": cluster_spec(), "suspend": True, "queue_name":
                                        None})),
    )  # fmt: skip
    assert cr.inputs["spec"]["suspend"] is True
    assert QUEUE_LABEL not in (cr.inputs["metadata"].get("labels") or {})


@pytest.mark.parametrize(
    ("queue", "problem"),
    [
        ("", "must not be empty"),
        ("team a", "alphanumerics"),
        ("-queue", "alphanumeric at both ends"),
        ("q" * 64, "at most 63 characters"),
    ],
)  # fmt: skip
def test_an_invalid_queue_name_is_refused_naming_the_component_and_field(
    queue: str, problem: str
) -> None:
    seen = Run()
    with pytest.raises(RayInputError) as caught:
        run(lambda: RayJob("train", namespace="team-a", queue_name=queue, **job_spec()), into=seen)
    assert seen.registrations == []
    assert caught.value.path == "queue_name"
    message = str(caught.value)
    assert message.startswith("RayJob team-a/train"), message
    assert problem in message
    assert "[INVALID_QUEUE_NAME]" in message


def test_a_different_queue_label_is_refused() -> None:
    with pytest.raises(RayInputError) as caught:
        run(lambda: RayCluster("demo", queue_name="a", labels={QUEUE_LABEL: "b"}, **cluster_spec()))
    assert caught.value.path == "labels"
    assert "[QUEUE_NAME_GIVEN_TWICE]" in str(caught.value)
    # The same value twice says the same thing: fine.
    cr = cr_of(
        "RayCluster",
        run(lambda: RayCluster("demo", queue_name="a", labels={QUEUE_LABEL: "a"},
                               **cluster_spec())),
    )  # fmt: skip
    assert cr.inputs["metadata"]["labels"] == {QUEUE_LABEL: "a"}


@pytest.mark.parametrize(
    ("given", "path"),
    [({"suspend": True}, "suspend"), ({"suspend": False}, "suspend"), ({}, "spec.suspend")],
)
def test_suspend_with_a_queue_name_is_refused(given: dict[str, Any], path: str) -> None:
    spec = job_spec() if given else job_spec(suspend=True)
    with pytest.raises(RayInputError) as caught:
        run(lambda: RayJob("train", queue_name="q", **given, spec=spec))
    assert caught.value.path == path
    assert "[SUSPEND_WITH_QUEUE_NAME]" in str(caught.value)


def test_suspend_given_twice_is_refused() -> None:
    with pytest.raises(RayInputError) as caught:
        run(lambda: RayCluster("demo", suspend=True, spec=cluster_spec(suspend=False)))
    assert caught.value.path == "suspend"
    assert "[SUSPEND_GIVEN_TWICE]" in str(caught.value)


@pytest.mark.parametrize(("kind", "make", "spec"), KINDS, ids=IDS)
def test_up_says_a_queued_object_is_queued(
    kind: str,
    make: Make,
    spec: Callable[..., dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    said = "is queued: suspended in Kueue's LocalQueue 'q'"
    monkeypatch.setitem(workload_mocks.STATUS, kind, SUSPENDED_STATUS[kind])
    run(lambda: make("work", namespace="team-a", queue_name="q", **spec()))
    assert said in caplog.text
    # In a preview the status read is the last update's: nothing said then.
    caplog.clear()
    run(lambda: make("work", namespace="team-a", queue_name="q", **spec()), preview=True)
    assert said not in caplog.text
    # Nor once the object runs (the mocks' default status: Complete, ready, Ready).
    monkeypatch.undo()
    run(lambda: make("work", namespace="team-a", queue_name="q", **spec()))
    assert said not in caplog.text


def test_a_secret_name_is_not_printed(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A secret name or namespace: the message names the kind alone then."""
    caplog.set_level(logging.INFO)
    monkeypatch.setitem(workload_mocks.STATUS, "RayCluster", SUSPENDED_STATUS["RayCluster"])
    name = pulumi.Output.secret("hush")
    run(lambda: RayCluster("work", name=name, queue_name="q", **cluster_spec()))
    assert "The RayCluster is queued: suspended in Kueue's LocalQueue 'q'" in caplog.text
    assert "hush" not in caplog.text
    caplog.clear()
    # An Output that is no secret (a Namespace's name, read back) is named.
    namespace = pulumi.Output.from_input("team-a")
    run(lambda: RayCluster("work", namespace=namespace, queue_name="q", **cluster_spec()))
    assert "RayCluster team-a/work is queued" in caplog.text


def test_a_raycronjob_takes_suspend_and_no_queue() -> None:
    spec = {"schedule": "0 2 * * *", "job_template": job_spec()}
    cr = run(
        lambda: RayCronJob("nightly", suspend=True, feature_gates="RayCronJob=true", **spec)
    ).one("kubernetes:ray.io/v1:RayCronJob")
    assert cr.inputs["spec"]["suspend"] is True
    assert "pulumi.com/waitFor" not in annotations(cr)
    # queue_name is no argument of a RayCronJob: a spec field, which the schema refuses.
    with pytest.raises(RayInputError):
        run(lambda: RayCronJob("nightly", queue_name="q", feature_gates="RayCronJob=true", **spec))
