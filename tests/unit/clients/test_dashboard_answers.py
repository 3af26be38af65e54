"""How the client turns the dashboard's answers into results and typed errors.

A ``MockTransport`` stands in for the network only here, where the thing under test is
the mapping itself; what a real head answers is proven in ``tests/contract``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import httpx
import pytest

from operator_runtime.clients import (
    Addressing,
    DashboardClient,
    DashboardError,
    DashboardNotFound,
    DashboardPool,
    DashboardUnavailable,
    DuplicateSubmission,
    JobStatus,
    JobSubmission,
    dashboard_endpoint,
    serve_proxy_endpoint,
)

Handler = Callable[[httpx.Request], httpx.Response]


@pytest.fixture
def answer() -> Iterator[Callable[[Handler], DashboardClient]]:
    pools: list[DashboardPool] = []

    def make(handler: Handler) -> DashboardClient:
        pool = DashboardPool(transport=httpx.MockTransport(handler))
        pools.append(pool)
        endpoint = dashboard_endpoint(addressing=Addressing.DIRECT, head_service="h", namespace="n")
        return pool.dashboard(endpoint, token="s3cret")

    yield make
    for pool in pools:
        pool.close()


@pytest.mark.parametrize(
    ("status", "text", "error"),
    [
        (404, "Job x does not exist", DashboardNotFound),
        (
            500,
            "ValueError: ... already exists. Please use a different submission_id.",
            DuplicateSubmission,
        ),
        (400, "Please use a different submission_id", DuplicateSubmission),
        (502, "bad gateway", DashboardUnavailable),
        (503, "no endpoints available for service", DashboardUnavailable),
        (504, "gateway timeout", DashboardUnavailable),
        (500, "Traceback: RuntimeError", DashboardError),
        (400, "Can only stop submission type jobs", DashboardError),
    ],
)
def test_status_codes_map_to_typed_errors(
    answer: Callable[[Handler], DashboardClient],
    status: int,
    text: str,
    error: type[DashboardError],
) -> None:
    client = answer(lambda request: httpx.Response(status, text=text))
    with pytest.raises(DashboardError) as caught:
        client.job_info("x")
    assert type(caught.value) is error
    assert caught.value.status_code == status
    assert caught.value.url == "http://h.n.svc.cluster.local:8265/api/jobs/x"


def test_a_transport_failure_is_unavailable_without_a_status(
    answer: Callable[[Handler], DashboardClient],
) -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    with pytest.raises(DashboardUnavailable) as caught:
        answer(refuse).job_logs("x")
    assert caught.value.status_code is None


@pytest.mark.parametrize("body", ["<html>proxy error</html>", '{"status": "EXPLODED"}', "[]"])
def test_an_answer_of_the_wrong_shape_is_a_dashboard_error(
    answer: Callable[[Handler], DashboardClient], body: str
) -> None:
    client = answer(lambda request: httpx.Response(200, text=body))
    with pytest.raises(DashboardError, match="api/jobs/x") as caught:
        client.job_info("x")
    assert type(caught.value) is DashboardError


def test_requests_carry_the_token_and_the_submission(
    answer: Callable[[Handler], DashboardClient],
) -> None:
    seen: list[httpx.Request] = []

    def record(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"job_id": "raysubmit_1", "submission_id": "s-1"})

    submitted = answer(record).submit_job(JobSubmission(entrypoint="echo hi", submission_id="s-1"))
    assert submitted.job_id == "raysubmit_1"
    (request,) = seen
    assert (request.method, request.url.path) == ("POST", "/api/jobs/")
    assert request.headers["x-ray-authorization"] == "Bearer s3cret"
    assert request.read() == b'{"entrypoint":"echo hi","submission_id":"s-1"}'


def test_job_status_terminality() -> None:
    assert {s for s in JobStatus if s.is_terminal} == {
        JobStatus.STOPPED,
        JobStatus.SUCCEEDED,
        JobStatus.FAILED,
    }


@pytest.mark.parametrize(("status", "healthy"), [(200, True), (503, False), (500, False)])
def test_serve_proxy_health_is_a_200(status: int, healthy: bool) -> None:
    pool = DashboardPool(transport=httpx.MockTransport(lambda request: httpx.Response(status)))
    endpoint = serve_proxy_endpoint(
        addressing=Addressing.DIRECT, pod_ip="10.244.0.7", pod_name="p", namespace="n"
    )
    try:
        assert pool.serve_proxy(endpoint).healthy() is healthy
    finally:
        pool.close()


def test_a_job_id_stays_one_path_segment(answer: Callable[[Handler], DashboardClient]) -> None:
    paths: list[str] = []

    def record(request: httpx.Request) -> httpx.Response:
        paths.append(request.url.raw_path.decode())
        return httpx.Response(200, json={"stopped": True})

    assert answer(record).stop_job("a/../b c") is True
    assert paths == ["/api/jobs/a%2F..%2Fb%20c/stop"]
