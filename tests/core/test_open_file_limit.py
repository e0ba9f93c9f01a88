"""`tidelog serve` raises its soft open-file limit to the hard one (every partition holds about
five descriptors), so the common soft default of 1,024 does not cap a broker at a few dozen
partitions; and the partition limit derived from the open-file limit keeps room for connections
without refusing everything under a small limit."""

import resource
import sys

from broker_process import BrokerProcess

from tidelog.cli.client import KafkaClient
from tidelog.core.admin import partition_limit


class SoftLimited(BrokerProcess):
    def command(self) -> list[str]:
        boot = (
            "import resource, runpy, sys; resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 8192)); "
            "sys.argv = ['tidelog'] + sys.argv[1:]; runpy.run_module('tidelog', run_name='__main__')"
        )
        return [sys.executable, "-c", boot, *super().command()[3:]]


def test_serve_raises_the_soft_open_file_limit(tmp_path):
    b = SoftLimited(tmp_path / "data").start()
    try:
        limits = [line for line in open(f"/proc/{b.proc.pid}/limits") if line.startswith("Max open files")]
        assert limits and limits[0].split()[3:5] == ["8192", "8192"], limits
        with KafkaClient(b.bootstrap) as c:
            resp = c.request(
                19,
                {"topics": [{"name": "wide", "num_partitions": 400, "replication_factor": 1}], "timeout": 5000},
                version=3,
            )
            assert resp.topics[0].error_code.value == 0, resp  # past what a soft 1,024 would allow
        assert "open-file limit raised from 1024 to 8192" in b.log()
    finally:
        b.stop()


def test_partition_limit_under_small_limits():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))
        assert partition_limit() == (1024 - 256) // 5  # a quarter kept for connections, not 2,048
        if hard == resource.RLIM_INFINITY or hard >= 20000:
            resource.setrlimit(resource.RLIMIT_NOFILE, (20000, hard))
            assert partition_limit() == (20000 - 2048) // 5
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
