"""The policy pack's entry point: `pulumi preview --policy-pack policy/` runs this file."""

from pulumi_ray.policy.pack import serve

serve()
