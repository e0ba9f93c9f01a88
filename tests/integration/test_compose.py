"""docker-compose.yml and the Dockerfile, checked without a container engine, and
`compose_equivalent`: the compose services started as processes with the images' own
entrypoints, then a produce -> consume -> export round trip through them.

The structure checks take about a second; the round trip 90-120 s (most of it the Spark
driver starting), and is skipped when pyspark is not installed (`pip install -e '.[spark]'`)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml
from broker_process import free_port

from tidelog.core.config import BROKER_KEYS, BrokerConfig
from tidelog.core.envconfig import env_overrides, env_to_property

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
BIN = Path(sys.executable).parent

# What the round trip below runs; the checks make sure the images run exactly this.
BROKER_ENTRYPOINT = ["tidelog", "serve", "--env-prefix", "KAFKA_"]
EXPORT_ENTRYPOINT = ["tidelog-export-loop"]
EXPORT_SCRIPT = "docker/export-loop.sh"


def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def dockerfile_stages() -> dict[str, list[str]]:
    """Stage name -> its instructions (continuation lines joined, comments dropped)."""
    stages: dict[str, list[str]] = {}
    current = None
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.upper().startswith("FROM "):
            parts = line.split()
            current = parts[3] if len(parts) >= 4 and parts[2].upper() == "AS" else parts[1]
            stages[current] = []
        stages[current].append(line)  # type: ignore[index]
    return stages


def instruction(stage: list[str], name: str) -> list[str]:
    return [line[len(name) :].strip() for line in stage if line.upper().startswith(name + " ")]


# ---- the CI step: structure of the compose file and the Dockerfile ---------------------------


def test_compose_file_structure():
    c = compose()
    default = {n for n, svc in c["services"].items() if not svc.get("profiles")}
    assert default == {"broker", "export"}
    assert {"tidelog-data", "tidelog-warehouse"} <= set(c["volumes"])
    broker, export = c["services"]["broker"], c["services"]["export"]

    assert broker["build"]["target"] == "broker" and export["build"]["target"] == "export"
    assert broker["entrypoint"] == BROKER_ENTRYPOINT and export["entrypoint"] == EXPORT_ENTRYPOINT
    assert "9092:9092" in broker["ports"] and "9404:9404" in broker["ports"]

    env = {k: str(v) for k, v in broker["environment"].items()}
    assert all(k.startswith("KAFKA_") for k in env)
    unknown = [k for k in env if env_to_property(k[len("KAFKA_") :]) not in BROKER_KEYS]
    assert not unknown, f"not broker properties: {unknown}"
    config = BrokerConfig(dict(item.split("=", 1) for item in env_overrides(env, "KAFKA_")))  # values valid
    assert config.listeners[0].port == 9092
    assert config["metrics.listener"].endswith(":9404")
    data_dir = env["KAFKA_LOG_DIRS"]
    assert f"tidelog-data:{data_dir}" in broker["volumes"]

    hc = broker["healthcheck"]
    assert hc["test"][0] == "CMD" and hc["test"][1:3] == ["tidelog", "topics"]
    assert hc["test"][-1] == f"127.0.0.1:{config.listeners[0].port}"

    assert export["depends_on"] == {"broker": {"condition": "service_healthy"}}
    eenv = {k: str(v) for k, v in export["environment"].items()}
    assert eenv["EXPORT_LOG_DIRS"] == data_dir
    assert f"tidelog-data:{data_dir}:ro" in export["volumes"]  # the export never writes the log
    assert f"tidelog-warehouse:{eenv['EXPORT_WAREHOUSE']}" in export["volumes"]
    assert int(eenv["EXPORT_INTERVAL_SECONDS"]) > 0


def test_dockerfile_entrypoints_are_what_the_tests_run():
    stages = dockerfile_stages()
    assert {"base", "broker", "export"} <= set(stages)
    assert json.loads(instruction(stages["broker"], "ENTRYPOINT")[0]) == BROKER_ENTRYPOINT
    assert json.loads(instruction(stages["export"], "ENTRYPOINT")[0]) == EXPORT_ENTRYPOINT
    healthcheck = instruction(stages["broker"], "HEALTHCHECK")[0]
    assert json.loads(healthcheck.split(" CMD ", 1)[1]) == compose()["services"]["broker"]["healthcheck"]["test"][1:]
    copies = instruction(stages["export"], "COPY")
    assert any(c.split()[-2:] == [EXPORT_SCRIPT, "/usr/local/bin/" + EXPORT_ENTRYPOINT[0]] for c in copies), copies
    assert "9092" in instruction(stages["broker"], "EXPOSE")[0]
    env = " ".join(instruction(stages["broker"], "ENV"))
    assert "KAFKA_LOG_DIRS=" + compose()["services"]["broker"]["environment"]["KAFKA_LOG_DIRS"] in env
    assert any("[tools]" in r for r in instruction(stages["broker"], "RUN"))
    assert any("[spark]" in r and "jre" in r for r in instruction(stages["export"], "RUN"))
    assert "tidelog" in (ROOT / "pyproject.toml").read_text().split("[project.scripts]")[1].split("\n")[1]
    assert subprocess.run(["sh", "-n", str(ROOT / EXPORT_SCRIPT)]).returncode == 0


# ---- compose_equivalent: the same services as processes --------------------------------------


def _service_env(name: str, replace: dict[str, str]) -> dict[str, str]:
    env = {k: str(v) for k, v in compose()["services"][name]["environment"].items()}
    env.update(replace)
    return {**os.environ, **env, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "PYTHONUNBUFFERED": "1"}


def _run(*args, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(BIN / "tidelog"), *map(str, args)], input=stdin, capture_output=True, text=True, timeout=120
    )


@pytest.mark.slow
@pytest.mark.interop
def test_compose_equivalent_produce_consume_export(tmp_path):
    pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.skip("the export service needs a Java runtime")
    c = compose()
    port, mport = free_port(), free_port()
    data, warehouse = tmp_path / "data", tmp_path / "warehouse"
    bootstrap = f"127.0.0.1:{port}"
    broker_env = _service_env(
        "broker",
        {
            "KAFKA_LISTENERS": f"PLAINTEXT://{bootstrap}",
            "KAFKA_ADVERTISED_LISTENERS": f"PLAINTEXT://{bootstrap}",
            "KAFKA_LOG_DIRS": str(data),
            "KAFKA_METRICS_LISTENER": f"127.0.0.1:{mport}",
            "KAFKA_LOG_SEGMENT_BYTES": "8192",  # so that the round trip closes segments for the export
        },
    )
    argv = c["services"]["broker"]["entrypoint"]
    log = open(tmp_path / "broker.log", "wb")
    broker = subprocess.Popen([str(BIN / argv[0]), *argv[1:]], env=broker_env, stdout=log, stderr=subprocess.STDOUT)
    try:
        # depends_on: service_healthy -> run the compose healthcheck until it passes
        health = c["services"]["broker"]["healthcheck"]["test"][1:]
        health = [bootstrap if a.startswith("127.0.0.1:") else a for a in health]
        deadline = time.monotonic() + 60
        while _run(*health[1:]).returncode != 0:
            assert broker.poll() is None, (tmp_path / "broker.log").read_text()
            assert time.monotonic() < deadline, "broker never became healthy"
            time.sleep(0.5)

        assert (
            _run(
                "topics", "create", "--bootstrap-server", bootstrap, "--topic", "roundtrip", "--partitions", "2"
            ).returncode
            == 0
        )
        lines = "".join(f"key-{i}\t{f'value-{i}-'}{'x' * 40}\n" for i in range(400))
        res = _run(
            "produce", "--bootstrap-server", bootstrap, "--topic", "roundtrip", "--batch-size", "2048", stdin=lines
        )
        assert res.returncode == 0, res.stderr
        res = _run(
            "consume",
            "--bootstrap-server",
            bootstrap,
            "--topic",
            "roundtrip",
            "--group",
            "rt",
            "--from-beginning",
            "--format",
            "json",
        )
        assert res.returncode == 0, res.stderr
        consumed = {json.loads(x)["key"]: json.loads(x)["value"] for x in res.stdout.splitlines()}
        assert consumed == {f"key-{i}": f"value-{i}-" + "x" * 40 for i in range(400)}
        metrics = urllib.request.urlopen(f"http://127.0.0.1:{mport}/metrics", timeout=10).read().decode()
        assert 'tidelog_topic_messages_in_total{topic="roundtrip"} 400.0' in metrics

        # the export service, once, while the broker runs (as in compose)
        export_env = _service_env(
            "export", {"EXPORT_LOG_DIRS": str(data), "EXPORT_WAREHOUSE": str(warehouse), "EXPORT_RUNS": "1"}
        )
        res = subprocess.run(
            ["sh", str(ROOT / EXPORT_SCRIPT)], env=export_env, capture_output=True, text=True, timeout=600
        )
        assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-5000:]
    finally:
        broker.send_signal(signal.SIGTERM)
        assert broker.wait(30) == 0
    logged = [json.loads(line) for line in (tmp_path / "broker.log").read_text().splitlines()]  # log.format=json
    assert any(x["msg"] == "tidelog stopped cleanly" for x in logged)

    # Closed segments were exported: per partition, every offset below the active segment's base.
    import pyarrow.dataset as ds

    closed = {}
    for p in (0, 1):
        bases = sorted(int(f.stem) for f in (data / f"roundtrip-{p}").glob("*.log"))
        closed[p] = bases[-1]
    assert sum(closed.values()) > 0, "no segment rolled: nothing to export"
    table = ds.dataset(next(warehouse.rglob("roundtrip")), format="parquet", partitioning="hive").to_table()
    rows = table.to_pylist()
    got = sorted((r["partition"], r["offset"]) for r in rows)
    assert got == sorted((p, o) for p in (0, 1) for o in range(closed[p]))
    assert all(consumed[r["key"].decode()] == r["value"].decode() for r in rows)


# ---- the cluster profile: etcd and three brokers ---------------------------------------------

CLUSTER_BROKERS = ("broker-1", "broker-2", "broker-3")


def test_cluster_profile_structure():
    c = compose()
    svcs = c["services"]
    assert {n for n, svc in svcs.items() if "cluster" in svc.get("profiles", [])} == {"etcd", *CLUSTER_BROKERS}
    etcd_port = next(int(a.rsplit(":", 1)[1]) for a in svcs["etcd"]["command"] if a.startswith("--listen-client-urls"))
    ids, ports, volumes = set(), set(), set()
    for name in CLUSTER_BROKERS:
        b = svcs[name]
        assert b["entrypoint"] == BROKER_ENTRYPOINT and b["build"]["target"] == "broker"
        env = {k: str(v) for k, v in b["environment"].items()}
        unknown = [k for k in env if env_to_property(k[len("KAFKA_") :]) not in BROKER_KEYS]
        assert not unknown, f"{name}: not broker properties: {unknown}"
        config = BrokerConfig(dict(item.split("=", 1) for item in env_overrides(env, "KAFKA_")))
        assert config["etcd.connect"] == f"etcd:{etcd_port}/compose"
        assert config["inter.broker.listener.name"] in {lst.name for lst in config.listeners}
        ids.add(config.node_id)
        ext = [a for a in config.advertised if a.name != config["inter.broker.listener.name"]][0]
        assert f"{ext.port}:{ext.port}" in b["ports"] and ext.host == "localhost"
        internal = [a for a in config.advertised if a.name == config["inter.broker.listener.name"]][0]
        assert internal.host == name  # the other brokers reach it by its service name
        ports.add(ext.port)
        volumes.update(v.split(":")[0] for v in b["volumes"])
    assert ids == {1, 2, 3} and len(ports) == 3 and len(volumes) == 3 and volumes <= set(c["volumes"])


@pytest.mark.interop
def test_compose_cluster_equivalent(tmp_path):
    """The cluster profile as processes: etcd plus the three brokers with their compose
    environment (addresses mapped to loopback ports); a replicated topic round trip."""
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    from etcd_process import EtcdProcess

    c = compose()
    etcd = EtcdProcess(tmp_path / "etcd").start()
    procs = []
    try:
        ports = {name: (free_port(), free_port()) for name in CLUSTER_BROKERS}
        for name in CLUSTER_BROKERS:
            internal, external = ports[name]
            env = _service_env(
                name,
                {
                    "KAFKA_ETCD_CONNECT": f"{etcd.endpoint_hostport}/compose",
                    "KAFKA_LISTENERS": f"INTERNAL://127.0.0.1:{internal},EXTERNAL://127.0.0.1:{external}",
                    "KAFKA_ADVERTISED_LISTENERS": f"INTERNAL://127.0.0.1:{internal},EXTERNAL://127.0.0.1:{external}",
                    "KAFKA_LOG_DIRS": str(tmp_path / name),
                },
            )
            argv = c["services"][name]["entrypoint"]
            log = open(tmp_path / f"{name}.log", "wb")
            procs.append(
                subprocess.Popen([str(BIN / argv[0]), *argv[1:]], env=env, stdout=log, stderr=subprocess.STDOUT)
            )
        bootstrap = ",".join(f"127.0.0.1:{ports[n][1]}" for n in CLUSTER_BROKERS)
        admin = AdminClient({"bootstrap.servers": bootstrap})
        deadline = time.monotonic() + 60
        while len(admin.list_topics(timeout=5).brokers) < 3:
            assert all(p.poll() is None for p in procs), "a broker exited"
            assert time.monotonic() < deadline, "three brokers never registered"
            time.sleep(0.5)
        admin.create_topics([NewTopic("compose-rt", 3)])["compose-rt"].result(20)  # default RF 3
        deadline = time.monotonic() + 30
        while True:
            md = admin.list_topics("compose-rt", timeout=5).topics["compose-rt"]
            if all(len(p.isrs) == 3 and p.leader > 0 for p in md.partitions.values()):
                break
            assert time.monotonic() < deadline, "partitions never fully in sync"
            time.sleep(0.3)
        assert all(len(p.replicas) == 3 for p in md.partitions.values())
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
        for i in range(300):
            producer.produce("compose-rt", f"v{i}".encode(), key=str(i).encode())
        assert producer.flush(30) == 0
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "compose-rt", "auto.offset.reset": "earliest"})
        consumer.subscribe(["compose-rt"])
        got = set()
        deadline = time.monotonic() + 60
        while len(got) < 300 and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and not m.error():
                got.add(m.value().decode())
        consumer.close()
        assert got == {f"v{i}" for i in range(300)}
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            assert p.wait(30) == 0
        etcd.stop()


def test_export_loop_schedule(tmp_path):
    """The loop itself, with a stand-in `tidelog` that records its arguments and fails once:
    runs every EXPORT_INTERVAL_SECONDS, passes EXPORT_ARGS, survives a failed run."""
    stub = tmp_path / "bin" / "tidelog"
    stub.parent.mkdir()
    calls = tmp_path / "calls"
    stub.write_text(f'#!/bin/sh\necho "$@" >> {calls}\n[ "$(wc -l < {calls})" -ne 2 ]\n')
    stub.chmod(0o755)
    env = {
        "PATH": f"{stub.parent}{os.pathsep}{os.environ['PATH']}",
        "EXPORT_LOG_DIRS": "/d1,/d2",
        "EXPORT_WAREHOUSE": "/wh",
        "EXPORT_INTERVAL_SECONDS": "0",
        "EXPORT_ARGS": "--topics a b",
        "EXPORT_RUNS": "3",
    }
    res = subprocess.run(["sh", str(ROOT / EXPORT_SCRIPT)], env=env, capture_output=True, text=True, timeout=30)
    assert res.returncode == 0, res.stderr
    assert calls.read_text().splitlines() == ["export --log-dirs /d1,/d2 --warehouse /wh --topics a b"] * 3
    assert "run failed with exit status 1; retrying next time" in res.stderr
