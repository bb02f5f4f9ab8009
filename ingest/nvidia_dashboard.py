"""NVIDIA's MoE Perf Dashboard data (flattened bench_moe sweeps) → Sweeps.

Two spellings of the same rows (``../shared/data/nvidia_moe_dashboard/README.md``):

* ``data.js``: ``window.MOE_DATA = {"mock", "labels", "index", "files"};`` where
  ``files["<model>/<precision>/<hardware>.csv"]`` is a list of row objects;
* one CSV per file key with the 14 columns of :data:`CSV_COLUMNS`.

Each (file key, world_size) becomes one Sweep with key ``"<file key>#ws=<N>"``: a run
is one process group, and a world size is one process group. Rows are bench_moe's top-3
successful candidates per group, so every field bench_moe has but the dashboard drops
(raw score, iteration stats, requested comm, environment, ...) is null. Provenance
filled from the data README: ``low_precision_combine`` is True (the sweeps ran with
``--use_low_precision_moe_combine``) and ``trtllm_version`` defaults to
:data:`DEFAULT_TRTLLM_VERSION` when the upload metadata does not give one. Model shapes
come from the performance guide's "Covered Models" table (:data:`MODEL_SHAPES`); a
model not in the table gets null shape fields and a warning. ``requested_backend`` is
the backend shown (bench_moe guarantees actual == requested on success rows).
"""

from __future__ import annotations

import csv
import io
import math
import re
from pathlib import PurePath, PurePosixPath
from typing import Any

import orjson

from analysis import columns as C
from ingest.comm import resolve_comm
from ingest.errors import InputError
from ingest.failures import categorize
from ingest.fields import (
    Warnings,
    candidate_frame,
    check_text,
    json_type,
    run_meta_fields,
)
from ingest.hardware import normalize_hardware_label
from ingest.lenient_json import decode_text, dumps, load_document
from ingest.parallel_modes import (
    ParallelModeError,
    attn_family,
    normalize_mode,
    resolve_parallel_mode,
)
from ingest.records import Sweep, UploadMeta

CSV_COLUMNS: tuple[str, ...] = (
    "world_size", "num_tokens", "dispatch", "cuda_graph", "rank", "parallel_mode", "attn",
    "moe_ep_size", "moe_tp_size", "backend", "comm", "score_ms", "num_chunks", "status",
)  # fmt: skip
DEFAULT_TRTLLM_VERSION = "v1.3.0rc26"  # data README / perf guide: the sweeps' version
# model key: (num_experts, top_k, hidden_size, intermediate_size)
MODEL_SHAPES: dict[str, tuple[int, int, int, int]] = {
    "deepseek_v4_pro": (384, 6, 7168, 3072),
    "glm_5": (256, 8, 6144, 2048),
    "kimi_k2": (384, 8, 7168, 2048),
    "kimi_k3": (896, 16, 3584, 3072),
    "qwen3_8": (512, 10, 8192, 2048),
    "deepseek_r1": (256, 8, 7168, 2048),
    "deepseek_v3": (256, 8, 7168, 2048),
}
_INT_FIELDS = ("world_size", "num_tokens", "rank", "moe_ep_size", "moe_tp_size", "num_chunks")
_ATTN_DP = {"D": True, "T": False}
_KEY_PART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$")
_PAYLOAD = re.compile(r"window\.MOE_DATA\s*=\s*", re.ASCII)


def dashboard_csv_identity(path: str | PurePath) -> tuple[str, str, str]:
    """(model, precision, hardware) from a path ending ``<model>/<precision>/<hw>.csv``."""
    parts = PurePosixPath(str(path).replace("\\", "/")).parts
    if len(parts) < 3 or not parts[-1].lower().endswith(".csv"):
        raise InputError(
            "filename",
            f"cannot read model/precision/hardware from {str(path)[:200]!r}; "
            "expected a path ending <model>/<precision>/<hardware>.csv",
        )
    model, precision, hardware = parts[-3], parts[-2], parts[-1][: -len(".csv")]
    for name, value in (("model", model), ("precision", precision), ("hardware", hardware)):
        if not _KEY_PART.match(value):
            raise InputError("filename", f"{name} part {value[:80]!r} is not a plain name")
    return model, precision, hardware


