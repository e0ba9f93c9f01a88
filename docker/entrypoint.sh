#!/bin/sh
# Maps environment variables to broker properties, as common Kafka images do:
# TIDELOG_LOG_RETENTION_MS=1000 becomes --override log.retention.ms=1000.
set -e
if [ "$1" = "tidelog" ] && [ "$2" = "serve" ]; then
  for var in $(env | grep '^TIDELOG_' | cut -d= -f1); do
    key=$(echo "${var#TIDELOG_}" | tr 'A-Z_' 'a-z.')
    eval "value=\$$var"
    set -- "$@" --override "$key=$value"
  done
fi
exec "$@"
