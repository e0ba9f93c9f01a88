"""A reader in its own process for test_iceberg: counts two Iceberg tables' current snapshots in a
loop with pyiceberg (each round loads the tables afresh from the catalog and reads their rows),
one JSON line per round, until the stop file appears.

    python iceberg_counter.py <warehouse> <main table> <latest table> <out.jsonl> <stop file>
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from tidelog.spark_export.iceberg import identifier, load_catalog


def main() -> int:
    warehouse, main_name, latest_name, out, stop = sys.argv[1:6]
    catalog = load_catalog(warehouse)
    with open(out, "a") as f:
        while not Path(stop).exists():
            row = {
                "main": catalog.load_table(identifier(main_name)).scan().to_arrow().num_rows,
                "latest": catalog.load_table(identifier(latest_name)).scan().to_arrow().num_rows,
                "at": time.time(),
            }
            f.write(json.dumps(row) + "\n")
            f.flush()
            time.sleep(0.05)  # leave the writer CPU on a small machine
    return 0


if __name__ == "__main__":
    sys.exit(main())
