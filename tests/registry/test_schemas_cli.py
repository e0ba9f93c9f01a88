"""`tidelog schemas` against a real broker's registry."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.interop


def tidelog(*args: object) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tidelog", "schemas", *map(str, args)], capture_output=True, text=True, timeout=60
    )


def test_schemas_cli(registry_broker, tmp_path):
    url = ["--url", registry_broker.url]
    v1 = tmp_path / "user.avsc"
    v1.write_text(json.dumps({"type": "record", "name": "U", "fields": [{"name": "a", "type": "int"}]}))
    bad = tmp_path / "bad.avsc"
    bad.write_text(json.dumps({"type": "record", "name": "U", "fields": [{"name": "a", "type": "string"}]}))
    js = tmp_path / "doc.json"
    js.write_text('{"type": "object"}')

    r = tidelog("register", *url, "--subject", "cli-user", "--file", v1)
    assert r.returncode == 0, r.stderr
    sid = int(r.stdout)
    assert int(tidelog("register", *url, "--subject", "cli-doc", "--file", js).stdout) > sid
    assert tidelog("list", *url).stdout.split() == ["cli-doc", "cli-user"]
    got = json.loads(tidelog("get", *url, "--subject", "cli-user").stdout)
    assert got["id"] == sid and got["version"] == 1
    assert json.loads(tidelog("get", *url, "--id", sid).stdout)["schema"] == v1.read_text()
    assert json.loads(tidelog("get", *url, "--subject", "cli-doc").stdout)["schemaType"] == "JSON"

    check = tidelog("check", *url, "--subject", "cli-user", "--file", bad)
    assert check.returncode == 1 and check.stdout.startswith("incompatible") and "TYPE_MISMATCH" in check.stdout
    assert tidelog("check", *url, "--subject", "cli-user", "--file", v1).returncode == 0
    refused = tidelog("register", *url, "--subject", "cli-user", "--file", bad)
    assert refused.returncode == 1 and "error code 409" in refused.stderr

    assert tidelog("delete", *url, "--subject", "cli-user").stdout.strip() == "[1]"
    assert tidelog("delete", *url, "--subject", "cli-user", "--permanent").returncode == 0
    assert tidelog("list", *url).stdout.split() == ["cli-doc"]
    missing = tidelog("get", *url, "--subject", "cli-user")
    assert missing.returncode == 1 and "error code 40401" in missing.stderr
