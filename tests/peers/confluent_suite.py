"""confluent-kafka-python's own integration tests, run against tidelog (the peer tests).

The suite is never committed here: `fetch_suite()` downloads the pinned commit's source archive
from GitHub over https once, keeps only `tests/` and `pyproject.toml` (its pytest settings) in a
cache directory, and checks them against `TREE_SHA256` (a digest of the extracted files, so it
does not depend on how GitHub compresses the archive). `install_deps()` installs the pinned
packages its fixtures import (Schema Registry clients, Avro, JSON Schema, Protobuf: the suite's
conftest imports them all) with `pip --target` into the cache, beside (not into) the project's
virtual environment; the confluent-kafka under test is the project's own.

`run_suite()` runs the suite's pytest in a subprocess, in the suite's directory, with its own
`BROKERS` switch (its fixture then uses an existing cluster instead of starting one with trivup),
`TEST_CONSUMER_GROUP_PROTOCOL=consumer` (KIP-848 consumers) and `confluent_adapter` as a plugin
(the SASL fixture pointed at a tidelog listener; trivup stubbed out), minus `DESELECTED`.

    python tests/peers/confluent_suite.py --bootstrap 127.0.0.1:9092 --sasl-bootstrap 127.0.0.1:9093 [PATHS]
    python tests/peers/confluent_suite.py --digest DIR     # TREE_SHA256 of an extracted tree (a new pin)

Environment: TIDELOG_PEERS_CACHE (default ~/.cache/tidelog/peers) holds the suite and its
packages; TIDELOG_CONFLUENT_SUITE_ARCHIVE names a local copy of the archive for a machine without
access to GitHub (`git archive --format=tar.gz --prefix=suite/ COMMIT` of a clone will do: one top
directory, as GitHub's): the digest is checked all the same.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent

# The newest tagged suite this project could verify: v2.15.0. The client under test is the
# project's confluent-kafka (2.16.x); the 2.15.0 suite runs against it unchanged.
TAG = "v2.15.0"
COMMIT = "8b1c7a613434eee3d0e1287d624d7af04932f410"
ARCHIVE_URL = f"https://github.com/confluentinc/confluent-kafka-python/archive/{COMMIT}.tar.gz"
TREE_SHA256 = "bb95faa474a26d5e67d2e21eed85523ac66e39c3132e1470ad5368c34df1a02d"
KEPT = ("tests/", "pyproject.toml")

# What the suite's conftest and fixtures import beyond confluent-kafka, with every dependency
# pinned (installed with --no-deps, so this list is the whole set).
DEPS = (
    "anyio==4.16.0",
    "attrs==26.1.0",
    "authlib==1.9.10",
    "avro==1.12.2",
    "cachetools==8.0.2",
    "certifi==2026.10.19.post1",
    "cffi==2.1.1",
    "charset-normalizer==3.5.3",
    "cryptography==50.0.2",
    "fastavro==1.13.1",
    "googleapis-common-protos==1.76.0",
    "h11==0.16.0",
    "httpcore2==2.16.2",
    "httpx2==2.16.2",
    "idna==3.20",
    "joserfc==1.8.0",
    "jsonschema==4.26.0",
    "jsonschema-specifications==2025.9.1",
    "protobuf==7.36.2",
    "pycparser==3.12",
    "referencing==0.37.0",
    "requests==2.34.2",
    "rpds-py==2026.9.1",
    "truststore==0.10.5",
    "urllib3==2.8.0",
)

# The parts of tests/integration run here, in two runs: the admin, consumer (KIP-848 consumer
# protocol) and producer clients, and the share consumer (KIP-932). Left out as whole directories:
# schema_registry (needs a Schema Registry service: not a broker's), share_consumer_oauth
# (SASL/OAUTHBEARER: tidelog offers PLAIN and SCRAM) and integration_test.py (a standalone
# script whose one pytest entry skips itself).
FULL: dict[str, tuple[str, ...]] = {
    "clients": (
        "tests/integration/admin",
        "tests/integration/consumer",
        "tests/integration/producer",
        "tests/integration/serialization",
        "tests/integration/share_consumer_sasl",
    ),
    "share": ("tests/integration/share_consumer",),
}
# `make test`'s part (about 4 minutes of the 10): the clients whole, the share consumer without its
# two longest files (test_share_consumer.py, test_share_consumer_commit.py).
SUBSET: dict[str, tuple[str, ...]] = {
    "clients": FULL["clients"],
    "share": (
        "tests/integration/share_consumer/test_share_consumer_ack.py",
        "tests/integration/share_consumer/test_share_consumer_callbacks.py",
        "tests/integration/share_consumer/test_share_consumer_close.py",
        "tests/integration/share_consumer/test_share_consumer_deserialization.py",
    ),
}

_SR = "needs a Schema Registry service (tidelog is a broker; the suite's own registry fixture is trivup's)"
_QUOTA = "needs client quotas (kafka-configs.sh --entity-type clients): tidelog has none and never throttles"
# test node id (relative to the suite's root) -> why it cannot run against tidelog
DESELECTED: dict[str, str] = {
    "tests/integration/share_consumer/test_share_consumer.py::test_partition_max_record_locks_caps_in_flight": (
        "fails against Kafka 4.3.1 the same way (a poll acquires all 200 records): they are produced in one log "
        "batch, and a share partition acquires whole log batches past its lock limit, in Kafka as in tidelog "
        "(the suite's CI broker, Kafka 4.2.0, refuses the per-group config, so there the test skips itself)"
    ),
    "tests/integration/share_consumer/test_share_consumer_commit.py::test_sync_commit_releases_gil": (
        "timing: counts a busy thread's progress while commit_sync waits for the broker; tidelog answers the "
        "ShareAcknowledge in well under a millisecond on loopback, often before that thread is scheduled"
    ),
    "tests/integration/share_consumer/test_share_consumer_callbacks.py::test_throttle_cb_fires_under_quota": _QUOTA,
    "tests/integration/share_consumer/test_share_consumer_callbacks.py::test_throttle_cb_reentrant_call_raises_state": (
        _QUOTA
    ),
    "tests/integration/share_consumer/test_share_consumer_callbacks.py::test_throttle_cb_emits_cleared_zero_event": (
        _QUOTA
    ),
    **{
        f"tests/integration/share_consumer/test_share_consumer_deserialization.py::{name}[{fmt}]": _SR
        for name in ("test_schema_registry_roundtrip", "test_schema_registry_poison_marked")
        for fmt in ("avro", "protobuf", "json")
    },
}


def cache_dir() -> Path:
    return Path(os.environ.get("TIDELOG_PEERS_CACHE") or Path.home() / ".cache" / "tidelog" / "peers")


def tree_digest(root: Path) -> str:
    """sha256 over the kept files: each one's relative path and the sha256 of its bytes, sorted."""
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(KEPT):
            h.update(f"{rel}\0{hashlib.sha256(path.read_bytes()).hexdigest()}\n".encode())
    return h.hexdigest()


