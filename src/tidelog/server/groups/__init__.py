"""Consumer groups (classic protocol): state machine, coordinator, durable offsets in __consumer_offsets."""

from .coordinator import GroupCoordinator, coordinator_of

__all__ = ["GroupCoordinator", "coordinator_of"]
