# The two commands a newcomer runs: `make serve` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
STAMP   = $(VENV)/.installed

.PHONY: serve test test-fast peer-tests simulate setup kcat java etcd clean bench check format kafka kafka-jars cluster

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,spark]'
	touch $(STAMP)

setup: $(STAMP)

# Sets up and starts the broker on 127.0.0.1:9092 with data in ./data.
serve: $(STAMP)
	$(VENV)/bin/tidelog serve --override log.dirs=./data

# Installs kcat when missing (Debian/Ubuntu), then runs the whole test suite.
kcat:
	@command -v kcat >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq kcat >/dev/null; }

# Installs etcd (Debian's etcd-server) when missing: cluster mode's coordination store, for the cluster tests.
etcd:
	@command -v etcd >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq etcd-server >/dev/null; }

# One etcd and three brokers on loopback (data in ./cluster-data; it prints the bootstrap servers), until Ctrl-C.
cluster: $(STAMP) etcd
	$(PY) tests/cluster_process.py --brokers 3 --dir ./cluster-data

# Installs a Java 17 runtime for the Spark tests when no `java` is on PATH (Debian/Ubuntu).
java:
	@command -v java >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq openjdk-17-jre-headless >/dev/null; }

# Resolves Apache Kafka 4.3.1 (broker and tools) from Maven Central into ~/.m2 (java/kafka/pom.xml), and Spark's
# Kafka source (java/spark-kafka/pom.xml);
# installs Maven and a JDK (javac, for the Java client checks) when missing (Debian/Ubuntu).
# The difference tests, the Java client and tool tests, and `make bench` use it.
kafka-jars: java
	@command -v mvn >/dev/null 2>&1 && command -v javac >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq maven openjdk-17-jdk-headless >/dev/null; }
	@test -s java/kafka/target/classpath.txt -a java/kafka/target/classpath.txt -nt java/kafka/pom.xml || \
	  mvn -B -q -f java/kafka/pom.xml dependency:build-classpath -Dmdep.outputFile=target/classpath.txt
	@test -s java/spark-kafka/target/classpath.txt -a java/spark-kafka/target/classpath.txt -nt java/spark-kafka/pom.xml || \
	  mvn -B -q -f java/spark-kafka/pom.xml dependency:build-classpath -DincludeScope=runtime -Dmdep.outputFile=target/classpath.txt

# Apache Kafka itself (KRaft single node) on 127.0.0.1:9092 with data in a temporary directory, until Ctrl-C.
kafka: $(STAMP) kafka-jars
	$(PY) tests/kafka_process.py --port 9092

# Lint (ruff), format check and type check (mypy: strict on every package but cli/ and spark_export/).
check: $(STAMP)
	$(VENV)/bin/ruff check src tests fuzz bench
	$(VENV)/bin/ruff format --check src tests fuzz bench
	$(VENV)/bin/mypy

# ruff's fixes (import order, pyupgrade) and its formatter, in place
format: $(STAMP)
	$(VENV)/bin/ruff check --fix src tests fuzz bench
	$(VENV)/bin/ruff format src tests fuzz bench

# Every test but the peer tests, which download a client project's suite from GitHub (below).
test: $(STAMP) kcat java etcd kafka-jars check
	$(PY) -m pytest -q --ignore=tests/peers $(PYTEST_ARGS)

# The fast tier, before every commit: no JVM, no Spark, no process started (brokers, etcd,
# clusters; tests marked interop are left to `make test`); the scripted cluster simulations and 20
# random seeds included. Under 3 minutes.
FAST_TESTS = tests/arch tests/wire tests/log tests/txn tests/core/test_group_configs.py tests/core/test_broker_key_types.py tests/core/test_group_commit.py tests/share tests/server/test_handlers_unit.py tests/server/handlers \
	tests/groups tests/server/test_router_schemas.py \
	tests/server/test_socket_buffers.py tests/security/test_authorizer.py tests/security/test_sasl_mechanisms.py \
	tests/security/test_settings.py tests/fuzz/test_decoders.py tests/cluster/test_model_unit.py tests/cluster/test_replica_unit.py \
	tests/cluster/test_controller_unit.py tests/cluster/test_history_checker.py tests/cluster/test_security_seed.py tests/sim \
	tests/cli/test_process_overrides.py tests/registry tests/bench
test-fast: $(STAMP) check
	TIDELOG_SIM_SEEDS=$${TIDELOG_SIM_SEEDS:-20} $(PY) -m pytest -q -m "not interop" $(FAST_TESTS) $(PYTEST_ARGS)

# Peer tests: confluent-kafka-python's own integration suite (its pinned commit, downloaded once
# into ~/.cache/tidelog/peers with the packages it imports) against tidelog, all of it: admin,
# consumer (KIP-848 protocol), producer and share-consumer (KIP-932) tests, part of the share
# consumer's once more on a three-broker cluster (etcd). Not part of `make test`: it needs GitHub
# (or TIDELOG_CONFLUENT_SUITE_ARCHIVE, a local `git archive` of the pinned commit).
peer-tests: $(STAMP) etcd
	TIDELOG_PEERS=full $(PY) -m pytest -q tests/peers $(PYTEST_ARGS)

# The deterministic simulation of the cluster (tests/sim/run.py): SEEDS seeds from 0 (or a range
# a:b, b excluded, to split a long run), on every core, a progress line every 100 seeds.
# One failing seed replays exactly: .venv/bin/python tests/sim/run.py --seed N -v
SEEDS ?= 1000
simulate: $(STAMP)
	$(PY) tests/sim/run.py --seeds $(if $(findstring :,$(SEEDS)),$(SEEDS),0:$(SEEDS)) --jobs $$(nproc) --progress 100

# tidelog vs Apache Kafka 4.3.1 vs tansu 0.6.0 side by side (bench/README.md); table and chart in bench/results/;
# then OpenMessaging-Benchmark-style workloads against Kafka 4.3.1, single node and 3 nodes RF 3 (bench/workloads.py:
# publish and end-to-end latency percentiles, broker CPU per record); then acks=all throughput of RF 3 vs RF 1
# on a three-broker cluster (bench/cluster_replication.py), then its recovery times after a leader's SIGKILL,
# SIGSTOP, SIGTERM and an etcd kill (bench/cluster_failover.py), then the Spark export: decoders, pyarrow's write,
# the Parquet, Delta and Iceberg exports and the tidelog scan in rows/s at 1M and 4M records (bench/spark_export.py),
# and how far `tidelog export --follow` trails producers writing 50k records/s with segment.ms=10000
# (bench/export_follow.py).
# BENCH_ARGS=--quick for a few-minute run.
bench: $(STAMP) kafka-jars
	$(PY) -m pip install -q 'matplotlib>=3.7'
	$(PY) bench/compare.py $(BENCH_ARGS)
	$(MAKE) etcd
	$(PY) bench/workloads.py $(BENCH_ARGS)
	$(PY) bench/cluster_replication.py
	$(PY) bench/cluster_failover.py
	$(PY) bench/spark_export.py --records 1000000
	$(PY) bench/spark_export.py --records 4000000
	$(PY) bench/export_follow.py --rate 50000 --seconds 120 --segment-ms 10000

clean:
	rm -rf $(VENV) build *.egg-info
