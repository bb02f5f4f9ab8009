"""Field checks and frame building shared by the bench_moe and NVIDIA dashboard parsers."""

from __future__ import annotations

import datetime
import re
import unicodedata
from collections import Counter
from typing import Any

import numpy as np
import orjson
import pandas as pd
import pyarrow as pa

from analysis import columns as C
from ingest.errors import InputError
from ingest.hardware import normalize_hardware_label
from ingest.records import UploadMeta

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_CONTROL_EXCEPT_WHITESPACE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:;,=+ -]{0,63}$")
MAX_NOTES_LENGTH = 10_000
_TEXT_DTYPE = pd.StringDtype("pyarrow", na_value=np.nan)  # what pandas 3 calls "str"
_TEXT_ARRAY = _TEXT_DTYPE.construct_array_type()


def _shown(value: Any) -> str:
    """A short printable form of a value for an error message."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def json_type(value: Any) -> str:
    """The JSON name of a parsed value's type (for error messages)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def check_text(value: Any, field: str, max_length: int) -> str | None:
    """A single-line string of at most ``max_length`` characters, or None."""
    if value is None:
        return None
    if type(value) is not str:
        raise InputError(field, f"expected a string or null, got {json_type(value)}")
    if len(value) > max_length:
        raise InputError(field, f"longer than {max_length} characters")
    if _CONTROL.search(value):
        raise InputError(field, "contains control characters")
    return value


def check_label(value: Any, field: str, max_length: int) -> str | None:
    """A name the pages list and group by (a model name, a quantisation): checked as
    :func:`check_text`, then NFKC-normalised (a full-width or ligature spelling is the
    same model as the plain one) and refused when it holds an invisible format
    character (zero-width, bidi overrides: U+200B, U+202E …) or letters of more than one
    script (a Cyrillic "о" inside a Latin name): two labels that look identical must be
    one label."""
    text = check_text(value, field, max_length)
    if text is None or text.isascii():
        return text
    text = unicodedata.normalize("NFKC", text)
    if any(unicodedata.category(ch) == "Cf" for ch in text):
        raise InputError(field, "contains an invisible formatting character (zero-width or bidi)")
    scripts = {unicodedata.name(ch, "UNKNOWN").split(" ", 1)[0] for ch in text if ch.isalpha()}
    if len(scripts) > 1:
        raise InputError(field, f"mixes letters of several scripts ({', '.join(sorted(scripts))})")
    if len(text) > max_length:
        raise InputError(field, f"longer than {max_length} characters")
    return text


def check_text_fields(block: Any, field: str, max_length: int) -> None:
    """Every string value directly in the object ``block`` is at most ``max_length``
    characters (InputError naming ``field.key``); other values are not looked at."""
    if not isinstance(block, dict):
        return
    for key, value in block.items():
        if isinstance(value, str) and len(value) > max_length:
            name = key if len(key) <= 64 else key[:64] + "…"
            raise InputError(f"{field}.{name}", f"longer than {max_length} characters")


def escape_controls(value: str) -> str:
    """Free text (a skip reason, an error message) with control characters other than
    tab, newline and carriage return written as visible ``\\xNN`` escapes (NUL becomes
    the four characters ``\\x00``). PostgreSQL cannot store NUL in text and a terminal
    or page should not receive raw escape sequences; escaping (rather than refusing)
    keeps a report whose failure message carries ANSI colour codes, with the same stored
    text on DuckDB and PostgreSQL."""
    if not _CONTROL_EXCEPT_WHITESPACE.search(value):
        return value
    return _CONTROL_EXCEPT_WHITESPACE.sub(lambda m: f"\\x{ord(m.group()):02x}", value)


def expect_int(value: Any, field: str, minimum: int | None = None) -> int | None:
    """An integer (not a boolean, within ±2**62, ≥ ``minimum``) or None."""
    if value is None:
        return None
    if type(value) is not int:
        raise InputError(field, f"expected an integer, got {json_type(value)}")
    if not -(1 << 62) < value < 1 << 62:
        raise InputError(field, f"{_shown(value)} is out of range")
    if minimum is not None and value < minimum:
        raise InputError(field, f"must be ≥ {minimum}, got {value}")
    return value


