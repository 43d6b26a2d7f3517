"""What a reply says when the model could not answer: an outage is worded as one, a request
the server refused as what it is (a set-up or compatibility problem, which `brain doctor`
checks), and never "can't reach the model" for a server that answered."""

from __future__ import annotations

from bot.llm.types import LLMError

OUTAGES = frozenset({"unavailable", "timeout", "overloaded", "rate_limited"})
MAX_SERVER_WORDS = 160  # of the server's message quoted to the user


def is_outage(exc: LLMError) -> bool:
    return exc.kind in OUTAGES


def _said(exc: LLMError) -> str:
    said = " ".join((exc.server_message or exc.message).split())
    return said if len(said) <= MAX_SERVER_WORDS else said[: MAX_SERVER_WORDS - 1] + "\u2026"


def reason(exc: LLMError) -> str:
    """Why a note went to the inbox, for its `reason` field."""
    if is_outage(exc):
        return f"the language model is unreachable ({exc.kind})"
    if exc.kind == "bad_request":
        return "the model server refused the request"
    return f"the language model failed ({exc.kind})"


def problem(exc: LLMError) -> str:
    """The trouble, in a clause: "I can't reach the language model right now (timeout)"."""
    if is_outage(exc):
        return f"I can't reach the language model right now ({exc.kind})"
    if exc.kind == "auth":
        return "the model server did not accept the API key"
    if exc.kind == "bad_request":
        return (f"the model server refused my request ({_said(exc)}); that is a set-up or "
                "compatibility problem on my side, not an outage, and `brain doctor` checks it")
    return f"the language model failed ({exc.kind})"


def saved_anyway(exc: LLMError, path: str) -> str:
    """A thought kept in the inbox although the model failed."""
    lead = problem(exc)
    return (f"{lead[0].upper()}{lead[1:]}, so I saved your note to the inbox: {path}. "
            "Nothing is lost; you can file it later.")


def nothing_saved(exc: LLMError) -> str:
    """A question or command the model failed on: nothing was saved."""
    lead = problem(exc)
    then = ("please try again in a moment." if is_outage(exc)
            else "please try again, or rephrase it.")
    return (f"{lead[0].upper()}{lead[1:]}. That looked like a question or command, so nothing "
            f"was saved; {then}")
