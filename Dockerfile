# Second Brain for Slack. Not built on the machine this was written on (no Docker there);
# written to be correct, please report anything that does not build.
#
#   docker build -t second-brain .
#   docker run -d --name brain -v brain-data:/data \
#     -e SLACK_BOT_TOKEN=xoxb-... -e SLACK_APP_TOKEN=xapp-... -e ANTHROPIC_API_KEY=... \
#     second-brain
#
# Socket Mode when SLACK_APP_TOKEN is set; otherwise HTTP on $PORT (publish it: -p 3000:3000,
# and set SLACK_SIGNING_SECRET). GET /health is served on $PORT in both modes.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    BRAIN_DATA_DIR=/data \
    PORT=3000

WORKDIR /app

# Dependencies first (a layer that changes only with pyproject.toml), then the code.
COPY pyproject.toml README.md ./
RUN mkdir -p bot tools storage && touch bot/__init__.py tools/__init__.py storage/__init__.py \
    && pip install . && pip uninstall -y second-brain-slack && rm -rf bot tools storage
COPY bot ./bot
COPY tools ./tools
COPY storage ./storage
RUN pip install --no-deps . && rm -rf build *.egg-info

# An unprivileged user owns the data volume (database + vaults).
RUN groupadd --system --gid 10001 brain \
    && useradd --system --uid 10001 --gid brain --home-dir /data --shell /usr/sbin/nologin brain \
    && mkdir -p /data && chown brain:brain /data
VOLUME ["/data"]
USER brain
WORKDIR /data

EXPOSE 3000
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD python -c "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/health' % os.environ.get('PORT', '3000'), timeout=4)" || exit 1

# SIGTERM lets accepted turns finish before exit.
STOPSIGNAL SIGTERM
CMD ["brain", "serve"]