def parse_dashboard_datajs(raw: bytes, meta: UploadMeta) -> list[Sweep]:
    """Parse a dashboard ``data.js`` (or the same object as plain JSON) into Sweeps,
    one per (file key, world_size), in the payload's file order then world size."""
    text = decode_text(raw)
    match = _PAYLOAD.search(text)
    if match is not None:
        body = text[match.end() :].rstrip()
        if body.endswith(";"):
            body = body[:-1]
    else:
        body = text
    payload = load_document(body).value
    if not isinstance(payload, dict):
        raise InputError("MOE_DATA", f"expected an object, got {json_type(payload)}")
    files = payload.get("files")
    if not isinstance(files, dict):
        raise InputError("MOE_DATA.files", f"expected an object, got {json_type(files)}")
    identities = _index_identities(payload.get("index"))
    extra = {k: v for k, v in payload.items() if k not in ("files", "index")}
    synthetic = meta.synthetic or payload.get("mock") is True
    sweeps: list[Sweep] = []
    for file_key, rows in files.items():
        where = f"MOE_DATA.files[{file_key!r}]"
        if not isinstance(rows, list):
            raise InputError(where, f"expected an array, got {json_type(rows)}")
        identity = identities.get(file_key) or _identity_from_key(file_key, where)
        sweeps += _sweeps(file_key, identity, rows, meta, where, extra, synthetic)
    if not sweeps:
        raise InputError("MOE_DATA.files", "no rows")
    return sweeps


def parse_dashboard_csv(
    raw: bytes, meta: UploadMeta, model: str, precision: str, hardware: str
) -> list[Sweep]:
    """Parse one 14-column dashboard CSV into Sweeps, one per world size."""
    text = decode_text(raw)
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        raise InputError("", "empty CSV file") from None
    except csv.Error as exc:
        raise InputError("", f"invalid CSV: {exc}") from None
    header = check_csv_header(",".join(header))
    unknown = [h for h in header if h not in CSV_COLUMNS]
    rows: list[dict[str, Any]] = []
    try:
        for values in reader:
            if not values or all(not v.strip() for v in values):
                continue
            if len(values) != len(header):
                raise InputError(
                    f"rows[{len(rows)}]",
                    f"line {reader.line_num}: {len(values)} fields, header has {len(header)}",
                )
            row: dict[str, Any] = {}
            for name, value in zip(header, values, strict=True):
                row[name] = _csv_value(name, value.strip(), len(rows), reader.line_num)
            rows.append(row)
    except csv.Error as exc:
        raise InputError("", f"invalid CSV at line {reader.line_num}: {exc}") from None
    if not rows:
        raise InputError("rows", "no data rows")
    file_key = f"{model}/{precision}/{hardware}.csv"
    sweeps = _sweeps(file_key, (model, precision, hardware), rows, meta, "rows", {}, meta.synthetic)
    if unknown:
        for sweep in sweeps:
            warnings = orjson.loads(sweep.run["warnings_json"])
            warnings.append(f"unknown CSV columns kept in extra_json: {', '.join(unknown)}")
            sweep.run["warnings_json"] = orjson.dumps(warnings).decode()
    return sweeps


def check_csv_header(line: str) -> list[str]:
    """The header's column names; InputError naming the first missing column."""
    header = [h.strip() for h in next(csv.reader([line.strip()]), [])]
    for column in CSV_COLUMNS:
        if column not in header:
            raise InputError(column, f"missing column {column!r} in the CSV header")
    return header


def _csv_value(name: str, value: str, index: int, line: int) -> Any:
    if value == "":
        return None
    if name in _INT_FIELDS:
        try:
            return int(value)
        except ValueError:
            raise InputError(
                f"rows[{index}].{name}", f"line {line}: expected an integer, got {value[:40]!r}"
            ) from None
    if name == "score_ms":
        try:
            return float(value)
        except ValueError:
            raise InputError(
                f"rows[{index}].{name}", f"line {line}: expected a number, got {value[:40]!r}"
            ) from None
    return value


def _index_identities(index: Any) -> dict[str, tuple[str, str, str]]:
    if index is None:
        return {}
    if not isinstance(index, list):
        raise InputError("MOE_DATA.index", f"expected an array, got {json_type(index)}")
    out: dict[str, tuple[str, str, str]] = {}
    for n, entry in enumerate(index):
        if not isinstance(entry, dict):
            raise InputError(f"MOE_DATA.index[{n}]", f"expected an object, got {json_type(entry)}")
        parts = []
        for name in ("file", "model", "precision", "hardware"):
            value = entry.get(name)
            if not isinstance(value, str):
                raise InputError(
                    f"MOE_DATA.index[{n}].{name}", f"expected a string, got {json_type(value)}"
                )
            parts.append(value)
        out[parts[0]] = (parts[1], parts[2], parts[3])
    return out


