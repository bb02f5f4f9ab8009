"""Parallel parsing of big bench_moe reports on a fork-based process pool.

Used by :func:`ingest.bench_moe.parse_bench_moe`, which it does not import, for reports of
at least :data:`PARALLEL_MIN_BYTES`; the sequential parser stays the reference and the
fallback.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import re
from concurrent.futures import Future, ProcessPoolExecutor
from typing import TYPE_CHECKING, Any

import pydantic_core

from ingest.errors import InputError, UnsupportedFormat
from ingest.lenient_json import (
    SPLIT_MARKER,
    UNIQUE_CHECK_BYTES,
    LenientDocument,
    check_unique_keys,
    load_document,
    split_top_array,
)

if TYPE_CHECKING:
    from ingest.bench_moe_rows import RowFlattener

PARALLEL_MIN_BYTES = 64 << 20
# One worker per CPU, at most this many: past 4 the parent's unpickling and frame
# building dominate and more children only add memory.
MAX_WORKERS = 4

# Set in a pool child by its initializer (inherited through fork, never pickled): the
# whole report and the parent's row flattener as they were when the pool forked.
_CHILD_JOB: tuple[bytes, RowFlattener] | None = None
# What a child keeps alive until it exits: freeing millions of objects one by one costs
# about as much as building them, and the child's exit (os._exit) reclaims them at once.
_CHILD_KEEP: list[Any] = []


class Fallback(Exception):
    """The parallel path cannot decide; parse sequentially instead."""


def worker_count(workers: int | None, size: int) -> int:
    """How many processes to parse ``size`` bytes with: 1 below :data:`PARALLEL_MIN_BYTES`
    or without ``fork``; ``workers`` if given; else one per CPU, at most :data:`MAX_WORKERS`."""
    if size < PARALLEL_MIN_BYTES or "fork" not in multiprocessing.get_all_start_methods():
        return 1
    if workers is None:
        workers = min(os.cpu_count() or 1, MAX_WORKERS)
    return max(1, workers)


def split_for_workers(raw: bytes, workers: int) -> tuple[LenientDocument, PooledRows] | None:
    """Cut a big report for ``workers`` processes; None → parse sequentially.

    Returns the parsed skeleton (the document with ``results`` replaced by one marker)
    and the row producer to hand to ``parse_bench_moe_document(doc, meta, flatten=...)``;
    the producer raises :class:`Fallback` when the parallel path cannot decide.

    Why: parsing is CPU-bound (building ~300 Python objects per row dominates). How: the
    ``results`` array is cut at element boundaries by byte search
    (:func:`split_top_array`), the parent parses the rest of the document (model,
    environment, rankings...), each pool process parses and flattens one run of rows and
    sends back the row tuples. Correctness does not rest on the byte search: the
    skeleton and every chunk must parse (which proves the cut), else we fall back.
    """
    split = split_top_array(raw, "results", workers)
    if split is None:
        return None
    skeleton, spans = split
    try:
        doc = load_document(skeleton)
    except InputError:
        return None
    if not isinstance(doc.value, dict) or doc.value.get("results") != [SPLIT_MARKER]:
        return None
    # keys twice in one object: the whole report up to the check's size, else all but
    # the rows (ingest.lenient_json.UNIQUE_CHECK_BYTES)
    check_unique_keys(raw if len(raw) <= UNIQUE_CHECK_BYTES else skeleton)
    tokens = raw.count(b"Infinity") + raw.count(b"NaN")
    if tokens != skeleton.count(b"Infinity") + skeleton.count(b"NaN"):
        # non-finite floats may sit in the rows: children must use the safe writer
        known = doc.nonfinite_keys
        doc = LenientDocument(doc.value, None if known is None else known | {"results"})
    return doc, PooledRows(raw, spans)


class PooledRows:
    """Flattens the rows of ``raw[start:end]`` spans in a fork-context process pool.

    Each span is parsed by one task; results come back in span order and are merged as
    if one process had read every row: row indices (and the ``results[i]`` of error
    fields) are made global, warnings counts and dispatch labels are added up.
    """

    def __init__(self, raw: bytes, spans: list[tuple[int, int]]) -> None:
        self.raw = raw
        self.spans = spans

    def __call__(self, rows: RowFlattener) -> list[tuple[Any, ...]]:
        # Fork, not spawn: children inherit ``raw`` and ``rows`` through the initializer's
        # arguments without pickling or copying them (each reads only its own span).
        # The children run only Python, jiter and orjson code (no threads, no database,
        # no pandas), so forking from a threaded server is safe for them. Leaving the
        # ``with`` block waits for every child: no process outlives the parse.
        context = multiprocessing.get_context("fork")
        try:
            with ProcessPoolExecutor(
                max_workers=len(self.spans),
                mp_context=context,
                initializer=_adopt_job,
                initargs=(self.raw, rows),
            ) as pool:
                futures: list[Future[tuple[Any, ...]]] = [
                    pool.submit(_parse_span, start, end) for start, end in self.spans
                ]
                payloads = [future.result() for future in futures]
        except Exception as exc:  # a crashed or killed child (BrokenProcessPool), a bug
            raise Fallback(f"parallel parse failed: {exc!r}"[:300]) from None
        if any(payload[0] == "json_error" for payload in payloads):
            # the sequential parser reads the whole text first: its JSON message wins
            raise Fallback("invalid JSON in a chunk")
        out: list[tuple[Any, ...]] = []
        for payload in payloads:
            if payload[0] == "input_error":
                _raise_global(payload, offset=len(out))
            tuples, state = payload[1], payload[2]
            offset = len(out)
            out += tuples if offset == 0 else [(t[0] + offset, *t[1:]) for t in tuples]
            rows.merge(state)
        return out


_RESULTS_INDEX = re.compile(r"^results\[(\d+)\]")


def _raise_global(payload: tuple[Any, ...], offset: int) -> None:
    """Re-raise a child's InputError with its row index counted from the first row."""
    _, field, problem, status, unsupported = payload
    match = _RESULTS_INDEX.match(field)
    if match is not None:
        field = f"results[{int(match.group(1)) + offset}]{field[match.end() :]}"
    if unsupported:
        raise UnsupportedFormat(problem, field, status)
    raise InputError(field, problem, status)


