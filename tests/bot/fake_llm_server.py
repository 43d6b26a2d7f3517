"""A scripted fake LLM server on 127.0.0.1 speaking OpenAI Chat Completions and Anthropic
Messages, for tests that drive the real SDKs (point them at it with base_url).

    with FakeLLMServer() as srv:
        srv.script([openai_tool_calls([("call_1", "list_entries", {})]), openai_text("Done")])
        provider = OpenAIProvider(config, api_key="k", base_url=srv.openai_base_url)
        ...
        path, headers, body = srv.requests[0]

Each request takes the next scripted response: a JSON body (dict), a `Reply` (from `error()`
or `reply()`), or a callable(request_json) -> either. With the script empty the server answers
like a minimal model ("smart" mode, see `smart_answer`; `srv.answer_with` swaps it, e.g. for
tests/bot/obedient.py's model that does what any text tells it). Like the real APIs it rejects
requests that break tool-call pairing with a 400 (set `srv.validate = False` to turn off).
`srv.delay` (seconds) slows every answer, for timeout tests; `srv.hold()` keeps every answer
back until `srv.release()`. `srv.gate(path, body)`, when
set, may refuse any request the way a real server does (tests/bot/local_fakes.py: what
llama-cpp-python's server refuses); a refused request does not consume the script.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NamedTuple

OPENAI_PATH = "/v1/chat/completions"
ANTHROPIC_PATH = "/v1/messages"


@dataclass
class Reply:
    """A full HTTP answer: status, JSON body (None: a default body for the wire format),
    headers, and an extra delay for this one answer."""

    status: int = 200
    body: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


Scripted = dict[str, Any] | Reply | Callable[[dict[str, Any]], "dict[str, Any] | Reply"]


class RecordedRequest(NamedTuple):
    path: str
    headers: dict[str, str]  # lower-cased names
    body: dict[str, Any]


_ids = itertools.count(1)


def _usage_openai(prompt: int = 10, completion: int = 5) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}


def openai_text(text: str | None, *, finish_reason: str = "stop", model: str = "fake-model",
                prompt_tokens: int = 10, completion_tokens: int = 5) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-fake{next(_ids)}", "object": "chat.completion", "created": 0,
        "model": model,
        "choices": [{"index": 0, "finish_reason": finish_reason,
                     "message": {"role": "assistant", "content": text, "refusal": None}}],
        "usage": _usage_openai(prompt_tokens, completion_tokens),
    }


def openai_tool_calls(calls: Iterable[tuple[str, str, dict[str, Any] | str | Any]], *,
                      text: str | None = None, finish_reason: str = "tool_calls",
                      model: str = "fake-model") -> dict[str, Any]:
    """calls: (id, name, arguments); a dict is JSON-encoded, a string is sent as is."""
    body = openai_text(text, finish_reason=finish_reason, model=model)
    body["choices"][0]["message"]["tool_calls"] = [
        {"id": cid, "type": "function",
         "function": {"name": name,
                      "arguments": args if isinstance(args, str) else json.dumps(args)}}
        for cid, name, args in calls
    ]
    return body


def anthropic_text(text: str, *, stop_reason: str = "end_turn", model: str = "fake-model",
                   input_tokens: int = 10, output_tokens: int = 5) -> dict[str, Any]:
    content = [{"type": "text", "text": text}] if text else []
    return {"id": f"msg_fake{next(_ids)}", "type": "message", "role": "assistant",
            "model": model, "content": content, "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens}}


def anthropic_tool_uses(uses: Iterable[tuple[str, str, Any]], *, text: str = "",
                        stop_reason: str = "tool_use",
                        model: str = "fake-model") -> dict[str, Any]:
    body = anthropic_text(text, stop_reason=stop_reason, model=model)
    body["content"] += [{"type": "tool_use", "id": uid, "name": name, "input": value}
                        for uid, name, value in uses]
    return body


def error(status: int, body: dict[str, Any] | None = None,
          headers: dict[str, str] | None = None, *, retry_after: float | None = None) -> Reply:
    """An error answer. body None: the wire format's usual error body for the status."""
    h = dict(headers or {})
    if retry_after is not None:  # both SDKs read retry-after-ms first; it allows fractions
        h["retry-after-ms"] = f"{max(retry_after * 1000, 1):g}"
        h["retry-after"] = f"{max(int(retry_after), 1)}"
    return Reply(status=status, body=body, headers=h)


