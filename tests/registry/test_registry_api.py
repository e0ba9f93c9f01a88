"""Confluent's REST API against a real broker process: answers, error codes, deletes, modes,
config, references (raw HTTP with `requests`, as any client sends it)."""

from __future__ import annotations

import json
import socket

import pytest
import requests

pytestmark = pytest.mark.interop

CT = "application/vnd.schemaregistry.v1+json"


def avro_user(*extra: dict[str, object]) -> str:
    return json.dumps({"type": "record", "name": "User", "fields": [{"name": "a", "type": "int"}, *extra]})


class Api:
    def __init__(self, url: str) -> None:
        self.url = url
        self.s = requests.Session()

    def __call__(self, method: str, path: str, body: object = None, **params: object) -> requests.Response:
        return self.s.request(
            method, self.url + path, json=body, params={k: str(v).lower() for k, v in params.items()}, timeout=10
        )

    def ok(self, method: str, path: str, body: object = None, **params: object) -> object:
        r = self(method, path, body, **params)
        assert r.status_code == 200, r.text
        assert r.headers["Content-Type"] == CT
        return r.json()

    def error(self, method: str, path: str, body: object = None, **params: object) -> tuple[int, int]:
        r = self(method, path, body, **params)
        return r.status_code, r.json()["error_code"]


@pytest.fixture
def api(registry_broker):
    return Api(registry_broker.url)


def test_register_lookup_and_read(api):
    sid = api.ok("POST", "/subjects/api-a/versions", {"schema": avro_user()})["id"]
    assert api.ok("POST", "/subjects/api-a/versions", {"schema": avro_user()}) == {"id": sid}  # identical: same id
    reformatted = json.dumps(json.loads(avro_user()), indent=2)
    assert api.ok("POST", "/subjects/api-a/versions", {"schema": reformatted}) == {"id": sid}  # formatting aside
    assert api.ok("GET", "/subjects/api-a/versions") == [1]
    got = api.ok("GET", "/subjects/api-a/versions/latest")
    assert got == {"subject": "api-a", "version": 1, "id": sid, "schema": avro_user()}
    assert api.ok("GET", "/subjects/api-a/versions/1/schema") == json.loads(avro_user())
    assert api.ok("POST", "/subjects/api-a", {"schema": avro_user()})["version"] == 1
    assert api.ok("GET", f"/schemas/ids/{sid}") == {"schema": avro_user()}
    assert api.ok("GET", f"/schemas/ids/{sid}/versions") == [{"subject": "api-a", "version": 1}]
    assert "api-a" in api.ok("GET", "/subjects")
    assert sorted(api.ok("GET", "/schemas/types")) == ["AVRO", "JSON", "PROTOBUF"]
    # the same schema under another subject keeps its id
    assert api.ok("POST", "/subjects/api-a2/versions", {"schema": avro_user()}) == {"id": sid}
    other = api.ok("POST", "/subjects/api-b/versions", {"schema": json.dumps({"type": "string"})})["id"]
    assert other > sid


def test_error_codes(api):
    api.ok("POST", "/subjects/err/versions", {"schema": avro_user()})
    assert api.error("GET", "/subjects/nosuch/versions") == (404, 40401)
    assert api.error("GET", "/subjects/err/versions/9") == (404, 40402)
    assert api.error("GET", "/schemas/ids/999999") == (404, 40403)
    assert api.error("POST", "/subjects/err", {"schema": json.dumps({"type": "long"})}) == (404, 40403)
    assert api.error("POST", "/subjects/err/versions", {"schema": "{not json"}) == (422, 42201)
    assert api.error("POST", "/subjects/err/versions", {"schema": "{}", "schemaType": "XML"}) == (422, 42201)
    assert api.error("GET", "/subjects/err/versions/zero") == (422, 42202)
    assert api.error("PUT", "/config/err", {"compatibility": "SIDEWAYS"}) == (422, 42203)
    assert api.error("PUT", "/mode/err", {"mode": "WRITEONLY"}) == (422, 42204)
    incompatible = {"schema": avro_user({"name": "b", "type": "string"})}
    assert api.error("POST", "/subjects/err/versions", incompatible) == (409, 409)
    assert api.error("GET", "/config/err") == (404, 40408)
    assert api.error("GET", "/nosuch") == (404, 404)


