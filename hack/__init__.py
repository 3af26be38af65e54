"""Developer tooling: the local control plane and the Pulumi engine, built from Go modules."""
