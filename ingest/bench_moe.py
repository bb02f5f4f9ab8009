"""Parse a TensorRT-LLM ``bench_moe`` JSON report into one :class:`ingest.records.Sweep`.

Format: ``/work/shared/reference/bench_moe_schema.md`` (§1 top level, §2 rows). One
report is one process group, so it becomes exactly one Sweep with key "".

Decisions worth knowing:

* Lenient JSON (bare ``Infinity``/``NaN``), see :mod:`ingest.lenient_json`. The
  ``*_json`` run fields and ``per_rank_json``/``extra_json`` use the same dialect
  (non-finite floats as bare tokens); read them with ``lenient_json.loads``.
* Unknown keys are never fatal: top-level ones go to the run's ``extra_json``; unknown
  row keys, and unknown keys inside the row blocks we read (``workload``,
  ``requested_config``, ``actual_config``, ``instrumentation``, ``latency_ms``), go to
  the row's ``extra_json`` (keyed ``"<block>.<key>"`` for the latter); every distinct
  unknown key is named once in ``warnings_json``. Non-empty ``kernel_breakdown``,
  ``phase_times_ms`` and ``overlap`` blocks (not columns today) are kept in
  ``extra_json`` too. Raw per-iteration samples are not stored; ``n_iters`` is
  inferred from them.
* Missing optional keys are null. Required: top-level ``benchmark`` (= "bench_moe"),
  ``environment`` (with a positive ``world_size``), ``model``, ``results`` (non-empty);
  per row ``workload.num_tokens`` (positive int), ``requested_config`` with a
  ``parallel_mode`` string, ``status`` (success/skipped/failed). A success row needs a
  finite, non-negative ``latency_ms.score`` and a resolvable parallel mode. A
  ``per_rank_num_tokens`` whose length is not the world size is a warning.
* Speed: one tight pass turns each row into a tuple in ``CANDIDATE_COLUMNS`` order,
  then one DataFrame is built column by column. Building the Python objects of the
  parsed JSON dominates (a 100k-row report is ~30M objects), so reports of at least
  :data:`PARALLEL_MIN_BYTES` are cut into one run of rows per CPU and parsed by a
  fork-based process pool (:func:`ingest.parallel_parse.split_for_workers`), with the
  sequential parser as the fallback and the reference (same frame, same run dict).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from analysis import columns as C
from ingest import legacy
from ingest.bench_moe_rows import ROW_KEYS, RowFlattener, dispatch_label
from ingest.errors import InputError, UnsupportedFormat
from ingest.fields import (
    Warnings,
    candidate_frame,
    check_label,
    check_text,
    check_text_fields,
    expect_int,
    json_type,
    run_meta_fields,
)
from ingest.hardware import infer_hardware
from ingest.lenient_json import (
    SPLIT_MARKER,
    LenientDocument,
    dumps,
    gc_paused,
    load_document,
)
from ingest.parallel_parse import Fallback, split_for_workers, worker_count
from ingest.records import Sweep, UploadMeta

__all__ = [
    "ROW_KEYS",
    "TOP_KEYS",
    "FlattenRows",
    "dispatch_label",
    "parse_bench_moe",
    "parse_bench_moe_document",
    "parse_parallel",
]

# The longest free-text value of the environment block (a hostname, a version string)
MAX_ENV_TEXT = 1024

TOP_KEYS = ("benchmark", "environment", "model", "search", "base_config", "results", "rankings")
FlattenRows = Callable[[RowFlattener], list[tuple[Any, ...]]]


def parse_bench_moe(raw: bytes, meta: UploadMeta, *, workers: int | None = None) -> list[Sweep]:
    """Parse a bench_moe JSON report (bytes) into ``[Sweep(key="", ...)]``.

    Raises InputError (field path, problem, HTTP status) for unusable input and
    UnsupportedFormat for a pre-merge (schema_version 2) report. ``workers`` > 1 lets
    reports of at least :data:`PARALLEL_MIN_BYTES` be parsed by that many pool
    processes (see :func:`ingest.parallel_parse.split_for_workers`); None means one per
    CPU (at most 4), 1 disables it. The result is identical either way.
    """
    count = worker_count(workers, len(raw))
    if count > 1:
        sweeps = parse_parallel(raw, meta, count)
        if sweeps is not None:
            return sweeps
    return parse_bench_moe_document(load_document(raw, unique_keys=True), meta)


def parse_parallel(raw: bytes, meta: UploadMeta, workers: int) -> list[Sweep] | None:
    """Parse with ``workers`` pool processes (:func:`ingest.parallel_parse.split_for_workers`);
    None when the parallel path cannot decide and the sequential parser must answer."""
    split = split_for_workers(raw, workers)
    if split is None:
        return None
    doc, flatten = split
    try:
        return parse_bench_moe_document(doc, meta, flatten=flatten)
    except Fallback:
        return None


def parse_bench_moe_document(
    doc: LenientDocument, meta: UploadMeta, flatten: FlattenRows | None = None
) -> list[Sweep]:
    """Like :func:`parse_bench_moe` for an already parsed document.

    ``flatten`` (internal) produces the row tuples when ``doc`` is a skeleton whose
    ``results`` were split off for parallel parsing.
    """
    top = doc.value
    if not isinstance(top, dict):
        raise UnsupportedFormat(
            f"expected a JSON object (a bench_moe report), got {json_type(top)}", status=422
        )
    if legacy.is_schema_v2(top):
        legacy.reject_schema_v2(top)
    if "benchmark" not in top:
        raise InputError("benchmark", 'missing (a bench_moe report has benchmark: "bench_moe")')
    if top["benchmark"] != "bench_moe":
        got = top["benchmark"]
        shown = repr(got)[:80] if isinstance(got, str) else json_type(got)
        raise InputError("benchmark", f'expected "bench_moe", got {shown}')
    warnings = Warnings()
    meta_fields = run_meta_fields(meta)
    env = _top_block(top, "environment", required=True)
    model = _top_block(top, "model", required=True)
    _top_block(top, "search", required=False)
    _top_block(top, "base_config", required=False)
    if "results" not in top:
        raise InputError("results", "missing")
    results = top["results"]
    if not isinstance(results, list):
        raise InputError("results", f"expected an array, got {json_type(results)}")
    if not results:
        raise InputError("results", "no candidates")
    if flatten is None and results and results[0] == SPLIT_MARKER:
        raise InputError("results[0]", "expected an object, got string")
    rankings = top.get("rankings")
    if rankings is not None and not isinstance(rankings, list):
        raise InputError("rankings", f"expected an array, got {json_type(rankings)}")

    world_size = expect_int(env.get("world_size"), "environment.world_size", minimum=1)
    if world_size is None:
        raise InputError("environment.world_size", "missing (needed to place every row)")
    if world_size > 1 << 20:
        raise InputError("environment.world_size", f"{world_size} is not a plausible world size")
    run = _run_fields(top, env, model, world_size, meta, meta_fields, warnings, doc)
    rows = RowFlattener(world_size, meta.dispatch, warnings, doc.may_have_nonfinite("results"))
    with gc_paused():
        if flatten is None:
            flattened = [rows.flatten(i, row) for i, row in enumerate(results)]
        else:
            flattened = flatten(rows)
        candidates = candidate_frame(flattened)
    # early package version: no row has raw_data or latency_ms.raw_score
    run[C.SOURCE_FORMAT] = "bench_moe" if rows.saw_timing else "bench_moe_legacy"
    run["dispatch"] = meta_fields["dispatch"] or (
        next(iter(rows.dispatch_labels)) if len(rows.dispatch_labels) == 1 else None
    )
    unknown_top = {k: v for k, v in top.items() if k not in TOP_KEYS}
    for key in unknown_top:
        warnings.add(f"{key}: unknown top-level key kept in extra_json")
    run["extra_json"] = dumps(unknown_top) if unknown_top else None
    run["warnings_json"] = warnings.to_json()
    return [Sweep(key="", run=run, candidates=candidates)]


def _top_block(top: dict[str, Any], key: str, *, required: bool) -> dict[str, Any]:
    value = top.get(key)
    if value is None:
        if required:
            raise InputError(key, "missing" if key not in top else "expected an object, got null")
        return {}
    if not isinstance(value, dict):
        raise InputError(key, f"expected an object, got {json_type(value)}")
    return value


def _run_fields(
    top: dict[str, Any],
    env: dict[str, Any],
    model: dict[str, Any],
    world_size: int,
    meta: UploadMeta,
    meta_fields: dict[str, Any],
    warnings: Warnings,
    doc: LenientDocument,
) -> dict[str, Any]:
    # free-text environment facts (hostname, versions …) are stored with the run: bounded
    check_text_fields(env, "environment", MAX_ENV_TEXT)
    device_name = check_text(env.get("device_name"), "environment.device_name", 256)
    sm = expect_int(env.get("sm"), "environment.sm", minimum=0)
    per_node = expect_int(env.get("world_size_per_node"), "environment.world_size_per_node")
    inferred = infer_hardware(device_name, sm, per_node)
    hardware = meta_fields["hardware"]
    if hardware is None:
        if inferred is None:
            raise InputError(
                "hardware",
                f"cannot infer the system from device_name '{device_name}'; pass hardware=…",
                422,
            )
        hardware = inferred
    elif inferred is not None and inferred != hardware:
        warnings.add(
            f"hardware: given as {hardware} but device_name '{device_name}' suggests {inferred}"
        )
    env_commit = check_text(env.get("trtllm_commit"), "environment.trtllm_commit", 64)
    commit = meta_fields["trtllm_commit"]
    if env_commit and commit:
        a, b = env_commit.lower(), commit.lower()
        if not (a.startswith(b) or b.startswith(a)):
            raise InputError(
                "trtllm_commit",
                f"given as '{commit}' but the report says '{env_commit}'",
                422,
            )
        commit = env_commit if len(env_commit) >= len(commit) else commit
    commit = commit or env_commit
    quant = check_label(model.get("quant_algo"), "model.quant_algo", 64)
    _require_shape(model)
    block_dumps = {
        name: (dumps(top[name], nonfinite=doc.may_have_nonfinite(name)) if name in top else None)
        for name in ("model", "environment", "search", "base_config", "rankings")
    }
    return {
        C.MODEL: check_label(model.get("name"), "model.name", 128),
        C.NUM_EXPERTS: expect_int(model.get("num_experts"), "model.num_experts", minimum=1),
        C.TOP_K: expect_int(model.get("top_k"), "model.top_k", minimum=1),
        C.HIDDEN_SIZE: expect_int(model.get("hidden_size"), "model.hidden_size", minimum=1),
        C.INTERMEDIATE_SIZE: expect_int(
            model.get("intermediate_size"), "model.intermediate_size", minimum=1
        ),
        C.QUANT: quant if quant is not None else "BF16",
        C.HARDWARE: hardware,
        C.WORLD_SIZE: world_size,
        C.TRTLLM_VERSION: meta_fields["trtllm_version"],
        C.TRTLLM_COMMIT: commit,
        C.RUN_DATE: meta_fields["run_date"],
        C.SYNTHETIC: meta_fields["synthetic"],
        "device_name": device_name,
        "sm": sm,
        "cuda_version": _text_or_number(env.get("cuda_version"), "environment.cuda_version"),
        "torch_version": _text_or_number(env.get("torch_version"), "environment.torch_version"),
        "driver_version": _text_or_number(env.get("driver_version"), "environment.driver_version"),
        "routing_method": check_text(model.get("routing_method"), "model.routing_method", 64),
        "ci_url": meta_fields["ci_url"],
        "notes": meta_fields["notes"],
        "model_json": block_dumps["model"],
        "environment_json": block_dumps["environment"],
        "search_json": block_dumps["search"],
        "base_config_json": block_dumps["base_config"],
        "rankings_json": block_dumps["rankings"],
    }


# Without these the analysis cannot place a run (activated tokens per rank needs top_k
# and num_experts, dispatch volume hidden_size): a report lacking one is refused, not
# stored to silently vanish from those views.
REQUIRED_MODEL_FIELDS = ("num_experts", "top_k", "hidden_size")


def _require_shape(model: dict[str, Any]) -> None:
    missing = [k for k in REQUIRED_MODEL_FIELDS if model.get(k) is None]
    if missing:
        names = ", ".join(f"model.{k}" for k in missing)
        raise InputError(
            f"model.{missing[0]}",
            f"missing {names}: required (with num_experts, top_k and hidden_size the "
            "report's runs can be placed by activated tokens per rank and dispatch volume)",
        )


def _text_or_number(value: Any, field: str) -> str | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return check_text(value, field, 128)
