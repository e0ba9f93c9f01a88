# tidelog broker image. The entrypoint is the same command the tests run: `tidelog serve`.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY src ./src
RUN pip install --no-cache-dir . && mkdir -p /var/lib/tidelog
COPY docker/entrypoint.sh /usr/local/bin/tidelog-entrypoint
VOLUME ["/var/lib/tidelog"]
EXPOSE 9092
HEALTHCHECK --interval=10s --timeout=5s --retries=6 \
  CMD python -c "import socket; socket.create_connection(('127.0.0.1', 9092), 3)"
ENTRYPOINT ["tidelog-entrypoint"]
CMD ["tidelog", "serve", "--override", "log.dirs=/var/lib/tidelog"]
