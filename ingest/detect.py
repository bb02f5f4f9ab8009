"""Recognise an upload's format and hand it to the right parser.

Formats: a bench_moe JSON report (current or early-package; pre-merge schema_version 2
is recognised and refused by :mod:`ingest.legacy`), NVIDIA's dashboard ``data.js`` (or
its object as plain JSON), and a dashboard CSV (its model/precision/hardware come from
the file path). Anything else raises :class:`UnsupportedFormat`: status 415 for bytes
that are neither JSON, JavaScript nor CSV text, 422 for JSON that is not a known report;
an empty body is a plain InputError with status 400 (nothing to recognise).
"""

from __future__ import annotations

from pathlib import Path

from ingest.bench_moe import parse_bench_moe, parse_bench_moe_document
from ingest.errors import InputError, UnsupportedFormat
from ingest.fields import json_type
from ingest.lenient_json import load_document
from ingest.nvidia_dashboard import (
    CSV_COLUMNS,
    check_csv_header,
    dashboard_csv_identity,
    is_dashboard_payload,
    parse_dashboard_csv,
    parse_dashboard_datajs,
)
from ingest.records import Sweep, UploadMeta

_SUPPORTED = "a bench_moe JSON report, the dashboard data.js, or a dashboard CSV"
_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"PK\x03\x04", "a ZIP/xlsx file (the .analysis.xlsx workbook is lossy; upload the JSON)"),
    (b"\x1f\x8b", "a gzip file (decompress it first)"),
    (b"\x28\xb5\x2f\xfd", "a zstd file (decompress it first)"),
    (b"%PDF", "a PDF file"),
    (b"\x89PNG", "a PNG image"),
)  # fmt: skip


def parse_upload(raw: bytes, meta: UploadMeta, filename: str | None = None) -> list[Sweep]:
    """Sniff the format of ``raw`` and parse it into Sweeps.

    ``filename`` (or ``meta.filename``) is needed only for a dashboard CSV, whose
    identity is its path ``.../<model>/<precision>/<hardware>.csv``.
    """
    name = filename or meta.filename
    head = raw[:4096]
    if not raw or raw.isspace():  # isspace, not strip(): strip would copy a big body
        raise InputError("", f"empty upload; expected {_SUPPORTED}", 400)
    for magic, what in _MAGIC:
        if head.startswith(magic):
            raise UnsupportedFormat(f"this is {what}; expected {_SUPPORTED}", status=415)
    text_head = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text_head[:1] in (b"{", b"["):
        return _parse_json(raw, meta)
    if text_head.startswith((b"//", b"/*", b"window.")) or b"window.MOE_DATA" in head:
        return parse_dashboard_datajs(raw, meta)
    first_line = text_head.split(b"\n", 1)[0]
    if b"," in first_line and b"\x00" not in head:
        columns = {c.strip() for c in first_line.decode("utf-8", "replace").split(",")}
        if len(columns & set(CSV_COLUMNS)) >= 3:
            if not name:
                check_csv_header(first_line.decode("utf-8", "replace"))
                raise InputError(
                    "filename",
                    "a dashboard CSV needs its path (<model>/<precision>/<hardware>.csv) "
                    "to know its model, precision and hardware",
                )
            model, precision, hardware = dashboard_csv_identity(name)
            return parse_dashboard_csv(raw, meta, model, precision, hardware)
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise UnsupportedFormat("file is UTF-16/UTF-32 encoded; save it as UTF-8", status=415)
    raise UnsupportedFormat(f"unrecognised content; expected {_SUPPORTED}", status=415)


def parse_path(path: Path, meta: UploadMeta) -> list[Sweep]:
    """Parse a file on disk (CLI): like :func:`parse_upload`, with the path as name."""
    raw = Path(path).read_bytes()
    if Path(path).suffix.lower() == ".csv":
        model, precision, hardware = dashboard_csv_identity(path)
        return parse_dashboard_csv(raw, meta, model, precision, hardware)
    return parse_upload(raw, meta, str(path))


def _parse_json(raw: bytes, meta: UploadMeta) -> list[Sweep]:
    if b'"benchmark"' in raw[:4096]:
        # bench_moe writes "benchmark" first; this entry point may parse big reports
        # in parallel (and re-checks everything, legacy formats included)
        return parse_bench_moe(raw, meta)
    doc = load_document(raw, unique_keys=True)
    value = doc.value
    if isinstance(value, dict):
        if "benchmark" in value or "results" in value or "schema_version" in value:
            return parse_bench_moe_document(doc, meta)
        if is_dashboard_payload(value):
            return parse_dashboard_datajs(raw, meta)
        keys = ", ".join(sorted(str(k) for k in value)[:8]) or "none"
        raise UnsupportedFormat(
            f"JSON object is not a known report (top-level keys: {keys}); expected {_SUPPORTED}",
            status=422,
        )
    raise UnsupportedFormat(
        f"top-level JSON {json_type(value)} is not a known report; expected {_SUPPORTED}",
        status=422,
    )
