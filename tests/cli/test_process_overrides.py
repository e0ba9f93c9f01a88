"""`tidelog serve --processes N`: each broker process's configuration (tidelog/cli/processes.py),
as pure functions of the command's own."""

from __future__ import annotations

import argparse
import os

import pytest

from tidelog.cli.processes import node_overrides, serve_argv
from tidelog.core.config import ConfigError, load_config


def test_node_i_gets_its_id_directory_ports_and_etcd():
    config = load_config(None, ["log.dirs=/d/a,/d/b", "listeners=PLAINTEXT://127.0.0.1:9092,SSL://:9093"])
    out = dict(o.split("=", 1) for o in node_overrides(config, 3, "127.0.0.1:2379/tidelog"))
    assert out["node.id"] == "3"
    assert out["process.count"] == "1"  # a child is one broker, never a supervisor again
    assert out["log.dirs"] == "/d/a/node-3,/d/b/node-3"
    assert out["listeners"] == "PLAINTEXT://127.0.0.1:9096,SSL://:9097"  # two ports a node
    assert out["etcd.connect"] == "127.0.0.1:2379/tidelog"
    assert out["offsets.topic.replication.factor"] == "1"
    assert out["transaction.state.log.min.isr"] == "1"
    assert "advertised.listeners" not in out and "metrics.listener" not in out
    assert "schema.registry.listeners" not in out


def test_node_1_keeps_the_configured_ports_and_what_the_user_set_wins():
    config = load_config(
        None,
        [
            "listeners=PLAINTEXT://0.0.0.0:9092",
            "advertised.listeners=PLAINTEXT://kafka.example:19092",
            "metrics.listener=127.0.0.1:9404",
            "schema.registry.listeners=http://127.0.0.1:8081",
            "offsets.topic.replication.factor=2",
            "broker.id=7",
        ],
    )
    one = dict(o.split("=", 1) for o in node_overrides(config, 1, "e:1/x"))
    two = dict(o.split("=", 1) for o in node_overrides(config, 2, "e:1/x"))
    assert one["listeners"] == "PLAINTEXT://0.0.0.0:9092" and two["listeners"] == "PLAINTEXT://0.0.0.0:9093"
    assert two["advertised.listeners"] == "PLAINTEXT://kafka.example:19093"
    assert two["metrics.listener"] == "127.0.0.1:9405"
    assert one["schema.registry.listeners"] == "http://127.0.0.1:8081"
    assert two["schema.registry.listeners"] == "http://127.0.0.1:8082"
    assert two["schema.registry.topic.replication.factor"] == "1"  # one host: as the internal topics
    assert "offsets.topic.replication.factor" not in two  # configured: the user's 2 stays
    assert two["broker.id"] == "-1"  # node.id names the node


def test_an_ephemeral_port_stays_ephemeral():
    config = load_config(None, ["listeners=PLAINTEXT://127.0.0.1:0"])
    assert "listeners=PLAINTEXT://127.0.0.1:0" in node_overrides(config, 2, "e:1")


def test_process_count_is_a_count_or_auto():
    assert load_config(None, [])["process.count"] == 1
    assert load_config(None, ["process.count=auto"])["process.count"] == (os.cpu_count() or 1)
    assert load_config(None, ["process.count=4"])["process.count"] == 4
    with pytest.raises(ConfigError):
        load_config(None, ["process.count=0"])


def test_a_child_reads_the_commands_configuration_then_its_own():
    args = argparse.Namespace(config="server.properties", env_prefix="KAFKA_", override=["process.count=3", "a=b"])
    argv = serve_argv(args)
    assert argv[1:4] == ["-m", "tidelog", "serve"]
    assert argv[4:] == ["--config", "server.properties", "--env-prefix", "KAFKA_"] + [
        "--override",
        "process.count=3",
        "--override",
        "a=b",
    ]
