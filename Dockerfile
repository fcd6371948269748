# syntax=docker/dockerfile:1
# channel-memory-bot: `bot run` as a non-root user, the database on the /data volume,
# tiktoken's encodings baked in (the container never downloads them).

FROM python:3.11-slim-bookworm AS build
# TIKTOKEN_CACHE_DIR is a directory, not a secret (hadolint flags the word TOKEN).
# hadolint ignore=DL3064
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    TIKTOKEN_CACHE_DIR=/opt/tiktoken
WORKDIR /src
RUN python -m venv /opt/venv
# The pinned, hash-checked dependencies first, and what builds the package (setuptools, wheel,
# pinned and hashed too: no unpinned build isolation): reused until a lock changes.
COPY requirements.lock requirements-build.lock ./
RUN /opt/venv/bin/pip install --require-hashes -r requirements.lock \
    && /opt/venv/bin/pip install --require-hashes -r requirements-build.lock
COPY pyproject.toml README.md ./
COPY bot ./bot
RUN /opt/venv/bin/pip install --no-deps --no-build-isolation . \
    && /opt/venv/bin/python -c "from bot.core.memory.tokens import install_encodings; install_encodings()" \
    && /opt/venv/bin/python -c "import tiktoken; tiktoken.get_encoding('o200k_base'); tiktoken.get_encoding('cl100k_base')"

FROM python:3.11-slim-bookworm
# MPLCONFIGDIR: matplotlib's font cache (charts), made on the first chart, kept off /data.
# hadolint ignore=DL3064
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    TIKTOKEN_CACHE_DIR=/opt/tiktoken \
    MPLCONFIGDIR=/tmp/matplotlib \
    BOT_CONFIG=/etc/bot/config.yaml:/etc/bot/docker.yaml
# /backups: owned by the bot, so a new volume mounted there is writable by it.
RUN groupadd --system --gid 10001 bot \
    && useradd --system --uid 10001 --gid bot --home-dir /data --no-create-home bot \
    && mkdir /data /backups \
    && chown bot:bot /data /backups
COPY --from=build /opt/venv /opt/venv
COPY --from=build /opt/tiktoken /opt/tiktoken
# The reference config, then the image's settings (health endpoint on); your
# /etc/bot/config.local.yaml, when mounted (docker-compose.yml does), is merged over both.
COPY config.yaml /etc/bot/config.yaml
COPY docker/config.yaml /etc/bot/docker.yaml
# docker/config.yaml puts the database on the /data volume: /data/bot.sqlite3.
WORKDIR /
VOLUME ["/data", "/backups"]
USER 10001:10001
# 9090: /healthz and /metrics; 3000: Slack's requests in slack.mode http.
EXPOSE 9090 3000
HEALTHCHECK --interval=30s --timeout=10s --start-period=30s --retries=3 CMD ["bot", "health"]
ENTRYPOINT ["bot"]
CMD ["run"]
