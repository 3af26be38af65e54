"""The ray.io/v1 operator: API models, pure renderers, the controller runtime and controllers.

Layers, strictly one way (checked by import-linter, see pyproject.toml):
``controllers -> render, api, runtime, clients`` and ``render -> api``. ``api`` and
``render`` import neither pulumi nor the kubernetes client.
"""

__all__: list[str] = []
