"""Parallel parsing of big bench_moe reports in forked processes.

Used by :func:`ingest.bench_moe.parse_bench_moe`, which it does not import, for reports of at least
:data:`PARALLEL_MIN_BYTES`; the sequential parser stays the reference and the fallback.
"""

from __future__ import annotations

import gc
import os
import pickle
import re
from typing import TYPE_CHECKING, Any, NoReturn

import pydantic_core

from ingest.errors import InputError, UnsupportedFormat
from ingest.lenient_json import SPLIT_MARKER, LenientDocument, load_document, split_top_array

if TYPE_CHECKING:
    from ingest.bench_moe_rows import RowFlattener

PARALLEL_MIN_BYTES = 64 << 20


class Fallback(Exception):
    """The parallel path cannot decide; parse sequentially instead."""


def worker_count(workers: int | None, size: int) -> int:
    if size < PARALLEL_MIN_BYTES or not hasattr(os, "fork"):
        return 1
    if workers is None:
        workers = min(os.cpu_count() or 1, 4)
    return max(1, workers)


def split_for_workers(raw: bytes, workers: int) -> tuple[LenientDocument, _ForkedRows] | None:
    """Cut a big report for ``workers`` forked processes; None → parse sequentially.

    Returns the parsed skeleton (the document with ``results`` replaced by one marker)
    and the row producer to hand to ``parse_bench_moe_document(doc, meta, flatten=...)``;
    the producer raises :class:`Fallback` when the parallel path cannot decide.

    Why: parsing is CPU-bound (building ~300 Python objects per row dominates), and a
    forked child can also exit without freeing its objects. How: the ``results`` array
    is cut at element boundaries by byte search (:func:`split_top_array`), the parent
    parses the rest of the document (model, environment, rankings...), each child parses
    and flattens one run of rows and sends back the row tuples (pickle over a pipe).
    Correctness does not rest on the byte search: the skeleton and every chunk must
    parse (which proves the cut), else we fall back. A child that meets invalid JSON
    also makes us fall back, so the sequential parser produces the exact message;
    a child's InputError is re-raised with its row index made global. The children only
    run Python, jiter and orjson code (no threads, no database, no pandas) and leave
    with ``os._exit``, so forking from a threaded server is safe for them.
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
    tokens = raw.count(b"Infinity") + raw.count(b"NaN")
    if tokens != skeleton.count(b"Infinity") + skeleton.count(b"NaN"):
        # non-finite floats may sit in the rows: children must use the safe writer
        known = doc.nonfinite_keys
        doc = LenientDocument(doc.value, None if known is None else known | {"results"})
    return doc, _ForkedRows(raw, spans)


class _ForkedRows:
    def __init__(self, raw: bytes, spans: list[tuple[int, int]]) -> None:
        self.raw = raw
        self.spans = spans

    def __call__(self, rows: RowFlattener) -> list[tuple[Any, ...]]:
        children: list[tuple[int, int]] = []
        unread: set[int] = set()
        payloads: list[Any] = []
        try:
            for start, end in self.spans:
                read_fd, write_fd = os.pipe()
                pid = os.fork()
                if pid == 0:  # child: copies its chunk itself, in parallel with the others
                    os.close(read_fd)
                    _child_main(b"[" + self.raw[start:end] + b"]", rows, write_fd)
                os.close(write_fd)
                children.append((pid, read_fd))
                unread.add(read_fd)
            for _, read_fd in children:
                unread.discard(read_fd)
                with os.fdopen(read_fd, "rb") as pipe:
                    data = pipe.read()
                payloads.append(pickle.loads(data) if data else ("crash", "no output"))
        finally:
            for read_fd in unread:  # a child blocked on a full pipe must not hang us
                os.close(read_fd)
            for pid, _ in children:
                os.waitpid(pid, 0)
        out: list[tuple[Any, ...]] = []
        for payload in payloads:
            kind = payload[0]
            if kind == "input_error":
                _, field, problem, status, unsupported = payload
                match = _RESULTS_INDEX.match(field)
                if match is not None:
                    index = int(match.group(1)) + len(out)
                    field = f"results[{index}]{field[match.end() :]}"
                if unsupported:
                    raise UnsupportedFormat(problem, field, status)
                raise InputError(field, problem, status)
            if kind != "ok":
                raise Fallback(str(payload[1:]))
            tuples, state = payload[1], payload[2]
            offset = len(out)
            out += tuples if offset == 0 else [(t[0] + offset, *t[1:]) for t in tuples]
            rows.merge(state)
        return out


_RESULTS_INDEX = re.compile(r"^results\[(\d+)\]")


def _child_main(array: bytes, rows: RowFlattener, write_fd: int) -> NoReturn:
    """Runs in a forked child: parse one JSON array of rows, flatten it, pickle the
    outcome into ``write_fd``, exit without returning."""
    code = 0
    try:
        payload: tuple[Any, ...]
        try:
            gc.disable()
            baseline = rows.warnings.counts()  # run-level warnings the parent already has
            items = pydantic_core.from_json(array, allow_inf_nan=True, cache_strings="all")
            tuples = [rows.flatten(i, row) for i, row in enumerate(items)]
            counts, labels, saw_timing = rows.state()
            new = {t: n - baseline.get(t, 0) for t, n in counts.items() if n > baseline.get(t, 0)}
            payload = ("ok", tuples, (new, labels, saw_timing))
        except InputError as exc:
            unsupported = isinstance(exc, UnsupportedFormat)
            payload = ("input_error", exc.field, exc.problem, exc.status, unsupported)
        except ValueError as exc:
            payload = ("json_error", str(exc)[:200])
        data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
        with os.fdopen(write_fd, "wb") as pipe:
            pipe.write(data)
    except BaseException:
        code = 1
    finally:
        os._exit(code)
