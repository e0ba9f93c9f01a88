"""Log line formats for `tidelog serve`: `log.format=text` (the default) or `json` (one object a line).

A JSON line carries `ts` (ISO-8601 UTC, milliseconds), `level`, `logger`, `msg` (the formatted
message), and `exc` when an exception is attached; extra attributes passed with `extra={...}` are
kept when they are JSON-serialisable.
"""

from __future__ import annotations

import datetime as dt
import json
import logging

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime", "taskName"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out = {
            "ts": dt.datetime.fromtimestamp(record.created, dt.UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        for key, value in vars(record).items():
            if key not in _STANDARD and key not in out:
                try:
                    json.dumps(value)
                except (TypeError, ValueError):
                    continue
                out[key] = value
        return json.dumps(out, ensure_ascii=False)


def formatter(kind: str) -> logging.Formatter:
    return JsonFormatter() if kind == "json" else logging.Formatter(TEXT_FORMAT)
