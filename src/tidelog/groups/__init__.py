"""Consumer groups (classic protocol): state machine, coordinator, durable offsets in __consumer_offsets."""

from .coordinator import OFFSETS_TOPIC, GroupCoordinator

__all__ = ["OFFSETS_TOPIC", "GroupCoordinator"]
