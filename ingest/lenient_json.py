"""Lenient JSON: standard JSON plus the bare ``Infinity``, ``-Infinity`` and ``NaN``
tokens Python's ``json`` module writes (bench_moe reports contain
``"swiglu_limit": Infinity``).

Reading is fast and exact:

1. ``orjson`` parses the bytes. Almost every document either succeeds here or fails
   at its first non-finite token.
2. orjson reports the *character* position of its failure. It has parsed everything
   before that point as JSON, so a failure that sits exactly on ``Infinity``/``NaN``
   is a bare token in value position, never text inside a string literal. We replace
   that token by a sentinel string and parse again, at most
   :data:`MAX_FAST_TOKENS` times (a report has one or two such tokens, all in the
   ``model`` block near the top, so the retries are cheap).
3. The sentinels are turned back into floats by walking only the top-level blocks
   that can hold them (small ones first; the big ``results``/``rankings`` arrays only
   if tokens remain unaccounted for).
4. Anything else (many tokens, huge numbers orjson rejects, odd syntax) goes through
   the standard library parser, which accepts exactly JSON + the three tokens and
   gives precise error messages.

Writing (:func:`dumps`): stored "JSON text" uses the same dialect as the reports:
strict JSON, except that non-finite floats are written as the bare tokens
``Infinity``/``-Infinity``/``NaN``. :func:`loads` reads it back exactly, so
``loads(dumps(x)) == x`` (NaN aside, which never equals itself). Store such text in a
TEXT column, not a JSON/JSONB column (PostgreSQL's JSON types reject the tokens).
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

import orjson

from ingest.errors import InputError

MAX_FAST_TOKENS = 32
_SENTINEL_PREFIX = "\x00moedash-nonfinite:"
_SENTINEL_JSON_PREFIX = "\\u0000moedash-nonfinite:"
_TOKENS: dict[str, float] = {
    _SENTINEL_PREFIX + "Infinity": math.inf,
    _SENTINEL_PREFIX + "-Infinity": -math.inf,
    _SENTINEL_PREFIX + "NaN": math.nan,
}
_BIG_BLOCKS = ("results", "rankings")


@dataclasses.dataclass(frozen=True)
class LenientDocument:
    """A parsed document and where its non-finite floats are.

    ``nonfinite_keys`` names the top-level keys whose values contain a non-finite float
    (empty when there are none); None means "unknown, assume any" (the slow path).
    """

    value: Any
    nonfinite_keys: frozenset[str] | None

    def may_have_nonfinite(self, key: str) -> bool:
        """True unless the top-level ``key`` is known to hold only finite floats."""
        return self.nonfinite_keys is None or key in self.nonfinite_keys


def decode_text(raw: bytes) -> str:
    """UTF-8 bytes (an optional UTF-8 BOM is dropped) to text; InputError otherwise."""
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InputError("", "file is UTF-16/UTF-32 encoded; save it as UTF-8", 422)
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            "", f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})", 422
        ) from None


def load_document(raw: bytes | str) -> LenientDocument:
    """Parse lenient JSON; raise InputError(field "", status 422) when it is not JSON."""
    if isinstance(raw, bytes):
        if not raw.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")):
            try:
                return LenientDocument(orjson.loads(raw), frozenset())
            except orjson.JSONDecodeError:
                pass
        text = decode_text(raw)
    else:
        text = raw
    if _SENTINEL_JSON_PREFIX not in text:
        doc = _load_with_substitution(text)
        if doc is not None:
            return doc
    return LenientDocument(_load_stdlib(text), None)


def loads(raw: bytes | str) -> Any:
    """Parse lenient JSON text (e.g. a stored ``model_json``) into Python values."""
    return load_document(raw).value


def dumps(value: Any, *, nonfinite: bool = True) -> str:
    """Compact JSON text; non-finite floats become bare ``Infinity``/``NaN`` tokens.

    ``nonfinite=False`` promises there are no non-finite floats (the caller knows it
    from :class:`LenientDocument`) and takes the fast orjson path, which would
    otherwise write them as ``null``.
    """
    if not nonfinite:
        try:
            return orjson.dumps(value).decode()
        except TypeError:
            pass  # e.g. an integer beyond 64 bits: the stdlib encoder handles it
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=True)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InputError("", f"cannot serialise value: {exc}", 422) from None


def _load_with_substitution(text: str) -> LenientDocument | None:
    """orjson plus sentinel substitution; None when the stdlib path must decide."""
    count = 0
    while True:
        try:
            value = orjson.loads(text)
            break
        except orjson.JSONDecodeError as exc:
            pos = exc.pos
        if count >= MAX_FAST_TOKENS:
            return None
        if text.startswith("Infinity", pos):
            start, end = pos, pos + 8
            if pos > 0 and text[pos - 1] == "-":
                start -= 1
        elif text.startswith("NaN", pos):
            start, end = pos, pos + 3
        else:
            return None
        text = f'{text[:start]}"{_SENTINEL_JSON_PREFIX}{text[start:end]}"{text[end:]}'
        count += 1
    if count == 0:
        return LenientDocument(value, frozenset())
    if not isinstance(value, dict):
        return LenientDocument(_restore(value, [count]), None)
    remaining = [count]
    found: set[str] = set()
    keys = [k for k in value if k not in _BIG_BLOCKS] + [k for k in _BIG_BLOCKS if k in value]
    for key in keys:
        if remaining[0] <= 0:
            break
        before = remaining[0]
        value[key] = _restore(value[key], remaining)
        if remaining[0] != before:
            found.add(key)
    return LenientDocument(value, frozenset(found))


def _restore(node: Any, remaining: list[int]) -> Any:
    """Replace sentinel strings under ``node`` by floats, decrementing ``remaining``."""
    if isinstance(node, str):
        if node.startswith(_SENTINEL_PREFIX) and node in _TOKENS:
            remaining[0] -= 1
            return _TOKENS[node]
        return node
    if isinstance(node, dict):
        for k, v in node.items():
            if isinstance(v, (dict, list)) or (isinstance(v, str) and v.startswith("\x00")):
                node[k] = _restore(v, remaining)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            if isinstance(v, (dict, list)) or (isinstance(v, str) and v.startswith("\x00")):
                node[i] = _restore(v, remaining)
    return node


def _load_stdlib(text: str) -> Any:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError("", f"invalid JSON: {exc}", 422) from None
    except RecursionError:
        raise InputError("", "invalid JSON: nested too deeply", 422) from None
    except ValueError as exc:  # e.g. an integer with more than 4300 digits
        raise InputError("", f"invalid JSON: {exc}", 422) from None
    if "\\u" in text or "\\U" in text:
        # The stdlib accepts lone surrogate escapes ("\ud800"); nothing downstream can
        # store them, so refuse here with a clear message.
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise InputError("", "invalid JSON: string with a lone surrogate escape", 422) from None
        except (ValueError, RecursionError):
            pass
    return value
