"""The policy pack's entry point: `pulumi preview --policy-pack policy/` runs this file."""

from components.policy.pack import serve

serve()
