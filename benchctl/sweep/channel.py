"""The worker's replies, signed: a row reaches the results only if benchctl's worker wrote it.

The measured code runs in the worker, which can write to the worker's output as well as benchctl can.
So each worker gets a key of its own from its parent (on stdin, read before any operator file is
imported, then kept only inside an HMAC object), and signs each reply with it together with the reply's
number; the parent accepts a reply only with the right signature and number. A line written by the
measured code (a forged row, or one copied from an earlier reply) fails, and its cell gets an `error` row.
What this does not stop: code that searches the worker's memory for the HMAC object. The parent also
recomputes every row's statistics from its samples (executors.restate).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from typing import Any, Callable

KEY_BYTES = 32


class Forged(Exception):
    """A reply that benchctl's worker did not write."""


def new_key() -> str:
    return secrets.token_hex(KEY_BYTES)


def signer(key_hex: str) -> Callable[[int, list[dict[str, Any]]], str]:
    """The worker's writer of reply number `seq`, as one line."""
    mac = hmac.new(bytes.fromhex(key_hex), digestmod=hashlib.sha256)

    def reply(seq: int, rows: list[dict[str, Any]]) -> str:
        body = json.dumps({"seq": seq, "rows": rows})
        signed = mac.copy()
        signed.update(body.encode())
        return json.dumps({"body": body, "mac": signed.hexdigest()})

    return reply


def opened(line: str, key_hex: str, seq: int) -> list[dict[str, Any]]:
    """The rows of reply number `seq`; Forged when the line is not that reply, signed with `key_hex`."""
    try:
        reply = json.loads(line)
        body, mac = reply["body"], reply["mac"]
        expected = hmac.new(bytes.fromhex(key_hex), body.encode(), hashlib.sha256).hexdigest()
        if not hmac.compare_digest(expected, str(mac)):
            raise Forged("its signature is wrong")
        data = json.loads(body)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise Forged(f"it is not a reply benchctl's worker writes ({type(exc).__name__})") from None
    if data.get("seq") != seq:
        raise Forged(f"it is reply {data.get('seq')}, not {seq} (a copy of an earlier one)")
    return data["rows"]
