"""wire/responses.py is what its generator makes of kio's schemas now, for every routed
control-plane API, and its fields are exactly the fields `control.build` accepts."""

from __future__ import annotations

import typing
from pathlib import Path

from tidelog.server.handlers import modules
from tidelog.wire import control, responses
from tidelog.wire.response_types_gen import APIS, _versions, generate
from tidelog.wire.schemas import response_schema

SRC = Path(responses.__file__)


def test_the_generated_module_is_current():
    assert SRC.read_text() == generate(APIS), (
        "src/tidelog/wire/responses.py is stale: python -m tidelog.wire.response_types_gen > "
        "src/tidelog/wire/responses.py"
    )


def test_every_routed_control_api_has_its_types():
    routed = {m.ROUTE.api_key for m in modules() if m.ROUTE.control}
    assert routed == set(APIS)


def test_each_top_level_type_has_the_fields_build_accepts():
    for api_key in APIS:
        cls = response_schema(api_key, _versions(api_key)[-1])
        typed = getattr(responses, cls.__name__)
        assert set(typing.get_type_hints(typed)) == control._known_names(cls), cls.__name__


def _fields(class_name: str) -> dict[str, str]:
    """The annotations of a class of responses.py as written (a string annotation's `Required`
    is not visible at run time)."""
    lines = SRC.read_text().splitlines()
    start = lines.index(f"class {class_name}(TypedDict, total=False):")
    out = {}
    for line in lines[start + 1 :]:
        if line.startswith("class ") or line.startswith("# ----"):
            break
        if line.startswith("    ") and ": " in line and not line.lstrip().startswith(('"', "#")):
            name, _, tp = line.strip().partition(": ")
            out[name] = tp
    return out


def test_a_field_of_every_version_without_default_is_required():
    metadata = _fields("MetadataResponse")
    assert metadata["brokers"].startswith("Required[")  # every version, no default
    assert metadata["error_code"] == "ErrorCode | int  # v13"  # v13 only
    offset_fetch = _fields("OffsetFetchResponse")
    # v0-7 answer topics, v8+ groups: neither is in every version
    assert not offset_fetch["topics"].startswith("Required[")
    assert not offset_fetch["groups"].startswith("Required[")