def reply(body: dict[str, Any], *, delay: float = 0.0, headers: dict[str, str] | None = None,
          status: int = 200) -> Reply:
    return Reply(status=status, body=body, headers=dict(headers or {}), delay=delay)


_OPENAI_ERROR_TYPES = {400: "invalid_request_error", 401: "invalid_request_error",
                       403: "permission_error", 404: "invalid_request_error",
                       429: "rate_limit_error", 500: "server_error", 503: "server_error"}
_ANTHROPIC_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error",
                          403: "permission_error", 404: "not_found_error",
                          429: "rate_limit_error", 500: "api_error", 503: "api_error",
                          504: "timeout_error", 529: "overloaded_error"}


def default_error_body(path: str, status: int, message: str | None = None) -> dict[str, Any]:
    if path == ANTHROPIC_PATH:
        kind = _ANTHROPIC_ERROR_TYPES.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message or kind},
                "request_id": "req_fake"}
    kind = _OPENAI_ERROR_TYPES.get(status, "server_error")
    return {"error": {"message": message or kind, "type": kind, "param": None,
                      "code": "rate_limit_exceeded" if status == 429 else None}}


# --- validation: the rules the real APIs enforce with a 400 -------------------------------

def openai_problems(body: dict[str, Any]) -> list[str]:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return ["'messages' must be a non-empty list"]
    problems = _openai_turn_problems(messages)
    for tool in body.get("tools") or []:
        if tool.get("type") != "function" or "name" not in tool.get("function", {}):
            problems.append("tools[]: expected {type: function, function: {name, ...}}")
    if "tool_choice" in body and not body.get("tools"):
        problems.append("'tool_choice' is only allowed when 'tools' are specified")
    return problems


def _openai_turn_problems(messages: list[dict[str, Any]]) -> list[str]:
    """Each tool call answered by a tool message right after its assistant message."""
    problems: list[str] = []
    open_ids: list[str] = []
    for i, m in enumerate(messages):
        role = m.get("role")
        if role == "tool":
            if m.get("tool_call_id") not in open_ids:
                problems.append(f"messages[{i}]: messages with role 'tool' must be a response "
                                "to a preceeding message with 'tool_calls'")
            else:
                open_ids.remove(m["tool_call_id"])
            continue
        if open_ids:
            problems.append(f"messages[{i}]: an assistant message with 'tool_calls' must be "
                            "followed by tool messages responding to each 'tool_call_id'. "
                            f"Missing: {', '.join(open_ids)}")
            open_ids = []
        for call in (m.get("tool_calls") or []) if role == "assistant" else []:
            if not isinstance(call.get("function", {}).get("arguments"), str):
                problems.append(f"messages[{i}]: tool call arguments must be a string")
            open_ids.append(call.get("id"))
    if open_ids:
        problems.append("the last assistant message has unanswered tool_calls: "
                        + ", ".join(open_ids))
    return problems


def anthropic_problems(body: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    if not isinstance(body.get("max_tokens"), int):
        problems.append("max_tokens: Field required")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return problems + ["messages: must be a non-empty list"]
    pending: list[str] = []
    previous_role = None
    for i, m in enumerate(messages):
        role, content = m.get("role"), m.get("content")
        if role == previous_role:
            problems.append(f"messages.{i}: roles must alternate between user and assistant")
        previous_role = role
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list) or not blocks:
            problems.append(f"messages.{i}: content must be non-empty")
            continue
        problems += _anthropic_block_problems(i, blocks)
        problems += _anthropic_result_problems(i, role, blocks, pending)
        pending = [b.get("id") for b in blocks if b.get("type") == "tool_use"] \
            if role == "assistant" else []
    for tool in body.get("tools") or []:
        if "input_schema" not in tool or "name" not in tool:
            problems.append("tools[]: expected {name, description, input_schema}")
    return problems


