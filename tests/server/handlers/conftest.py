import pytest

from .kit import ADVERTISED, started_broker


@pytest.fixture
async def broker(tmp_path):
    """A started single-node broker (topic "t", 2 partitions) that advertises kafka.example:19092."""
    async with started_broker(tmp_path, ADVERTISED, "group.initial.rebalance.delay.ms=0") as b:
        yield b
