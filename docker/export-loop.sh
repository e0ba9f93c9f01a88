#!/bin/sh
# The export service: `tidelog export` every EXPORT_INTERVAL_SECONDS against the broker's log
# volume (mounted read-only; only closed segments are exported, so it never races the broker).
#   EXPORT_LOG_DIRS          the broker's log.dirs (comma-separated)
#   EXPORT_WAREHOUSE         where the Spark tables and the export manifest live
#   EXPORT_INTERVAL_SECONDS  pause between runs (default 300)
#   EXPORT_ARGS              more `tidelog export` options, e.g. "--topics orders --driver-memory 2g"
#   EXPORT_RUNS              stop after this many runs (default 0: forever)
# A failed run is logged and retried at the next tick; SIGTERM stops the loop between runs.
set -u
trap 'echo "export loop: stopping" >&2; exit 0' TERM INT
runs=0
while :; do
  # shellcheck disable=SC2086  # EXPORT_ARGS is a list of options
  tidelog export --log-dirs "${EXPORT_LOG_DIRS}" --warehouse "${EXPORT_WAREHOUSE}" ${EXPORT_ARGS:-}
  status=$?
  [ "$status" -eq 0 ] || echo "export loop: run failed with exit status $status; retrying next time" >&2
  runs=$((runs + 1))
  if [ "${EXPORT_RUNS:-0}" -gt 0 ] && [ "$runs" -ge "${EXPORT_RUNS}" ]; then
    exit "$status"
  fi
  sleep "${EXPORT_INTERVAL_SECONDS:-300}" &
  wait $!
done
