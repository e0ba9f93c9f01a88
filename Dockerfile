# syntax=docker/dockerfile:1
# tidelog images, two targets (docker-compose.yml builds both):
#   broker - `tidelog serve`, configured by KAFKA_* environment variables (KAFKA_LOG_DIRS -> log.dirs)
#   export - the Spark export job run on a schedule against the broker's log volume (needs a JRE)
# The ENTRYPOINTs below are exactly what tests/integration/test_compose.py runs as processes.

FROM python:3.11-slim-bookworm AS base
ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN useradd --system --uid 1000 --create-home --home-dir /var/lib/tidelog tidelog
WORKDIR /opt/tidelog
COPY pyproject.toml README.md ./
COPY src ./src

FROM base AS broker
RUN pip install '.[tools]' \
 && mkdir -p /var/lib/tidelog/data && chown -R tidelog:tidelog /var/lib/tidelog
USER tidelog
ENV KAFKA_LISTENERS=PLAINTEXT://0.0.0.0:9092 \
    KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://localhost:9092 \
    KAFKA_LOG_DIRS=/var/lib/tidelog/data \
    KAFKA_METRICS_LISTENER=0.0.0.0:9404
VOLUME ["/var/lib/tidelog/data"]
EXPOSE 9092 9404
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=5 \
  CMD ["tidelog", "topics", "list", "--bootstrap-server", "127.0.0.1:9092"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["tidelog", "serve", "--env-prefix", "KAFKA_"]

FROM base AS export
RUN apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
 && rm -rf /var/lib/apt/lists/* \
 && pip install '.[spark]' \
 && mkdir -p /var/lib/tidelog/warehouse && chown -R tidelog:tidelog /var/lib/tidelog
COPY --chmod=0755 docker/export-loop.sh /usr/local/bin/tidelog-export-loop
USER tidelog
ENV EXPORT_LOG_DIRS=/var/lib/tidelog/data \
    EXPORT_WAREHOUSE=/var/lib/tidelog/warehouse \
    EXPORT_INTERVAL_SECONDS=300 \
    EXPORT_ARGS=""
VOLUME ["/var/lib/tidelog/warehouse"]
ENTRYPOINT ["tidelog-export-loop"]
