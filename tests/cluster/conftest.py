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


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, request):
    """One etcd and three brokers, as real processes, for one test module (its CLUSTER_OVERRIDES
    added to every broker's settings)."""
    from cluster_process import Cluster

    overrides = getattr(request.module, "CLUSTER_OVERRIDES", None)  # a module's own broker settings
    c = Cluster(tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1]), 3, overrides).start()
    try:
        yield c
    finally:
        c.stop()


@pytest.fixture(autouse=True)
def _heal_cluster_after(request):
    """After each test that used the module's `cluster`: bring back any broker it left stopped or
    paused. A test that fails between stopping a broker and starting it again would otherwise leave
    every later test of the module a cluster of two, and their failures would hide the first one."""
    yield
    if "cluster" in request.fixturenames:
        request.getfixturevalue("cluster").heal()