class Warnings:
    """Parser warnings, each distinct text kept once with a count."""

    def __init__(self) -> None:
        self._counts: Counter[str] = Counter()

    def add(self, text: str, count: int = 1) -> None:
        self._counts[text] += count

    def counts(self) -> dict[str, int]:
        return dict(self._counts)

    def __contains__(self, text: str) -> bool:
        return text in self._counts

    def to_json(self) -> str:
        """JSON list of strings; "(N times)" is appended to repeated warnings."""
        items = [t if n == 1 else f"{t} ({n} times)" for t, n in self._counts.items()]
        return orjson.dumps(items).decode()


def run_meta_fields(meta: UploadMeta) -> dict[str, Any]:
    """Validated, normalised upload metadata (InputError names the meta field).

    ``hardware`` is canonicalised (see ``normalize_hardware_label``); ``run_date`` must
    be an ISO date YYYY-MM-DD; ``ci_url`` an http(s) URL; ``notes`` free text up to
    10,000 characters (newlines and tabs allowed, other control characters not; HTML
    or SQL is kept verbatim - whoever renders it must escape it).
    """
    hardware = None
    if meta.hardware is not None and meta.hardware != "":
        hardware = normalize_hardware_label(meta.hardware, "hardware")
    run_date = None
    if meta.run_date:
        text = check_text(meta.run_date, "run_date", 10)
        try:
            run_date = datetime.date.fromisoformat(text or "").isoformat()
        except ValueError:
            raise InputError("run_date", f"expected an ISO date YYYY-MM-DD, got {text!r}") from None
        if run_date != text:
            raise InputError("run_date", f"expected an ISO date YYYY-MM-DD, got {text!r}")
    ci_url = check_text(meta.ci_url or None, "ci_url", 2048)
    if ci_url is not None and (
        not re.match(r"^https?://[^\s/]+", ci_url) or any(c.isspace() for c in ci_url)
    ):
        raise InputError("ci_url", "expected an http(s) URL")
    notes = meta.notes or None
    if notes is not None:
        if type(notes) is not str:
            raise InputError("notes", f"expected a string, got {json_type(notes)}")
        if len(notes) > MAX_NOTES_LENGTH:
            raise InputError("notes", f"longer than {MAX_NOTES_LENGTH} characters")
        if _CONTROL_EXCEPT_WHITESPACE.search(notes):
            raise InputError("notes", "contains control characters")
    dispatch = check_text(meta.dispatch or None, "dispatch", 64)
    if dispatch is not None and not _LABEL.match(dispatch):
        raise InputError("dispatch", "expected a short label (letters, digits, _.:;,=+-)")
    if not isinstance(meta.synthetic, bool):
        raise InputError("synthetic", f"expected a boolean, got {json_type(meta.synthetic)}")
    return {
        "hardware": hardware,
        "trtllm_version": check_text(meta.trtllm_version or None, "trtllm_version", 64),
        "trtllm_commit": check_text(meta.trtllm_commit or None, "trtllm_commit", 64),
        "run_date": run_date,
        "ci_url": ci_url,
        "notes": notes,
        "dispatch": dispatch,
        "synthetic": meta.synthetic,
    }


def candidate_frame(rows: list[tuple[Any, ...]]) -> pd.DataFrame:
    """A candidate frame from row tuples in ``CANDIDATE_COLUMNS`` order.

    Integer columns are nullable ``Int64``, float columns ``float64`` (null → NaN),
    boolean columns nullable ``boolean``, text columns pandas' ``str`` dtype (missing =
    NaN, as pandas 3 does for text).
    """
    names = C.CANDIDATE_COLUMNS
    # all tuples have len(names) items by construction; zip(strict=True) is 15x slower here
    transposed = list(zip(*rows, strict=False)) if rows else [() for _ in names]
    data: dict[str, Any] = {}
    for name, values in zip(names, transposed, strict=True):
        if name in C.INT_COLUMNS:
            data[name] = pd.array(list(values), dtype="Int64")
        elif name in C.FLOAT_COLUMNS:
            data[name] = np.array(values, dtype=np.float64)
        elif name in C.BOOL_COLUMNS:
            data[name] = pd.array(list(values), dtype="boolean")
        else:
            # via Arrow: 10x faster than pd.array(..., dtype="str") for 100k rows; the
            # array class directly: a Series per column costs 3x more on small reports
            data[name] = _TEXT_ARRAY._from_sequence(
                pa.array(values, type=pa.large_string()), dtype=_TEXT_DTYPE
            )
    # arrays, not Series, and no copy: no index to align (a third of a small parse)
    return pd.DataFrame(data, columns=list(names), copy=False)
