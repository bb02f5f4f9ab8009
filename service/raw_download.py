"""What "download the raw upload" of one run serves.

A bench_moe report is one run: its upload's exact bytes. An NVIDIA dashboard upload
(``data.js`` of every model/precision/GPU, or one CSV of all world sizes) holds many
runs -- one per (file, world size), sweep key ``<model>/<precision>/<hw>.csv#ws=<N>``
-- so serving its bytes for one run hands over the whole 865 KB source. For such a run
the download is **the source filtered to that run**: the rows of its file with its
world size, in the source's own columns (the 14-column dashboard CSV layout, which is
how the dashboard publishes each file; keys a row adds are kept after them), values as
written in the source. The file is named for what it holds
(``<model>_<precision>_<hw>_ws<N>.csv``) and can be uploaded again as a dashboard CSV
under a ``<model>/<precision>/<hw>.csv`` path.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass
from typing import Any

from db.store import Store
from ingest.lenient_json import decode_text, load_document
from ingest.nvidia_dashboard import CSV_COLUMNS

DASHBOARD_FORMAT = "nvidia_dashboard"
_SWEEP_KEY = re.compile(r"^(?P<file>[^#]+\.csv)#ws=(?P<ws>\d+)$")
_PAYLOAD = re.compile(r"window\.MOE_DATA\s*=\s*", re.ASCII)


@dataclass(frozen=True)
class RawDownload:
    """The bytes to serve, the file name to save them under and their media type."""

    content: bytes
    filename: str
    media_type: str
    whole_upload: bool  # True: the upload's exact bytes; False: this run's rows of it


def run_raw_download(store: Store, run_id: int) -> RawDownload:
    """The raw download of run ``run_id`` (see the module docstring). A missing run
    raises :class:`db.errors.NotFound`. A dashboard-format run whose rows cannot be
    found again in its upload (a sweep key of another shape) falls back to the whole
    upload, so the download never fails where the old one worked."""
    run = store.get_run(run_id)
    raw = store.raw_upload(run_id)
    key = _SWEEP_KEY.match(str(run.get("sweep_key") or ""))
    if run.get("source_format") == DASHBOARD_FORMAT and key is not None:
        rows = _run_rows(raw.content, key["file"], int(key["ws"]))
        if rows is not None:
            stem = key["file"][: -len(".csv")].replace("/", "_")
            name = _safe(f"{stem}_ws{key['ws']}.csv", run_id)
            return RawDownload(rows.encode("utf-8"), name, "text/csv", whole_upload=False)
    name = _safe(
        (raw.filename or f"run-{run_id}.json").replace("\\", "/").rsplit("/", 1)[-1], run_id
    )
    media = "text/csv" if name.endswith(".csv") else "application/json"
    return RawDownload(raw.content, name, media, whole_upload=True)


def _safe(name: str, run_id: int) -> str:
    """A file name of ``[A-Za-z0-9._-]`` only (safe in a Content-Disposition header)."""
    return "".join(ch for ch in name if ch.isascii() and (ch.isalnum() or ch in "._-")) or (
        f"run-{run_id}"
    )


def _run_rows(content: bytes, file_key: str, ws: int) -> str | None:
    """CSV text of the rows of ``file_key`` with world size ``ws`` in an upload (a
    ``data.js`` / its JSON object, or a dashboard CSV); None when not found."""
    text = decode_text(content)
    head = text.lstrip("\ufeff \t\r\n")
    if head.startswith(("{", "//", "/*", "window.")) or _PAYLOAD.search(text[:4096]):
        return _datajs_rows(text, file_key, ws)
    return _csv_rows(text, ws)


def _csv_rows(text: str, ws: int) -> str | None:
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if not header or "world_size" not in [h.strip() for h in header]:
        return None
    col = [h.strip() for h in header].index("world_size")
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    n = 0
    for values in reader:
        if len(values) > col and values[col].strip() == str(ws):
            writer.writerow(values)
            n += 1
    return out.getvalue() if n else None


def _datajs_rows(text: str, file_key: str, ws: int) -> str | None:
    match = _PAYLOAD.search(text)
    body = text[match.end() :].rstrip() if match else text
    body = body[:-1] if body.endswith(";") else body
    payload = load_document(body).value
    files = payload.get("files") if isinstance(payload, dict) else None
    rows = files.get(file_key) if isinstance(files, dict) else None
    if not isinstance(rows, list):
        return None
    mine = [r for r in rows if isinstance(r, dict) and _is_ws(r.get("world_size"), ws)]
    if not mine:
        return None
    columns = list(CSV_COLUMNS)
    for row in mine:
        columns += [k for k in row if k not in columns]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for row in mine:
        writer.writerow([_cell(name, row.get(name)) for name in columns])
    return out.getvalue()


def _is_ws(value: Any, ws: int) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float) and value == ws


def _cell(name: str, value: Any) -> str:
    """One source value as CSV text, spelled as the dashboard's own CSVs spell it."""
    if value is None:
        return ""
    if isinstance(value, bool):
        if name == "cuda_graph":
            return "on" if value else "off"
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return str(value)
