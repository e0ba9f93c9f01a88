"""Consumer groups (classic protocol): state machine, coordinator, durable offsets in __consumer_offsets."""

from .coordinator import GroupCoordinator
from .membership import ClassicJoin

__all__ = ["ClassicJoin", "GroupCoordinator"]
