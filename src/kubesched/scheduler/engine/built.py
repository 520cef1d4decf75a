"""What the engine runs: a configuration's profiles, built (by `scheduler.profiles.manager`), as one value."""

from __future__ import annotations

from dataclasses import dataclass

from kubesched.config.profiles import SchedulerConfiguration
from kubesched.framework.build import Profile
from kubesched.framework.registry import Registry


@dataclass
class Built:
    """Everything a configuration yields, swapped in as one value (a hot reload swaps the whole)."""

    config: SchedulerConfiguration
    registry: Registry
    profiles: dict[str, Profile]
