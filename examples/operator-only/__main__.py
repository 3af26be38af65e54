"""The operator alone, ready for production: two replicas, metrics, optional alerts."""

import pulumi

from pulumi_ray import RayOperator, RayOperatorArgs

config = pulumi.Config()
# A Prometheus Operator must be installed for these two (they are its custom resources).
monitoring = config.get_bool("monitoring") or False

operator = RayOperator(
    "ray-operator",
    RayOperatorArgs(
        namespace=config.get("namespace") or "ray-system",
        # Your registry's copy of the image (`make image`, `python -m hack.image push`); the
        # component refuses to run without one and says how to get it.
        image=config.get("operatorImage"),
        # Two replicas: a standby takes the Lease within seconds when the leader's node goes.
        replicas=config.get_int("replicas") or 2,
        feature_gates={"RayCronJob": True},
        log_format="json",
        service_monitor=monitoring,
        prometheus_rule=monitoring,
        monitoring_labels={"release": config.get("prometheusRelease") or "kube-prometheus-stack"},
    ),
)

pulumi.export("namespace", operator.namespace)
pulumi.export("deployment", operator.deployment_name)
pulumi.export("metricsService", operator.metrics_service_name)
pulumi.export("clusterRole", operator.cluster_role_name)
