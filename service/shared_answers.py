"""Answers shared between replicas: an exact, safe encoding of a cached answer.

A replica that computes an expensive per-cell answer (Best, the Pareto table, a cell's
per-configuration statistics ...) for a cell version stores it in the database
(``Store.answers``, :mod:`db.answers`); every other replica, and this one after a
restart, reads it instead of reading the cell's rows and computing it again.

The encoding is data only -- no pickle: a payload read from a shared database can
build nothing but plain values, DataFrames and the dataclasses registered here with
:func:`shareable`. Layout: ``MDA1``, the length and zlib-compressed JSON of the value's
structure, then each DataFrame it holds as an Arrow IPC stream. :func:`encode` refuses
(:class:`Unshareable`) a value it cannot give back exactly: a DataFrame whose column
types would not survive the round trip (checked by decoding it), a non-text column
name, an unregistered class. Such answers are simply kept per process.

Who writes: only work that is not a visitor's request (the warm-up at start and the
recomputation right after an upload, inside :func:`writing`). A GET reads shared answers
but never writes one (an anonymous read costs the database no write).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import hashlib
import io
import json
import struct
import zlib
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import numpy as np
import pandas as pd
import pyarrow as pa

T = TypeVar("T")
_MAGIC = b"MDA1"
_REGISTRY: dict[str, type] = {}
_WRITING: contextvars.ContextVar[bool] = contextvars.ContextVar("moedash_share", default=False)
_NESTED = (pa.types.is_list, pa.types.is_large_list, pa.types.is_struct, pa.types.is_map)


class Unshareable(ValueError):
    """The value cannot be encoded exactly (it stays in this process's cache only)."""


def shareable(cls: type[T]) -> type[T]:
    """Class decorator: instances of this dataclass may be encoded and decoded."""
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls.__name__} is not a dataclass")
    _REGISTRY[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return cls


@contextlib.contextmanager
def writing() -> Iterator[None]:
    """Answers computed inside this block are stored for every replica."""
    token = _WRITING.set(True)
    try:
        yield
    finally:
        _WRITING.reset(token)


def may_write() -> bool:
    """True inside :func:`writing`."""
    return _WRITING.get()


def digest(key: object) -> str:
    """A stable name for a cache key (its repr is deterministic across processes for
    the tuples of text, numbers, None and frozen dataclasses keys are made of)."""
    return hashlib.sha256(repr(key).encode()).hexdigest()


# ------------------------------------------------------------------ encode
def encode(value: Any) -> bytes:
    """The payload of ``value`` (see module docstring); :class:`Unshareable` if it
    cannot be given back exactly."""
    frames: list[bytes] = []
    tree = _enc(value, frames, 0)
    head = zlib.compress(json.dumps(tree, separators=(",", ":")).encode(), 6)
    out = io.BytesIO()
    out.write(_MAGIC)
    out.write(struct.pack("<I", len(head)))
    out.write(head)
    for blob in frames:
        out.write(struct.pack("<Q", len(blob)))
        out.write(blob)
    return out.getvalue()


def _enc(v: Any, frames: list[bytes], depth: int) -> Any:
    if depth > 32:
        raise Unshareable("nested too deep")
    if v is None or isinstance(v, bool | str):
        return v
    if isinstance(v, int | float) and not isinstance(v, np.generic):
        return v if isinstance(v, int) else {"__f": repr(float(v))}
    if isinstance(v, np.bool_):
        return bool(v)
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return {"__f": repr(float(v))}
    if isinstance(v, pd.DataFrame):
        frames.append(_frame_bytes(v))
        return {"__df": len(frames) - 1}
    if isinstance(v, pd.Series):
        if v.name is not None and not isinstance(v.name, str):
            raise Unshareable("series name not text")
        frames.append(_frame_bytes(v.to_frame(name="__series__")))
        return {"__s": len(frames) - 1, "name": v.name}
    if isinstance(v, pd.Timestamp):
        return {"__ts": v.isoformat()}
    if isinstance(v, tuple):
        return {"__t": [_enc(x, frames, depth + 1) for x in v]}
    if isinstance(v, list):
        return [_enc(x, frames, depth + 1) for x in v]
    if isinstance(v, dict):
        return {
            "__d": [[_enc(k, frames, depth + 1), _enc(x, frames, depth + 1)] for k, x in v.items()]
        }
    if isinstance(v, frozenset | set):
        items = sorted(v, key=repr)
        return {
            "__fs" if isinstance(v, frozenset) else "__set": [
                _enc(x, frames, depth + 1) for x in items
            ]
        }
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        name = f"{type(v).__module__}.{type(v).__qualname__}"
        if _REGISTRY.get(name) is not type(v):
            raise Unshareable(f"{name} is not registered as shareable")
        fields = {
            f.name: _enc(getattr(v, f.name), frames, depth + 1) for f in dataclasses.fields(v)
        }
        return {"__dc": name, "f": fields}
    raise Unshareable(f"cannot share a {type(v).__name__}")


def _frame_bytes(df: pd.DataFrame) -> bytes:
    if not all(isinstance(c, str) for c in df.columns) or df.columns.has_duplicates:
        raise Unshareable("column names must be distinct text")
    if not isinstance(df.index, pd.RangeIndex):
        raise Unshareable("only frames with a plain row index are shared")
    try:
        table = pa.Table.from_pandas(df, preserve_index=None)
    except (pa.ArrowException, TypeError, ValueError) as exc:
        raise Unshareable(f"frame not representable: {exc}") from exc
    # Arrow keeps a categorical's values, not its categories' own dtype (pandas'
    # "string" vs "str"): carried beside, restored on the way back
    cats = {
        str(c): str(df[c].cat.categories.dtype)
        for c in df.columns
        if isinstance(df[c].dtype, pd.CategoricalDtype)
    }
    meta = dict(table.schema.metadata or {})
    meta[b"moedash_categories"] = json.dumps(cats).encode()
    table = table.replace_schema_metadata(meta)
    back = _frame_from_table(table)
    if list(back.dtypes) != list(df.dtypes) or not back.index.equals(df.index):
        raise Unshareable("a column's type would change in transit")
    sink = pa.BufferOutputStream()
    options = pa.ipc.IpcWriteOptions(compression="zstd")
    with pa.ipc.new_stream(sink, table.schema, options=options) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def _frame_from_table(table: pa.Table) -> pd.DataFrame:
    df = table.to_pandas()
    raw = (table.schema.metadata or {}).get(b"moedash_categories")
    for col, dtype in (json.loads(raw) if raw else {}).items():
        have = df[col].dtype
        if isinstance(have, pd.CategoricalDtype) and str(have.categories.dtype) != dtype:
            cats = have.categories.astype(dtype)
            df[col] = df[col].cat.rename_categories(cats)
    for field in table.schema:
        if any(test(field.type) for test in _NESTED):
            # lists and mappings come back as the Python values they were
            df[field.name] = pd.Series(
                table.column(field.name).to_pylist(), index=df.index, dtype=object
            )
    return df


# ------------------------------------------------------------------ decode
def decode(payload: bytes) -> Any:
    """The value :func:`encode` wrote; ValueError on anything else."""
    view = memoryview(payload)
    if bytes(view[:4]) != _MAGIC:
        raise ValueError("not a shared answer")
    (n,) = struct.unpack_from("<I", view, 4)
    tree = json.loads(zlib.decompress(view[8 : 8 + n]))
    frames: list[pd.DataFrame] = []
    pos = 8 + n
    while pos < len(view):
        (size,) = struct.unpack_from("<Q", view, pos)
        pos += 8
        with pa.ipc.open_stream(pa.py_buffer(view[pos : pos + size])) as reader:
            frames.append(_frame_from_table(reader.read_all()))
        pos += size
    return _dec(tree, frames)


def _dec(v: Any, frames: list[pd.DataFrame]) -> Any:
    if isinstance(v, list):
        return [_dec(x, frames) for x in v]
    if not isinstance(v, dict):
        return v
    if "__f" in v:
        return float(v["__f"])
    if "__df" in v:
        return frames[int(v["__df"])]
    if "__s" in v:
        return frames[int(v["__s"])]["__series__"].rename(v["name"])
    if "__ts" in v:
        return pd.Timestamp(v["__ts"])
    if "__t" in v:
        return tuple(_dec(x, frames) for x in v["__t"])
    if "__d" in v:
        return {_dec(k, frames): _dec(x, frames) for k, x in v["__d"]}
    if "__fs" in v:
        return frozenset(_dec(x, frames) for x in v["__fs"])
    if "__set" in v:
        return {_dec(x, frames) for x in v["__set"]}
    if "__dc" in v:
        cls = _REGISTRY.get(str(v["__dc"]))
        if cls is None:
            raise ValueError(f"unknown shared class {v['__dc']!r}")
        return cls(**{k: _dec(x, frames) for k, x in v["f"].items()})
    raise ValueError("malformed shared answer")


def round_trip(value: T, store: Callable[[bytes], object]) -> T:
    """``value`` as every replica will read it: encoded, handed to ``store``, decoded
    (so the replica that computed it answers exactly what the others will); ``value``
    itself when it cannot be shared."""
    try:
        payload = encode(value)
    except Unshareable:
        return value
    store(payload)
    out: T = decode(payload)
    return out