def test_soft_then_permanent_delete(api):
    for extra in ([], [{"name": "b", "type": "string", "default": ""}]):
        api.ok("POST", "/subjects/del/versions", {"schema": avro_user(*extra)})
    assert api.error("DELETE", "/subjects/del/versions/1", permanent=True) == (404, 40407)  # soft first
    assert api.ok("DELETE", "/subjects/del/versions/1") == 1
    assert api.ok("GET", "/subjects/del/versions") == [2]
    assert api.ok("GET", "/subjects/del/versions", deleted=True) == [1, 2]
    assert api.ok("GET", "/subjects/del/versions/1", deleted=True)["version"] == 1
    assert api.error("DELETE", "/subjects/del/versions/1") == (404, 40406)
    assert api.ok("DELETE", "/subjects/del/versions/1", permanent=True) == 1
    assert api.ok("GET", "/subjects/del/versions", deleted=True) == [2]
    assert api.error("DELETE", "/subjects/del", permanent=True) == (404, 40405)
    assert api.ok("DELETE", "/subjects/del") == [2]
    assert "del" not in api.ok("GET", "/subjects") and "del" in api.ok("GET", "/subjects", deleted=True)
    assert api.error("DELETE", "/subjects/del") == (404, 40404)
    assert api.ok("DELETE", "/subjects/del", permanent=True) == [2]
    assert "del" not in api.ok("GET", "/subjects", deleted=True)
    assert api.error("GET", "/subjects/del/versions") == (404, 40401)


def test_config_levels(api):
    assert api.ok("GET", "/config") == {"compatibilityLevel": "BACKWARD"}
    assert api.ok("PUT", "/config/cfg", {"compatibility": "FULL"}) == {"compatibility": "FULL"}
    assert api.ok("GET", "/config/cfg") == {"compatibilityLevel": "FULL"}
    assert api.ok("GET", "/config/other", defaultToGlobal=True) == {"compatibilityLevel": "BACKWARD"}
    assert api.ok("DELETE", "/config/cfg") == {"compatibilityLevel": "FULL"}
    assert api.error("GET", "/config/cfg") == (404, 40408)


def test_modes(api):
    assert api.ok("GET", "/mode") == {"mode": "READWRITE"}
    api.ok("PUT", "/mode/ro", {"mode": "READONLY"})
    assert api.error("POST", "/subjects/ro/versions", {"schema": avro_user()}) == (422, 42205)
    api.ok("DELETE", "/mode/ro")
    # IMPORT: the client gives the id (and the version), no compatibility check
    api.ok("PUT", "/mode/imp", {"mode": "IMPORT"})
    body = {"schema": json.dumps({"type": "fixed", "name": "F", "size": 3}), "id": 7777, "version": 5}
    assert api.ok("POST", "/subjects/imp/versions", body) == {"id": 7777}
    assert api.ok("GET", "/subjects/imp/versions/5")["id"] == 7777
    taken = {"schema": json.dumps({"type": "fixed", "name": "G", "size": 3}), "id": 7777}
    assert api.error("POST", "/subjects/imp/versions", taken) == (422, 42207)
    api.ok("PUT", "/mode/imp", {"mode": "READWRITE"})
    assert api.error("POST", "/subjects/imp/versions", {**taken, "id": 8888}) == (422, 42205)
    # IMPORT where schemas exist: only with force
    assert api.error("PUT", "/mode/imp", {"mode": "IMPORT"}) == (422, 42205)
    assert api.ok("PUT", "/mode/imp", {"mode": "IMPORT"}, force=True) == {"mode": "IMPORT"}
    assert api.error("PUT", "/mode", {"mode": "IMPORT"}) == (422, 42205)
    api.ok("DELETE", "/mode/imp")
    # ids continue past the imported one
    fresh = api.ok("POST", "/subjects/after-import/versions", {"schema": json.dumps({"type": "bytes"})})["id"]
    assert fresh > 7777


def test_compatibility_endpoint(api):
    api.ok("POST", "/subjects/cmp/versions", {"schema": avro_user()})
    good = {"schema": avro_user({"name": "b", "type": "string", "default": ""})}
    bad = {"schema": avro_user({"name": "b", "type": "string"})}
    assert api.ok("POST", "/compatibility/subjects/cmp/versions/latest", good) == {"is_compatible": True}
    assert api.ok("POST", "/compatibility/subjects/cmp/versions/1", bad) == {"is_compatible": False}
    verbose = api.ok("POST", "/compatibility/subjects/cmp/versions/latest", bad, verbose=True)
    assert verbose["is_compatible"] is False and "READER_FIELD_MISSING_DEFAULT_VALUE" in verbose["messages"][0]
    assert api.ok("POST", "/compatibility/subjects/cmp/versions", good)["is_compatible"] is True


def test_references_and_referencedby(api):
    address = json.dumps(
        {"type": "record", "name": "Address", "namespace": "x", "fields": [{"name": "s", "type": "string"}]}
    )
    api.ok("POST", "/subjects/address/versions", {"schema": address})
    user = json.dumps({"type": "record", "name": "Customer", "fields": [{"name": "home", "type": "x.Address"}]})
    refs = [{"name": "x.Address", "subject": "address", "version": 1}]
    assert api.error("POST", "/subjects/customer/versions", {"schema": user}) == (422, 42201)
    uid = api.ok("POST", "/subjects/customer/versions", {"schema": user, "references": refs})["id"]
    assert api.ok("GET", f"/schemas/ids/{uid}")["references"] == refs
    assert api.ok("GET", "/subjects/address/versions/1/referencedby") == [uid]
    assert api.error("DELETE", "/subjects/address") == (422, 42206)


