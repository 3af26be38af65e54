"""Clients of the Ray head: the dashboard's Jobs and Serve APIs and the serve proxy.

The controllers reach every head through one ``DashboardPool`` made at start-up;
``errors`` draws the exception tree they branch on. Nothing here imports pulumi or the
operator's runtime: a client knows HTTP and Ray, not Kubernetes.
"""

from operator_runtime.clients.dashboard import (
    DASHBOARD_PORT,
    JSON_LIMIT,
    SERVE_PORT,
    Addressing,
    DashboardClient,
    DashboardPool,
    Endpoint,
    ServeProxyClient,
    dashboard_endpoint,
    direct_endpoint,
    serve_proxy_endpoint,
    url_host,
)
from operator_runtime.clients.errors import (
    DashboardError,
    DashboardNotFound,
    DashboardUnavailable,
    DuplicateSubmission,
)
from operator_runtime.clients.models import (
    JobInfo,
    JobStatus,
    JobSubmission,
    ServeApplication,
    ServeDeployment,
    ServeDetails,
    SubmittedJob,
)

__all__ = [
    "DASHBOARD_PORT",
    "JSON_LIMIT",
    "SERVE_PORT",
    "Addressing",
    "DashboardClient",
    "DashboardError",
    "DashboardNotFound",
    "DashboardPool",
    "DashboardUnavailable",
    "DuplicateSubmission",
    "Endpoint",
    "JobInfo",
    "JobStatus",
    "JobSubmission",
    "ServeApplication",
    "ServeDeployment",
    "ServeDetails",
    "ServeProxyClient",
    "SubmittedJob",
    "dashboard_endpoint",
    "direct_endpoint",
    "serve_proxy_endpoint",
    "url_host",
]
