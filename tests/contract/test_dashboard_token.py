"""A head with token authentication (``RAY_AUTH_MODE=token``) takes the client's token.

KubeRay sends the token in ``x-ray-authorization``, leaving ``Authorization`` to the
API server's own credentials in proxy mode; a real head is what shows Ray reads it there.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest

from hack.rayhead import RayHead, start_ray_head
from operator_runtime.clients import DashboardError, DashboardPool, Endpoint

TOKEN = secrets.token_hex(16)


@pytest.fixture(scope="module")
def token_head() -> Iterator[RayHead]:
    head = start_ray_head({"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": TOKEN})
    try:
        yield head
    finally:
        head.stop()


@pytest.fixture
def endpoint(token_head: RayHead) -> Endpoint:
    return Endpoint(token_head.dashboard_url, deadline=30)


def test_the_right_token_is_let_in(endpoint: Endpoint) -> None:
    with DashboardPool() as pool:
        assert isinstance(pool.dashboard(endpoint, token=TOKEN).list_jobs(), list)


@pytest.mark.parametrize(
    ("token", "status"), [(None, 401), ("not-" + TOKEN, 403)], ids=["missing", "wrong"]
)
def test_a_missing_or_wrong_token_is_refused(
    endpoint: Endpoint, token: str | None, status: int
) -> None:
    with DashboardPool() as pool, pytest.raises(DashboardError) as caught:
        pool.dashboard(endpoint, token=token).list_jobs()
    assert type(caught.value) is DashboardError
    assert caught.value.status_code == status