def _adopt_job(raw: bytes, rows: RowFlattener) -> None:
    """Pool initializer, run once in each child."""
    global _CHILD_JOB
    gc.disable()  # the child builds millions of acyclic objects and exits soon after
    _CHILD_JOB = (raw, rows)


def _parse_span(start: int, end: int) -> tuple[Any, ...]:
    """In a child: parse ``[raw[start:end]]``, flatten it and return the outcome as a
    picklable tuple: ("ok", tuples, state) | ("input_error", ...) | ("json_error", msg)."""
    assert _CHILD_JOB is not None, "run only in a pool child set up by _adopt_job"
    raw, rows = _CHILD_JOB
    chunk = b"".join((b"[", memoryview(raw)[start:end], b"]"))  # one copy of the span
    baseline = rows.warnings.counts()  # warnings the parent (or an earlier task) has
    try:
        items = pydantic_core.from_json(chunk, allow_inf_nan=True, cache_strings="all")
    except ValueError as exc:
        return ("json_error", str(exc)[:200])
    del chunk
    _CHILD_KEEP.append(items)
    try:
        tuples = [rows.flatten(i, row) for i, row in enumerate(items)]
    except InputError as exc:
        unsupported = isinstance(exc, UnsupportedFormat)
        return ("input_error", exc.field, exc.problem, exc.status, unsupported)
    _CHILD_KEEP.append(tuples)
    counts, labels, saw_timing = rows.state()
    new = {t: n - baseline.get(t, 0) for t, n in counts.items() if n > baseline.get(t, 0)}
    return ("ok", tuples, (new, labels, saw_timing))
