import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from etcd_process import EtcdProcess


@pytest.fixture(scope="module")
def etcd(tmp_path_factory):
    if shutil.which("etcd") is None and not Path("/usr/bin/etcd").exists():
        pytest.fail("etcd is not installed (make test installs Debian's etcd-server)")
    e = EtcdProcess(tmp_path_factory.mktemp("etcd") / "data").start()
    try:
        yield e
    finally:
        e.stop()
