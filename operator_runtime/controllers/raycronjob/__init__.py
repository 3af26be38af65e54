"""The RayCronJob controller (``controller.py``): a RayJob per tick of a cron schedule
(``schedule.py``), only with the ``RayCronJob`` feature gate on."""

from operator_runtime.controllers.raycronjob.controller import (
    PERMISSIONS,
    WATCHED,
    CronCaches,
    RayCronJobController,
    enabled,
)

__all__ = ["PERMISSIONS", "WATCHED", "CronCaches", "RayCronJobController", "enabled"]
