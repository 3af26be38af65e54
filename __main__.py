"""The platform team's stack template: a RayOperator and the Ray workloads of each
namespace, all from stack config (schema in ``Pulumi.yaml``, documented in the README and
in ``components/stack_template.py``). Copy ``Pulumi.yaml`` and this file into a repository
of your own, or run ``pulumi up`` here."""

from pulumi_ray.stack_template import deploy

deploy()
