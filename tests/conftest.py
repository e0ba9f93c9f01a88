import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from broker_process import BrokerProcess

from tidelog.core.admin import raise_open_file_limit

# In-process brokers (tests/fuzz) live in this process: give it what `tidelog serve` gives itself.
raise_open_file_limit()

CAPTURES = Path(__file__).parent / "data" / "client-requests.jsonl"


@pytest.fixture
def broker_factory(tmp_path):
    started: list[BrokerProcess] = []

    def make(overrides: dict | None = None, name: str = "data") -> BrokerProcess:
        b = BrokerProcess(tmp_path / name, overrides)
        started.append(b)
        return b.start()

    yield make
    for b in started:
        b.stop()


@pytest.fixture
def broker(broker_factory) -> BrokerProcess:
    return broker_factory()


@pytest.fixture(scope="session")
def kcat() -> str:
    path = shutil.which("kcat") or shutil.which("kafkacat")
    if path is None:
        pytest.fail("kcat is not installed; `make test` installs it with apt-get")
    return path


@pytest.fixture(scope="session")
def captures_path() -> Path:
    """Request frames captured from the four real clients (a copy of shared/captures)."""
    return CAPTURES


@pytest.fixture(scope="module")
def module_broker(tmp_path_factory, request):
    """One broker for a whole test module; overrides from the module's BROKER_OVERRIDES."""
    overrides = getattr(request.module, "BROKER_OVERRIDES", {})
    b = BrokerProcess(tmp_path_factory.mktemp("broker") / "data", overrides).start()
    yield b
    b.stop()