def _archive_bytes() -> bytes:
    local = os.environ.get("TIDELOG_CONFLUENT_SUITE_ARCHIVE")
    if local:
        return Path(local).read_bytes()
    try:
        with urllib.request.urlopen(ARCHIVE_URL, timeout=120) as resp:
            return bytes(resp.read())
    except OSError as e:  # URLError included
        raise RuntimeError(
            f"cannot download {ARCHIVE_URL} ({e}); TIDELOG_CONFLUENT_SUITE_ARCHIVE may name a local copy "
            f"(`git archive --format=tar.gz --prefix=suite/ {COMMIT}` in a clone of confluent-kafka-python)"
        ) from e


def _extract(data: bytes, dest: Path) -> None:
    """The kept members, the archive's top directory stripped; regular files only."""
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar.getmembers():
            parts = member.name.split("/", 1)
            if len(parts) != 2 or not member.isfile() or not parts[1].startswith(KEPT):
                continue
            rel = Path(parts[1])
            if rel.is_absolute() or ".." in rel.parts:
                raise RuntimeError(f"unexpected path in the suite's archive: {member.name}")
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            src = tar.extractfile(member)
            assert src is not None
            target.write_bytes(src.read())
            if member.mode & 0o100:
                target.chmod(0o755)


def fetch_suite() -> Path:
    """The suite's directory (tests/, pyproject.toml), downloaded and checked on first use."""
    root = cache_dir() / f"confluent-kafka-python-{COMMIT[:12]}"
    if (root / ".verified").exists():
        return root
    data = _archive_bytes()
    cache_dir().mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="suite-", dir=cache_dir()))
    try:
        _extract(data, tmp)
        got = tree_digest(tmp)
        if got != TREE_SHA256:
            raise RuntimeError(f"confluent-kafka-python {TAG} ({COMMIT}): tree digest {got} != pinned {TREE_SHA256}")
        (tmp / ".verified").write_text(f"{TAG} {COMMIT} {got}\n")
        shutil.rmtree(root, ignore_errors=True)
        tmp.rename(root)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return root


