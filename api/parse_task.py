"""The parse pool's task (``ingest.parse_pool`` runs it in its worker processes): parse an
upload and prepare it for the write path (``db.prepared``).

It lives here, above both ``ingest`` and ``db``: ``db`` stores what it is given and does
not parse, so nothing below the HTTP layer depends on the parsers' entry point.
"""

from __future__ import annotations

from typing import Any

from db.prepared import prepare_upload
from ingest.detect import parse_upload
from ingest.errors import InputError, UnsupportedFormat
from ingest.records import UploadMeta


def parse_and_prepare(
    raw: bytes, meta: UploadMeta, filename: str | None, arrow: bool
) -> tuple[Any, ...]:
    """The parse pool's task: parse ``raw`` (:func:`ingest.detect.parse_upload`) and
    prepare it. Returns ``("ok", PreparedUpload)`` or, for a refused report,
    ``("input_error", field, problem, status, unsupported)`` (see :func:`input_error`);
    anything else raises (the pool then parses in the server, which raises it there)."""
    try:
        sweeps = parse_upload(raw, meta, filename)
    except InputError as exc:
        return (
            "input_error",
            exc.field,
            exc.problem,
            exc.status,
            isinstance(exc, UnsupportedFormat),
        )
    return ("ok", prepare_upload(raw, sweeps, arrow=arrow))


def input_error(outcome: tuple[Any, ...]) -> InputError:
    """The error of an ``("input_error", ...)`` outcome of :func:`parse_and_prepare`, of
    the same class and with the same field, problem and status as the parser raised."""
    _, field, problem, status, unsupported = outcome
    if unsupported:
        return UnsupportedFormat(problem, field, status)
    return InputError(field, problem, status)


def warm_up() -> None:
    """Run the task once on a small generated report, so a new worker's first upload
    does not pay for lazy imports and first-use caches (~0.5 s)."""
    from ingest.demo.jsontext import dump_report
    from ingest.demo.report import generate_report

    raw = dump_report(generate_report("kimi_k2", "GB300", "NVFP4", 8, [64], seed=0))
    parse_and_prepare(raw, UploadMeta(), None, True)
    parse_and_prepare(raw, UploadMeta(), None, False)
