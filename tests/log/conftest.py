import pytest
from loghelpers import T0

from tidelog.log import LogConfig, PartitionLog


class FakeClock:
    def __init__(self, now: int = T0) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def open_log(tmp_path, clock):
    opened = []

    def make(config: LogConfig | None = None, **kw) -> PartitionLog:
        log = PartitionLog.open(tmp_path, "t", 0, config or LogConfig(), clock, **kw)
        opened.append(log)
        return log

    yield make
    for log in opened:
        try:
            log.close()
        except Exception:  # noqa: BLE001 - a test that already closed or broke its log
            pass
