"""Lenient JSON: standard JSON plus the bare ``Infinity``, ``-Infinity`` and ``NaN``
tokens Python's ``json`` module writes (bench_moe reports contain
``"swiglu_limit": Infinity``).

Reading uses jiter (the Rust JSON parser inside ``pydantic_core``, already a
dependency through pydantic) with ``allow_inf_nan``: it is a real parser, so a token
inside a string literal stays text, and it is exact (floats identical to orjson's and
the stdlib's). We tried "orjson first, then fall back" and measured it on a 100k-row
report (950 MB, indent=2) on the 2-core dev box with GC paused: orjson 9.4 s, jiter
4.9 s; and orjson spends 2.6 s before failing at the first ``Infinity`` near the top
of the file, which every real report has. So jiter parses everything; orjson writes.

Writing (:func:`dumps`): stored "JSON text" uses the same dialect as the reports:
strict JSON, except that non-finite floats are written as the bare tokens
``Infinity``/``-Infinity``/``NaN``. :func:`loads` reads it back exactly, so
``loads(dumps(x)) == x`` (NaN aside, which never equals itself). Store such text in a
TEXT column, not a JSON/JSONB column (PostgreSQL's JSON types reject the tokens).

:class:`LenientDocument` also says which top-level blocks may hold non-finite floats,
so callers can use the fast orjson writer (which would turn them into ``null``) for the
big blocks that have none.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import json
import math
from collections.abc import Iterator
from typing import Any

import orjson
import pydantic_core

from ingest.errors import InputError

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


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while building millions of acyclic objects (a 100k-row
    report is ~30M objects; with GC on, parsing takes 3x longer)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# An upload's keys are checked for duplicates in a second, stdlib parse (jiter keeps the
# last value silently) up to this size; a larger report has everything but its
# ``results`` rows checked (the blocks that name the run: model, environment, search).
UNIQUE_CHECK_BYTES = 16 * 1024 * 1024


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) == len(pairs):
        return out
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            shown = key if len(key) <= 64 else key[:64] + "…"
            raise InputError(shown, "the key appears twice in one object", 422)
        seen.add(key)
    return out


def check_unique_keys(data: bytes) -> None:
    """Raise InputError (422, field = the key) when an object of the JSON ``data`` holds
    a key twice: which value counts would be a parser's choice, and a report whose
    validated value hides another is refused instead. Bodies above
    :data:`UNIQUE_CHECK_BYTES` are checked without their ``results`` array."""
    if len(data) > UNIQUE_CHECK_BYTES:
        split = split_top_array(data, "results", 2)
        if split is None or len(split[0]) > UNIQUE_CHECK_BYTES:
            return
        data = split[0]
    try:
        json.loads(data, object_pairs_hook=_no_duplicates)
    except InputError:
        raise
    except ValueError:
        return  # not stdlib JSON (the lenient parse already accepted it): not ours to judge


def load_document(raw: bytes | str, *, unique_keys: bool = False) -> LenientDocument:
    """Parse lenient JSON; raise InputError(field "", status 422) when it is not JSON.

    A UTF-8 BOM is ignored; UTF-16/32 and invalid UTF-8 are refused with a clear message.
    ``unique_keys`` (uploads): a key twice in one object is refused too
    (:func:`check_unique_keys`).
    """
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InputError("", "file is UTF-16/UTF-32 encoded; save it as UTF-8", 422)
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    with gc_paused():
        try:
            value = pydantic_core.from_json(data, allow_inf_nan=True, cache_strings="all")
        except ValueError as exc:
            decode_text(data)  # a clearer message when the bytes are not UTF-8
            raise InputError("", f"invalid JSON: {exc}", 422) from None
        if unique_keys:
            check_unique_keys(data)
    return LenientDocument(value, _nonfinite_keys(data, value))


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


def _nonfinite_keys(data: bytes, value: Any) -> frozenset[str] | None:
    """Top-level keys holding non-finite floats; None when we cannot tell cheaply.

    The bytes tell how many ``Infinity``/``NaN`` tokens there can be (an upper bound:
    the words may also sit inside strings). We look for them in the small blocks only;
    if all are found there, the big ``results``/``rankings`` arrays have none.
    """
    expected = data.count(b"Infinity") + data.count(b"NaN")
    if expected == 0:
        return frozenset()
    if not isinstance(value, dict):
        return None
    found: set[str] = set()
    total = 0
    for key, block in value.items():
        if key in _BIG_BLOCKS:
            continue
        n = _count_nonfinite(block)
        if n:
            found.add(key)
            total += n
    return frozenset(found) if total == expected else None


def _count_nonfinite(node: Any) -> int:
    if isinstance(node, float):
        return 0 if math.isfinite(node) else 1
    if isinstance(node, dict):
        return sum(_count_nonfinite(v) for v in node.values())
    if isinstance(node, list):
        return sum(_count_nonfinite(v) for v in node)
    return 0


# --- splitting a big top-level array for parallel parsing -----------------------------

SPLIT_MARKER = "\x00moedash-split-marker"
_WS = b" \t\r\n"


def split_top_array(raw: bytes, key: str, parts: int) -> tuple[bytes, list[tuple[int, int]]] | None:
    """Cut the array under top-level ``key`` into ``parts`` runs of whole elements.

    Returns ``(skeleton, spans)``: ``skeleton`` is ``raw`` with the array's content
    replaced by the single string :data:`SPLIT_MARKER`; for each ``(start, end)`` span,
    ``b"[" + raw[start:end] + b"]"`` (a *chunk*) is an array of consecutive elements, and
    the chunks joined with ``b","`` are the original content. Found by byte search only
    (the layout bench_moe writes: elements are objects whose first key is
    ``"workload"``; the array is followed by ``"rankings"`` or closes the document), so
    the result is a *guess*: the caller must check that the
    skeleton parses with ``doc[key] == [SPLIT_MARKER]`` and that every chunk parses.
    If both hold, the split is exact: a chunk can only parse if it starts and ends at
    a comma between two elements of that very array (a cut inside a string or a nested
    value leaves an unterminated string or unbalanced brackets). None when no plausible
    split exists.
    """
    needle = b'"' + key.encode() + b'"'
    start = raw.find(needle)
    if start < 0 or parts < 2:
        return None
    pos = _skip(raw, start + len(needle))
    if raw[pos : pos + 1] != b":":
        return None
    open_pos = _skip(raw, pos + 1)
    if raw[open_pos : open_pos + 1] != b"[":
        return None
    close_pos = _array_end(raw, open_pos)
    if close_pos is None:
        return None
    cuts = [open_pos + 1]
    size = close_pos - open_pos
    for k in range(1, parts):
        cut = _element_boundary(raw, max(open_pos + k * size // parts, cuts[-1]), close_pos)
        if cut is None or cut <= cuts[-1]:
            return None
        cuts.append(cut)
    spans = list(zip(cuts, [c - 1 for c in cuts[1:]] + [close_pos], strict=True))
    marker = json.dumps(SPLIT_MARKER).encode()
    return raw[: open_pos + 1] + marker + raw[close_pos:], spans


def _skip(raw: bytes, pos: int) -> int:
    while raw[pos : pos + 1] in (b" ", b"\t", b"\r", b"\n") and pos < len(raw):
        pos += 1
    return pos


def _skip_back(raw: bytes, pos: int) -> int:
    while pos >= 0 and raw[pos : pos + 1] in (b" ", b"\t", b"\r", b"\n"):
        pos -= 1
    return pos


def _array_end(raw: bytes, open_pos: int) -> int | None:
    """Index of the ``]`` closing the array, guessed from what follows it."""
    nxt = raw.rfind(b'"rankings"', open_pos)  # from the end: rankings follow the results
    if nxt >= 0:
        comma = _skip_back(raw, nxt - 1)
        if raw[comma : comma + 1] != b",":
            return None
        end = _skip_back(raw, comma - 1)
    else:
        brace = _skip_back(raw, len(raw) - 1)
        if raw[brace : brace + 1] != b"}":
            return None
        end = _skip_back(raw, brace - 1)
    return end if raw[end : end + 1] == b"]" and end > open_pos else None


def _element_boundary(raw: bytes, pos: int, limit: int) -> int | None:
    """First ``},{"workload"`` boundary at or after ``pos``: index just after the comma."""
    for _ in range(10_000):
        hit = raw.find(b'"workload"', pos, limit)
        if hit < 0:
            return None
        brace = _skip_back(raw, hit - 1)
        comma = _skip_back(raw, brace - 1)
        close = _skip_back(raw, comma - 1)
        if (
            raw[brace : brace + 1] == b"{"
            and raw[comma : comma + 1] == b","
            and raw[close : close + 1] == b"}"
        ):
            return comma + 1
        pos = hit + 1
    return None
