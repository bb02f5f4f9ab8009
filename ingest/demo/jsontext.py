"""Fast JSON writing of reports: bytes identical to ``json.dumps(indent=2,
allow_nan=True)``, using orjson for the large arrays where it can match exactly."""

from __future__ import annotations

import json
import re
from typing import Any

from ingest.demo.rng import _gc_paused

try:  # orjson is a hard dependency of moedash, but keep the module importable without it
    import orjson
except ImportError:  # pragma: no cover
    orjson = None  # type: ignore[assignment]

# orjson and Python's repr agree on every finite float except (a) single-digit negative
# exponents ("1.5e-7" vs "1.5e-07") and (b) magnitudes below 1e-4, which orjson writes in
# fixed notation ("0.00001") and Python in exponent notation ("1e-05"). Hits of these two
# literal patterns are few; each is confirmed by a line-anchored regex (a line holding one
# number token, as an array element or a "key": value) so string contents never match,
# then re-rendered with repr().
_HIT_RES = (re.compile(rb"e-\d(?!\d)"), re.compile(rb"0\.0000"))
_LINE_RE = re.compile(rb'( *(?:"(?:[^"\\\n]|\\.)*": )?)(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)(,?)')


def _fix_floats(buf: bytes) -> bytes:
    starts = set()
    for rx in _HIT_RES:
        for m in rx.finditer(buf):
            starts.add(buf.rfind(b"\n", 0, m.start()) + 1)
    if not starts:
        return buf
    out = []
    pos = 0
    for ls in sorted(starts):
        le = buf.find(b"\n", ls)
        if le < 0:
            le = len(buf)
        line = _LINE_RE.fullmatch(buf, ls, le)
        if line is None:
            continue
        m = line
        tok = m.group(2)
        if b"." not in tok and b"e" not in tok and b"E" not in tok:
            continue  # an int
        fixed = repr(float(tok)).encode()
        if fixed != tok:
            out.append(buf[pos : m.start(2)])
            out.append(fixed)
            pos = m.end(2)
    out.append(buf[pos:])
    return b"".join(out)


_NONE_T = type(None)
_SCALARS = (str, int, bool, _NONE_T)


def _plain_finite(obj: Any) -> bool:
    """True when ``obj`` holds only dict/list/str/int/bool/None/finite-float values and
    str dict keys: then orjson writes what json.dumps would (modulo _fix_floats).

    Containers of numbers are checked with one C-level ``sum`` (a finite sum implies
    finite elements); other types make orjson raise, which also means "use json"."""
    stack = [obj]
    while stack:
        o = stack.pop()
        if type(o) is dict:
            for key in o:
                if type(key) is not str:
                    return False
            vals: Any = o.values()
        else:
            vals = o
        if vals and type(next(iter(vals))) is float:
            try:
                total = sum(vals)
            except TypeError:
                pass
            else:
                if total - total == 0.0:
                    continue
        for v in vals:
            t = type(v)
            if t is float:
                if v - v != 0.0:
                    return False
            elif t is dict or t is list:
                stack.append(v)
            elif t not in _SCALARS:
                return False
    return True


def _fast_block(value: Any) -> bytes | None:
    """orjson rendering of ``value`` identical to json.dumps(indent=2), or None."""
    if orjson is None or not _plain_finite(value):
        return None
    try:
        buf = orjson.dumps(value, option=orjson.OPT_INDENT_2)
    except (TypeError, orjson.JSONEncodeError):
        return None
    if not buf.isascii() or b"\x7f" in buf:  # json escapes these, orjson does not
        return None
    return _fix_floats(buf)


def dump_report(report: dict[str, Any], compact: bool = False) -> bytes:
    """JSON bytes identical to ``json.dumps(report, indent=2, allow_nan=True)``.

    ``compact=True`` gives ``json.dumps(report, allow_nan=True)`` (one line, Python's
    default ``", "``/``": "`` separators). The indented form uses orjson for the big
    ``results``/``rankings`` arrays and falls back to :mod:`json` for anything orjson
    cannot reproduce byte for byte (NaN/Infinity, non-ASCII, non-str keys, ...).
    """
    with _gc_paused():
        return _dump_report(report, compact)


def _dump_report(report: Any, compact: bool) -> bytes:
    if compact:
        return json.dumps(report, allow_nan=True).encode()
    if not isinstance(report, dict) or not report:
        return json.dumps(report, indent=2, allow_nan=True).encode()
    parts = []
    for key, value in report.items():
        if not isinstance(key, str):
            return json.dumps(report, indent=2, allow_nan=True).encode()
        body = None
        if isinstance(value, list) and len(value) > 50:
            body = _fast_block(value)
        if body is None:
            body = json.dumps(value, indent=2, allow_nan=True).encode()
        parts.append(b"  " + json.dumps(key).encode() + b": " + body.replace(b"\n", b"\n  "))
    return b"{\n" + b",\n".join(parts) + b"\n}"
