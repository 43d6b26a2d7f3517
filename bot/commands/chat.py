"""Placeholder: verbs of this group are added by their owner."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: Any) -> None:  # argparse subparsers
    del sub


def _unused(args: argparse.Namespace) -> int:  # pragma: no cover
    return 0