def _anthropic_block_problems(i: int, blocks: list[dict[str, Any]]) -> list[str]:
    problems: list[str] = []
    for block in blocks:
        if block.get("type") == "text" and not str(block.get("text", "")).strip():
            problems.append(f"messages.{i}: text content blocks must be non-empty")
        if block.get("type") == "tool_result" and block.get("is_error") \
                and not block.get("content"):
            problems.append(f"messages.{i}: content cannot be empty if is_error is true")
    return problems


def _anthropic_result_problems(i: int, role: str | None, blocks: list[dict[str, Any]],
                               pending: list[str]) -> list[str]:
    """Each tool_use answered by a tool_result first in the next (user) message."""
    problems: list[str] = []
    results = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
    if pending:
        missing = [p for p in pending if p not in results]
        if role != "user" or missing:
            problems.append(f"messages.{i}: `tool_use` ids were found without "
                            "`tool_result` blocks immediately after: "
                            + ", ".join(missing or pending))
    extra = [r for r in results if r not in pending]
    if extra:
        problems.append(f"messages.{i}: unexpected `tool_use_id` found in `tool_result` "
                        f"blocks: {', '.join(map(str, extra))}")
    if results:
        first_other = next((k for k, b in enumerate(blocks)
                            if b.get("type") != "tool_result"), len(blocks))
        if any(b.get("type") == "tool_result" for b in blocks[first_other:]):
            problems.append(f"messages.{i}: tool_result blocks must come first")
    return problems


# --- smart mode: a minimal model --------------------------------------------------------

def _classify_hints(text: str) -> dict[str, Any]:
    try:
        from tools.rules.classify import classify
    except ImportError:  # keep the fake usable without our packages
        return {}
    return classify(text).hints()


def _smart_call(text: str, tool_names: list[str], forced: str | None) -> tuple[str, dict] | None:
    if forced:
        if forced == "classify_and_capture":
            return forced, {"text": text, "hints": _classify_hints(text)}
        return forced, {}
    if text.strip().lower().startswith("list") and "list_entries" in tool_names:
        return "list_entries", {}
    if "classify_and_capture" in tool_names:
        return "classify_and_capture", {"text": text, "hints": _classify_hints(text)}
    return None


def smart_answer(path: str, body: dict[str, Any]) -> dict[str, Any]:
    """Answer like a minimal model: a user text with tools offered gets one tool call
    (list_entries when it starts with "list", else classify_and_capture with hints); tool
    results get a text naming the call ids answered; anything else gets an echo."""
    n = next(_ids)
    if path == ANTHROPIC_PATH:
        return _smart_anthropic(body, n)
    return _smart_openai(body, n)


def _smart_anthropic(body: dict[str, Any], n: int) -> dict[str, Any]:
    last = body["messages"][-1]
    content = last.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    ids = [b["tool_use_id"] for b in blocks if b.get("type") == "tool_result"]
    if ids:
        return anthropic_text(f"Done: answered {', '.join(ids)}.")
    text = " ".join(b.get("text", "") for b in blocks if b.get("type") == "text")
    names = [t["name"] for t in body.get("tools") or []]
    choice = body.get("tool_choice") or {}
    if names and choice.get("type") != "none":
        forced = choice.get("name") if choice.get("type") == "tool" else None
        call = _smart_call(text, names, forced)
        if call is None and choice.get("type") == "any":
            call = (names[0], {})
        if call:
            return anthropic_tool_uses([(f"toolu_fake{n}", call[0], call[1])])
    return anthropic_text(f"You said: {text}")


def _smart_openai(body: dict[str, Any], n: int) -> dict[str, Any]:
    messages = body["messages"]
    if messages[-1].get("role") == "tool":
        tail = []
        for m in reversed(messages):
            if m.get("role") != "tool":
                break
            tail.append(m["tool_call_id"])
        return openai_text(f"Done: answered {', '.join(reversed(tail))}.")
    text = messages[-1].get("content") or ""
    if not isinstance(text, str):
        text = " ".join(p.get("text", "") for p in text if isinstance(p, dict))
    names = [t["function"]["name"] for t in body.get("tools") or []]
    choice = body.get("tool_choice", "auto")
    if names and choice != "none":
        forced = choice["function"]["name"] if isinstance(choice, dict) else None
        call = _smart_call(text, names, forced)
        if call is None and choice == "required":
            call = (names[0], {})
        if call:
            return openai_tool_calls([(f"call_fake{n}", call[0], call[1])])
    return openai_text(f"You said: {text}")