def _identity_from_key(file_key: str, where: str) -> tuple[str, str, str]:
    try:
        return dashboard_csv_identity(file_key)
    except InputError as exc:
        raise InputError(where, exc.problem) from None


def _sweeps(
    file_key: str,
    identity: tuple[str, str, str],
    rows: list[Any],
    meta: UploadMeta,
    where: str,
    extra: dict[str, Any],
    synthetic: bool,
) -> list[Sweep]:
    model, precision, hardware_key = identity
    meta_fields = run_meta_fields(meta)
    hardware = normalize_hardware_label(hardware_key, f"{where}.hardware")
    by_ws: dict[int, list[tuple[Any, ...]]] = {}
    warnings_by_ws: dict[int, Warnings] = {}
    dispatch_by_ws: dict[int, set[str]] = {}
    for i, row in enumerate(rows):
        path = f"{where}[{i}]"
        if not isinstance(row, dict):
            raise InputError(path, f"expected an object, got {json_type(row)}")
        ws = _int(row, "world_size", path, minimum=1, required=True)
        assert ws is not None
        warnings = warnings_by_ws.setdefault(ws, Warnings())
        by_ws.setdefault(ws, []).append(_row(i, row, ws, path, warnings))
        label = by_ws[ws][-1][C.CANDIDATE_COLUMNS.index(C.DISPATCH)]
        if label is not None:
            dispatch_by_ws.setdefault(ws, set()).add(label)
    shape = MODEL_SHAPES.get(model)
    sweeps = []
    for ws, tuples in by_ws.items():
        warnings = warnings_by_ws[ws]
        if shape is None:
            warnings.add(f"model {model!r}: shape unknown (not in the perf guide's table)")
        if meta_fields["hardware"] is not None and meta_fields["hardware"] != hardware:
            warnings.add(f"hardware: upload said {meta_fields['hardware']}, file says {hardware}")
        labels = dispatch_by_ws.get(ws, set())
        run: dict[str, Any] = {
            C.SOURCE_FORMAT: "nvidia_dashboard",
            C.MODEL: model,
            C.NUM_EXPERTS: shape[0] if shape else None,
            C.TOP_K: shape[1] if shape else None,
            C.HIDDEN_SIZE: shape[2] if shape else None,
            C.INTERMEDIATE_SIZE: shape[3] if shape else None,
            C.QUANT: precision,
            C.HARDWARE: hardware,
            C.WORLD_SIZE: ws,
            C.TRTLLM_VERSION: meta_fields["trtllm_version"] or DEFAULT_TRTLLM_VERSION,
            C.TRTLLM_COMMIT: meta_fields["trtllm_commit"],
            C.RUN_DATE: meta_fields["run_date"],
            C.SYNTHETIC: synthetic,
            "device_name": None,
            "sm": None,
            "cuda_version": None,
            "torch_version": None,
            "driver_version": None,
            "routing_method": None,
            "ci_url": meta_fields["ci_url"],
            "notes": meta_fields["notes"],
            "dispatch": meta_fields["dispatch"]
            or (next(iter(labels)) if len(labels) == 1 else None),
            "model_json": None,
            "environment_json": None,
            "search_json": None,
            "base_config_json": None,
            "rankings_json": None,
            "extra_json": dumps(extra) if extra else None,
            "warnings_json": warnings.to_json(),
        }
        sweeps.append(Sweep(key=f"{file_key}#ws={ws}", run=run, candidates=candidate_frame(tuples)))
    return sweeps