def test_normalize(api):
    spaced = '{ "type": "record", "name": "N", "doc": "d", "fields": [ {"name": "a", "type": "int"} ] }'
    sid = api.ok("POST", "/subjects/norm/versions", {"schema": spaced}, normalize=True)["id"]
    stored = api.ok("GET", "/subjects/norm/versions/1")["schema"]
    assert stored == '{"name":"N","type":"record","fields":[{"name":"a","type":"int"}]}'
    compact = '{"type":"record","name":"N","fields":[{"name":"a","type":"int"}]}'
    assert api.ok("POST", "/subjects/norm/versions", {"schema": compact}, normalize=True) == {"id": sid}
    assert api.ok("POST", "/subjects/norm", {"schema": spaced}, normalize=True)["id"] == sid


def raw(url: str, data: bytes) -> bytes:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(data)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
        return out


def test_bad_http_gets_4xx_and_the_listener_lives(registry_broker, api):
    url = registry_broker.url
    assert raw(url, b"NONSENSE\r\n\r\n").startswith(b"HTTP/1.1 400")
    assert raw(url, b"GET /subjects HTTP/1.1\r\n" + b"X: " + b"y" * 70000 + b"\r\n\r\n").startswith(b"HTTP/1.1 431")
    big = b"POST /subjects/x/versions HTTP/1.1\r\nContent-Length: 999999999\r\n\r\n"
    assert raw(url, big).startswith(b"HTTP/1.1 413")
    assert raw(url, b"POST /subjects/x/versions HTTP/1.1\r\nContent-Length: 5\r\n\r\n{nope").startswith(b"HTTP/1.1 400")
    expect = b"POST /subjects/x/versions HTTP/1.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(expect)
        assert s.recv(100) == b"HTTP/1.1 100 Continue\r\n\r\n"  # before the body is sent
        s.sendall(b"{nope")
        assert s.recv(100).startswith(b"HTTP/1.1 400")
    chunked = b"POST /subjects/x/versions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
    assert raw(url, chunked).startswith(b"HTTP/1.1 411")
    assert api.ok("GET", "/subjects") is not None


def test_json_references(api):
    zip_int = json.dumps({"type": "object", "properties": {"zip": {"type": "integer"}}})
    zip_num = json.dumps({"type": "object", "properties": {"zip": {"type": "number"}}})
    api.ok("PUT", "/config/j-address", {"compatibility": "NONE"})
    api.ok("POST", "/subjects/j-address/versions", {"schema": zip_int, "schemaType": "JSON"})
    api.ok("POST", "/subjects/j-address/versions", {"schema": zip_num, "schemaType": "JSON"})
    user = json.dumps({"type": "object", "properties": {"home": {"$ref": "address.json"}}})
    ref = {"name": "address.json", "subject": "j-address"}
    api.ok(
        "POST",
        "/subjects/j-user/versions",
        {"schema": user, "schemaType": "JSON", "references": [{**ref, "version": 2}]},
    )
    back = {"schema": user, "schemaType": "JSON", "references": [{**ref, "version": 1}]}
    verdict = api.ok("POST", "/compatibility/subjects/j-user/versions/latest", back, verbose=True)
    assert verdict["is_compatible"] is False and "TYPE_CHANGED" in verdict["messages"][0]


def test_schemas_listing_contexts_and_permanent_delete_clears_settings(api):
    api.ok("POST", "/subjects/list-a/versions", {"schema": json.dumps({"type": "enum", "name": "E", "symbols": ["A"]})})
    api.ok(
        "POST",
        "/subjects/list-a/versions",
        {"schema": json.dumps({"type": "enum", "name": "E", "symbols": ["A", "B"]})},
    )
    listed = api.ok("GET", "/schemas", subjectPrefix="list-")
    assert [(s["subject"], s["version"]) for s in listed] == [("list-a", 1), ("list-a", 2)]
    assert [s["version"] for s in api.ok("GET", "/schemas", subjectPrefix="list-", latestOnly=True)] == [2]
    assert api.ok("GET", "/contexts") == ["."]
    api.ok("PUT", "/config/list-a", {"compatibility": "NONE"})
    api.ok("PUT", "/mode/list-a", {"mode": "READWRITE"})
    api.ok("DELETE", "/subjects/list-a")
    api.ok("DELETE", "/subjects/list-a", permanent=True)
    assert api.error("GET", "/config/list-a") == (404, 40408)
    assert api.error("GET", "/mode/list-a") == (404, 40409)


def test_a_record_over_the_topics_limit_is_50001(api):
    huge = json.dumps({"type": "enum", "name": "Big", "symbols": [f"S{i:07d}" for i in range(130_000)]})
    assert api.error("POST", "/subjects/huge/versions", {"schema": huge}) == (500, 50001)
    assert api.error("GET", "/subjects/huge/versions") == (404, 40401)