# --- the server ---------------------------------------------------------------------------

class FakeLLMServer:
    def __init__(self, *, validate: bool = True) -> None:
        self.validate = validate
        self.delay = 0.0
        self.requests: list[RecordedRequest] = []
        self.gate: Callable[[str, dict[str, Any]], Reply | None] | None = None
        # What answers once the script is empty: a minimal model (or tests/bot/obedient.py's).
        self.answer_with: Callable[[str, dict[str, Any]], dict[str, Any]] = smart_answer
        self._script: list[Scripted] = []
        self._lock = threading.Lock()
        self._open = threading.Event()  # cleared by hold(): answers wait for release()
        self._open.set()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # lifecycle
    def start(self) -> FakeLLMServer:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.02}, daemon=True,
                                        name="fake-llm-server")
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # addresses
    @property
    def url(self) -> str:
        assert self._server is not None, "server not started"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def openai_base_url(self) -> str:
        return self.url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.url  # the anthropic SDK appends /v1/messages

    # scripting
    def script(self, responses: Iterable[Scripted]) -> None:
        """Queue responses (appended to what is left)."""
        with self._lock:
            self._script.extend(responses)

    def fail(self, status: int, times: int = 1, *, retry_after: float | None = None) -> None:
        """The next `times` requests fail with `status` (before anything scripted)."""
        with self._lock:
            self._script[:0] = [error(status, retry_after=retry_after) for _ in range(times)]

    @property
    def pending(self) -> int:
        return len(self._script)

    def hold(self) -> None:
        """Keep every answer back (the requests are recorded) until `release()`: the turns
        asking stay in flight, e.g. for a process to be killed in the middle of them."""
        self._open.clear()

    def release(self) -> None:
        self._open.set()

    def bodies(self, path: str | None = None) -> list[dict[str, Any]]:
        return [r.body for r in self.requests if path is None or r.path == path]

    def _answer(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> Reply:
        problems: list[str] = []
        if self.validate:
            problems = (anthropic_problems(body) if path == ANTHROPIC_PATH
                        else openai_problems(body))
        with self._lock:
            self.requests.append(RecordedRequest(path, headers, body))
            if problems:  # rejected like the real API; the script is not consumed
                return Reply(400, default_error_body(path, 400, "; ".join(problems)))
            refused = self.gate(path, body) if self.gate is not None else None
            if refused is not None:
                return refused
            item: Scripted | None = self._script.pop(0) if self._script else None
        if item is None:
            return Reply(body=self.answer_with(path, body))
        if callable(item):
            item = item(body)
        return item if isinstance(item, Reply) else Reply(body=item)


def _handler_for(server: FakeLLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length)
            if len(raw) < length:  # the client went away mid-request (a killed replica):
                self.close_connection = True  # no request, as a real server would not serve it
                return
            path = self.path.split("?", 1)[0]
            if path not in (OPENAI_PATH, ANTHROPIC_PATH):
                self._send(Reply(404, {"error": {"message": f"no route {path}"}}), path)
                return
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                self._send(Reply(400, default_error_body(path, 400, "body is not JSON")), path)
                return
            headers = {k.lower(): v for k, v in self.headers.items()}
            answer = server._answer(path, headers, body)
            server._open.wait(timeout=120)
            time.sleep(server.delay + answer.delay)
            self._send(answer, path)

        def _send(self, answer: Reply, path: str) -> None:
            body = answer.body if answer.body is not None \
                else default_error_body(path, answer.status)
            data = json.dumps(body).encode()
            try:
                self.send_response(answer.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.send_header("request-id", "req_fake")
                self.send_header("x-request-id", "req_fake")
                for key, value in answer.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout tests)

    return Handler
