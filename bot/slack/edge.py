"""The HTTP edge: a request is checked before anything parses it.

First the signature and timestamp, on the raw bytes (Slack signs `v0:<timestamp>:<body>` with
the signing secret, HMAC-SHA256); unsigned, wrongly signed or stale requests get 401. Then the
shape Bolt relies on: UTF-8 text, a JSON object, or a form whose `payload` is a JSON object;
anything else gets 400. Only then does Bolt see it. (slack_sdk's SignatureVerifier decodes
the body and int()s the timestamp before comparing, which raises on hostile input; hence the
few lines here.)
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs

from jsonschema import Draft202012Validator

MAX_AGE_SECONDS = 60 * 5  # Slack's own limit for replayed requests

_OBJ = {"type": "object"}
_OBJ_OR_NULL = {"type": ["object", "null"]}
_ID = {"type": ["string", "object", "null"]}
# The parts of a request Bolt reads before any listener runs (its matchers, authorization and
# context building index into them). A signed request that breaks this is not one Slack sends.
SHAPE = {
    "type": "object",
    "properties": {
        "type": {"type": "string"},
        "event": {"type": "object", "properties": {
            "type": {"type": "string"}, "message": _OBJ_OR_NULL,
            "previous_message": _OBJ_OR_NULL, "item": _OBJ_OR_NULL, "user": _ID,
            "channel": _ID, "view": _OBJ_OR_NULL}},
        "actions": {"type": "array", "minItems": 1, "items": _OBJ},
        "view": _OBJ, "container": _OBJ, "message": _OBJ, "workflow_step": _OBJ,
        "user": _ID, "team": _ID, "channel": _ID, "enterprise": _ID,
        "authorizations": {"type": "array", "items": _OBJ},
        "response_url": {"type": "string"},
        "response_urls": {"type": "array", "items": _OBJ},
    },
}
_SHAPE = Draft202012Validator(SHAPE)


class EdgeError(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def signature(secret: str, timestamp: str, raw: bytes) -> str:
    mac = hmac.new(secret.encode(), b"v0:" + timestamp.encode() + b":" + raw, hashlib.sha256)
    return "v0=" + mac.hexdigest()


def check_signature(raw: bytes, headers: Mapping[str, str], secret: str,
                    now: float | None = None) -> None:
    timestamp = headers.get("X-Slack-Request-Timestamp") or ""
    given = headers.get("X-Slack-Signature") or ""
    if not secret:
        raise EdgeError(401, "no signing secret is configured")
    if not timestamp or not given:
        raise EdgeError(401, "unsigned")
    if not timestamp.isascii() or not timestamp.isdigit() or len(timestamp) > 12:
        raise EdgeError(401, "bad timestamp")
    if abs((time.time() if now is None else now) - int(timestamp)) > MAX_AGE_SECONDS:
        raise EdgeError(401, "stale timestamp")
    if not hmac.compare_digest(signature(secret, timestamp, raw), given):
        raise EdgeError(401, "bad signature")


def check_shape(raw: bytes, content_type: str) -> str:
    """The body as text if Bolt can read it; EdgeError(400) if not."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise EdgeError(400, "the body is not UTF-8") from None
    if "application/json" in content_type:
        try:
            body = json.loads(text)
        except ValueError:
            raise EdgeError(400, "the body is not JSON") from None
        _readable(body)
        return text
    if "application/x-www-form-urlencoded" in content_type:
        form = parse_qs(text)
        if "payload" in form:
            try:
                payload = json.loads(form["payload"][0])
            except ValueError:
                raise EdgeError(400, "the payload is not JSON") from None
            _readable(payload)
        elif "command" not in form and "ssl_check" not in form:
            raise EdgeError(400, "a form without payload or command")
        return text
    raise EdgeError(400, f"unsupported content type {content_type[:60]!r}")


def _readable(body: Any) -> None:
    if not isinstance(body, dict):
        raise EdgeError(400, "not a JSON object")
    error = next(iter(_SHAPE.iter_errors(body)), None)
    if error is not None:
        raise EdgeError(400, f"unexpected shape at {error.json_path}")


def check_request(raw: bytes, headers: Mapping[str, str], secret: str) -> str:
    check_signature(raw, headers, secret)
    return check_shape(raw, headers.get("Content-Type") or "")
