# Second Brain for Slack: `brain serve` in a small image (docs/operations.md, "The image").
#
#   docker build -t second-brain .
#   docker compose up -d                  # the bot and PostgreSQL: see compose.yaml
#
# Socket Mode when SLACK_APP_TOKEN is set; otherwise HTTP on $PORT (3000). GET /health is
# served on $PORT in both modes. Checked here with hadolint and by running the same install
# steps in a fresh virtualenv; no container engine was available to build it.

# Python 3.11 (the version the suite runs on), pinned by tag and by the digest of its
# multi-architecture index, so every build starts from the same bytes.
ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm@sha256:65a93d69fa75478d554f4ad27c85c1e69fa184956261b4301ebaf6dbb0a3543d

# -- dependencies: a virtualenv from the lock file alone, so this layer is rebuilt only when
#    requirements.lock changes (not on an edit of the source or the docs) --------------------
FROM ${PYTHON_IMAGE} AS deps
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN python -m venv /opt/brain
COPY requirements.lock /tmp/requirements.lock
# Exact versions with their hashes; --no-deps: the lock is the whole set, nothing resolves here.
RUN /opt/brain/bin/pip install --no-deps --require-hashes -r /tmp/requirements.lock

# -- the app: our own wheel, built from the source ------------------------------------------
FROM ${PYTHON_IMAGE} AS wheel
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN pip install --no-cache-dir setuptools==84.2.1 wheel==0.48.0
WORKDIR /src
# pyproject.toml names README.md as the package's long description: the wheel needs it.
COPY pyproject.toml README.md ./
COPY bot ./bot
COPY tools ./tools
COPY storage ./storage
RUN pip wheel --no-cache-dir --no-deps --no-build-isolation --wheel-dir /wheels .

# -- runtime -----------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE}
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/opt/brain/bin:$PATH \
    BRAIN_DATA_DIR=/data \
    PORT=3000

# A numeric, unprivileged user (Kubernetes' runAsNonRoot can only verify a numeric USER);
# it owns the data volume: the SQLite database, when used, and the vaults.
RUN groupadd --system --gid 10001 brain \
    && useradd --system --uid 10001 --gid 10001 --home-dir /data --shell /usr/sbin/nologin brain \
    && mkdir -p /data && chown 10001:10001 /data

# Same path and same base image as the deps stage, so the virtualenv's links hold. BuildKit
# caches this copy by content: it changes only when the lock file does.
COPY --from=deps /opt/brain /opt/brain
COPY --from=wheel /wheels /tmp/wheels
# `pip check` fails the build if the lock and pyproject.toml ever disagree.
RUN pip install --no-cache-dir --no-deps --no-index /tmp/wheels/*.whl \
    && pip check \
    && rm -rf /tmp/wheels

VOLUME ["/data"]
WORKDIR /data
USER 10001:10001

EXPOSE 3000
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/health' % os.environ.get('PORT', '3000'), timeout=4)"]

# SIGTERM lets accepted turns finish before exit.
STOPSIGNAL SIGTERM
CMD ["brain", "serve"]
