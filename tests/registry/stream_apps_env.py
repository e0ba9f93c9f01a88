"""The interpreter that runs the stream processing apps of `test_stream_apps.py`.

Quix Streams 3.28 requires confluent-kafka <2.13 and faust-streaming 0.15 click <8.4, older than
the project's test dependencies (confluent-kafka 2.16), so neither goes into the project's virtual
environment: `stream_apps_python()` makes a virtual environment of their own once, in a cache
directory (TIDELOG_STREAM_APPS_CACHE, default ~/.cache/tidelog/stream-apps), with the pinned
packages below installed with --no-deps (so this list is the whole set), and the apps run in it as
subprocesses; the tests drive and check them with the project's own clients. A new pin list or
Python version gets a new directory.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

PINS = (
    "aiohappyeyeballs==2.7.1",
    "aiohttp==3.14.5",
    "aiohttp-cors==0.8.1",
    "aiokafka==0.14.0",
    "aiosignal==1.4.0",
    "annotated-types==0.8.0",
    "anyio==4.16.0",
    "async-timeout==5.0.1",
    "attrs==26.1.0",
    "Authlib==1.9.10",
    "avro==1.12.2",
    "cachetools==8.0.2",
    "certifi==2026.10.19.post1",
    "cffi==2.1.1",
    "charset-normalizer==3.5.3",
    "click==8.3.3",
    "colorlog==6.12.0",
    "confluent-kafka==2.12.2",
    "croniter==5.0.1",
    "cryptography==50.0.2",
    "fastavro==1.13.1",
    "faust-streaming==0.15.3",
    "frozenlist==1.8.0",
    "googleapis-common-protos==1.76.0",
    "h11==0.16.0",
    "httpcore==1.0.9",
    "httpx==0.28.1",
    "idna==3.20",
    "intervaltree==3.2.1",
    "joserfc==1.8.0",
    "jsonlines==4.0.0",
    "jsonpath-ng==1.16.0",
    "jsonschema==4.26.0",
    "jsonschema-specifications==2025.9.1",
    "markdown-it-py==4.3.0",
    "mdurl==0.1.2",
    "mode-streaming==0.7.1",
    "multidict==7.2.1",
    "mypy_extensions==1.2.0",
    "orjson==3.13.0",
    "packaging==26.4",
    "propcache==0.5.4",
    "protobuf==7.36.2",
    "pycparser==3.12",
    "pydantic==2.13.5",
    "pydantic-settings==2.15.0",
    "pydantic_core==2.46.5",
    "Pygments==2.21.0",
    "pyrsistent==0.20.0",
    "python-dateutil==4.0.0",
    "python-dotenv==1.2.4",
    "pytz==2026.6",
    "quixstreams==3.28.1",
    "referencing==0.37.0",
    "requests==2.34.2",
    "rich==15.0.0",
    "rocksdict==0.3.29",
    "rpds-py==2026.9.1",
    "six==1.17.0",
    "sortedcontainers==2.4.0",
    "terminaltables==3.1.10",
    "typing-inspection==0.4.5",
    "typing_extensions==4.16.0",
    "tzdata==2026.6",
    "urllib3==2.8.0",
    "venusian==3.1.0",
    "yarl==1.25.1",
)


def cache_dir() -> Path:
    return Path(os.environ.get("TIDELOG_STREAM_APPS_CACHE") or Path.home() / ".cache" / "tidelog" / "stream-apps")


def stream_apps_python() -> Path:
    """The cached environment's interpreter, made on first use (about 20 s of downloads)."""
    key = hashlib.sha256(f"{sys.version_info[:2]}\n{chr(10).join(PINS)}".encode()).hexdigest()[:12]
    venv = cache_dir() / f"venv-{key}"
    python = venv / "bin" / "python"
    if (venv / ".installed").exists():
        return python
    shutil.rmtree(venv, ignore_errors=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps", *PINS],
        check=True,
    )
    (venv / ".installed").write_text("\n".join(PINS) + "\n")
    return python


if __name__ == "__main__":
    print(stream_apps_python())