def _row(i: int, row: dict[str, Any], ws: int, path: str, warnings: Warnings) -> tuple[Any, ...]:
    num_tokens = _int(row, "num_tokens", path, minimum=1, required=True)
    rank = _int(row, "rank", path, minimum=1)
    ep = _int(row, "moe_ep_size", path, minimum=1)
    tp = _int(row, "moe_tp_size", path, minimum=1)
    num_chunks = _int(row, "num_chunks", path, minimum=0)
    mode_raw = check_text(row.get("parallel_mode"), f"{path}.parallel_mode", 64)
    if mode_raw is None:
        raise InputError(f"{path}.parallel_mode", "missing")
    try:
        mode = normalize_mode(mode_raw)
    except ParallelModeError:
        raise InputError(f"{path}.parallel_mode", f"unknown parallel mode {mode_raw!r}") from None
    attn = check_text(row.get("attn"), f"{path}.attn", 1)
    if attn is not None and attn not in ("D", "T", "?"):
        raise InputError(f"{path}.attn", f"expected D, T or ?, got {attn!r}")
    family = attn_family(mode)
    if attn is not None and family != "?" and attn != family:
        warnings.add(f"attn {attn!r} disagrees with parallel_mode {mode}; using the mode")
    dp_hint = _ATTN_DP.get(attn or "")
    d_ep: int | None
    d_tp: int | None
    d_dp: bool | None
    try:
        d_ep, d_tp, d_dp = resolve_parallel_mode(mode, ws, ep, tp, dp_hint)
    except ParallelModeError as exc:
        d_ep, d_tp, d_dp = None, None, dp_hint
        warnings.add(f"parallel_mode {mode}: {exc}")
    disagrees = (ep is not None and ep != d_ep) or (tp is not None and tp != d_tp)
    if d_ep is not None and disagrees:
        warnings.add(f"moe_ep_size/moe_tp_size disagree with parallel_mode {mode}; kept as given")
    ep = ep if ep is not None else d_ep
    tp = tp if tp is not None else d_tp
    backend = check_text(row.get("backend"), f"{path}.backend", 64)
    comm_actual = check_text(row.get("comm"), f"{path}.comm", 64)
    comm, warning = resolve_comm(None, comm_actual)
    if warning:
        warnings.add(warning.replace("actual_config.comm_method", "comm"))
    cuda_graph = _cuda_graph(row.get("cuda_graph"), path)
    dispatch = check_text(row.get("dispatch"), f"{path}.dispatch", 64)
    status = check_text(row.get("status"), f"{path}.status", 16)
    if status not in ("success", "skipped", "failed"):
        raise InputError(
            f"{path}.status", f"expected one of success, skipped, failed; got {status!r}"
        )
    score = row.get("score_ms")
    if score is not None:
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            raise InputError(f"{path}.score_ms", f"expected a number, got {json_type(score)}")
        score = float(score)
    if status == "success" and (score is None or not (math.isfinite(score) and score >= 0)):
        raise InputError(
            f"{path}.score_ms", f"must be a finite number ≥ 0 on a success row, got {score}"
        )
    extra = {k: v for k, v in row.items() if k not in CSV_COLUMNS}
    return (
        i, num_tokens, None, mode, d_dp, family if family != "?" else (attn or "?"),
        ep, tp, backend, backend, comm, None, comm_actual, cuda_graph, True, dispatch,
        status, categorize(status, None), None, score, None, None, None,
        None, None, None, None, None, None, None, None, None, None, num_chunks, None, None,
        None, rank, None, dumps(extra) if extra else None,
    )  # fmt: skip


def _int(
    row: dict[str, Any], key: str, path: str, minimum: int, required: bool = False
) -> int | None:
    value = row.get(key)
    if value is None:
        if required:
            raise InputError(f"{path}.{key}", "missing")
        return None
    if type(value) is not int:
        raise InputError(f"{path}.{key}", f"expected an integer, got {json_type(value)}")
    if not minimum <= value < 1 << 62:
        raise InputError(f"{path}.{key}", f"must be an integer ≥ {minimum}, got {value}")
    return value


def _cuda_graph(value: Any, path: str) -> bool | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if value == "on" or value == "off":
        return bool(value == "on")
    shown = repr(value)[:40] if isinstance(value, str) else json_type(value)
    raise InputError(f"{path}.cuda_graph", f'expected "on" or "off", got {shown}')


def is_dashboard_payload(value: Any) -> bool:
    """True for a decoded MOE_DATA object (``files`` + ``index``/``labels``)."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("files"), dict)
        and ("index" in value or "labels" in value)
    )


__all__ = [
    "CSV_COLUMNS",
    "check_csv_header",
    "DEFAULT_TRTLLM_VERSION",
    "MODEL_SHAPES",
    "dashboard_csv_identity",
    "is_dashboard_payload",
    "parse_dashboard_csv",
    "parse_dashboard_datajs",
]