def install_deps() -> Path:
    """The pinned packages, installed once into their own directory of the cache."""
    key = hashlib.sha256(f"{sys.version_info[:2]}\n{chr(10).join(DEPS)}".encode()).hexdigest()[:12]
    target = cache_dir() / f"confluent-deps-{key}"
    if (target / ".installed").exists():
        return target
    shutil.rmtree(target, ignore_errors=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), *DEPS],
        check=True,
    )
    (target / ".installed").write_text("\n".join(DEPS) + "\n")
    return target


@dataclass
class Outcome:
    returncode: int
    passed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)  # per test file
    output: str = ""

    def summary(self) -> str:
        lines = [f"{len(self.passed)} passed, {len(self.failed)} failed, {len(self.skipped)} skipped"]
        lines += [f"FAILED {t}" for t in self.failed]
        lines += [f"SKIPPED {t}: {why}" for t, why in self.skipped.items()]
        lines += [f"{s:7.1f} s  {f}" for f, s in sorted(self.seconds.items())]
        return "\n".join(lines)

    def read_junit(self, path: Path) -> None:
        for case in ET.parse(path).getroot().iter("testcase"):
            file = f"{case.get('classname', '').replace('.', '/')}.py"
            name = f"{file}::{case.get('name')}"
            self.seconds[file] = self.seconds.get(file, 0.0) + float(case.get("time", "0"))
            if case.find("failure") is not None or case.find("error") is not None:
                self.failed.append(name)
            elif (skip := case.find("skipped")) is not None:
                self.skipped[name] = skip.get("message", "")
            else:
                self.passed.append(name)


def run_suite(
    bootstrap: str,
    sasl_bootstrap: str,
    paths: tuple[str, ...] = FULL["clients"] + FULL["share"],
    extra_args: tuple[str, ...] = (),
    timeout: float = 3600,
) -> Outcome:
    suite, deps = fetch_suite(), install_deps()
    junit = Path(tempfile.mkdtemp(prefix="junit-")) / "suite.xml"
    env = {
        **os.environ,
        "BROKERS": bootstrap,
        "TIDELOG_SASL_BOOTSTRAP": sasl_bootstrap,
        "TEST_CONSUMER_GROUP_PROTOCOL": "consumer",
        "PYTHONPATH": os.pathsep.join([str(HERE), str(deps), os.environ.get("PYTHONPATH", "")]),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "confluent_adapter",
        "-p",
        "no:cacheprovider",
        "-q",
        "-rfEs",
        "--timeout",
        "300",
        f"--junitxml={junit}",
        *(f"--deselect={t}" for t in DESELECTED),
        *extra_args,
        *paths,
    ]
    proc = subprocess.run(cmd, cwd=suite, env=env, capture_output=True, text=True, timeout=timeout)
    out = Outcome(proc.returncode, output=proc.stdout[-20000:] + proc.stderr[-5000:])
    if junit.exists():
        out.read_junit(junit)
    shutil.rmtree(junit.parent, ignore_errors=True)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description="confluent-kafka-python's integration tests against a running broker")
    p.add_argument("--bootstrap", help="PLAINTEXT listener of the broker")
    p.add_argument("--sasl-bootstrap", default="", help="its SASL_PLAINTEXT listener (PLAIN user sasl_user)")
    p.add_argument("--digest", type=Path, help="print the tree digest of an extracted suite and exit")
    p.add_argument("--subset", action="store_true", help="`make test`'s part only")
    p.add_argument("paths", nargs="*", help="test paths inside the suite (default: every part run here)")
    args = p.parse_args()
    if args.digest:
        print(tree_digest(args.digest))
        return 0
    if not args.bootstrap:
        p.error("--bootstrap is required")
    parts = SUBSET if args.subset else FULL
    paths = tuple(args.paths) or parts["clients"] + parts["share"]
    out = run_suite(args.bootstrap, args.sasl_bootstrap, paths)
    print(out.output)
    print(out.summary())
    return out.returncode


if __name__ == "__main__":
    sys.exit(main())
