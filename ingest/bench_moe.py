"""Parse a TensorRT-LLM ``bench_moe`` JSON report into one :class:`db.records.Sweep`.

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
  :data:`PARALLEL_MIN_BYTES` are cut into one run of rows per CPU and parsed by forked
  processes (:func:`parse_forked`), with the sequential parser as the fallback and
  the reference (same frame, same run dict).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import orjson

from analysis import columns as C
from db.records import Sweep, UploadMeta
from ingest import legacy
from ingest.comm import resolve_comm
from ingest.errors import InputError, UnsupportedFormat
from ingest.failures import categorize
from ingest.fields import (
    Warnings,
    _shown,
    candidate_frame,
    check_text,
    expect_int,
    json_type,
    run_meta_fields,
)
from ingest.forked import parse_forked, worker_count
from ingest.hardware import infer_hardware
from ingest.lenient_json import (
    SPLIT_MARKER,
    LenientDocument,
    dumps,
    gc_paused,
    load_document,
)
from ingest.parallel import ParallelModeError, attn_family, normalize_mode, resolve_layout

TOP_KEYS = ("benchmark", "environment", "model", "search", "base_config", "results", "rankings")
ROW_KEYS = frozenset(
    (
        "workload", "requested_config", "actual_config", "status", "skip_reason",
        "status_per_rank", "instrumentation", "latency_ms", "phase_times_ms", "overlap",
        "bottleneck", "kernel_breakdown", "raw_data", "routing_control",
    )
)  # fmt: skip
_BLOCK_KEYS: dict[str, frozenset[str]] = {
    "workload": frozenset(("num_tokens", "per_rank_num_tokens", "routing_control")),
    "requested_config": frozenset(
        (
            "backend", "parallel_mode", "moe_ep_size", "moe_tp_size", "enable_attention_dp",
            "comm_method", "cuda_graph", "use_low_precision_moe_combine",
        )
    ),
    "actual_config": frozenset(
        (
            "backend", "comm_method", "comm_fallback_reason", "scheduler_kind", "moe_ep_size",
            "moe_tp_size", "enable_attention_dp", "num_chunks",
        )
    ),
    "instrumentation": frozenset(
        (
            "level", "cuda_graph", "cupti_available", "nsys_capture", "phase_timing_available",
            "kernel_breakdown_available", "autotune_status", "latency_source", "input_seed",
            "post_run_cuda_poison_reason",
        )
    ),
    "latency_ms": frozenset(
        (
            "score", "score_type", "raw_score", "raw_score_type", "iter_max_stats",
            "iter_max_outliers", "per_rank",
        )
    ),
}  # fmt: skip
_STATUSES = frozenset(("success", "skipped", "failed"))
_EMPTY: dict[str, Any] = {}
_MISSING: Any = object()
_LEGACY_ROW_KEYS = frozenset(("latency_us", "phase_times_us", "overlap_us"))
RowFlattener = Callable[["_Rows"], list[tuple[Any, ...]]]
_DEFAULT_BLOCKS: tuple[tuple[str, Any], ...] = (
    ("kernel_breakdown", {"moe_forward_kernels": [], "other_kernels": []}),
    ("phase_times_ms", {"agg": {}, "per_rank": {}}),
    ("overlap", {"overlap_ms": None, "overlap_ratio": None}),
)
_MAX_NUM_TOKENS = 1 << 40


def parse_bench_moe(raw: bytes, meta: UploadMeta, *, workers: int | None = None) -> list[Sweep]:
    """Parse a bench_moe JSON report (bytes) into ``[Sweep(key="", ...)]``.

    Raises InputError (field path, problem, HTTP status) for unusable input and
    UnsupportedFormat for a pre-merge (schema_version 2) report. ``workers`` > 1 lets
    reports of at least :data:`PARALLEL_MIN_BYTES` be parsed by that many forked
    processes (see :func:`parse_forked`); None means one per CPU (at most 4),
    1 disables it. The result is identical either way.
    """
    count = worker_count(workers, len(raw))
    if count > 1:
        sweeps = parse_forked(raw, meta, count)
        if sweeps is not None:
            return sweeps
    return parse_bench_moe_document(load_document(raw), meta)


def parse_bench_moe_document(
    doc: LenientDocument, meta: UploadMeta, flatten: RowFlattener | None = None
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
    rows = _Rows(world_size, meta.dispatch, warnings, doc.may_have_nonfinite("results"))
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
    quant = check_text(model.get("quant_algo"), "model.quant_algo", 64)
    block_dumps = {
        name: (dumps(top[name], nonfinite=doc.may_have_nonfinite(name)) if name in top else None)
        for name in ("model", "environment", "search", "base_config", "rankings")
    }
    return {
        C.MODEL: check_text(model.get("name"), "model.name", 128),
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


def _text_or_number(value: Any, field: str) -> str | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return check_text(value, field, 128)


def _err(i: int, path: str, expected: str, value: Any) -> InputError:
    return InputError(f"results[{i}].{path}", f"expected {expected}, got {json_type(value)}")


class _Rows:
    """Flattens rows into tuples in CANDIDATE_COLUMNS order, with per-run caches."""

    def __init__(
        self, world_size: int, dispatch: str | None, warnings: Warnings, nonfinite: bool
    ) -> None:
        self.world_size = world_size
        self.dispatch_override = dispatch
        self.warnings = warnings
        self.nonfinite = nonfinite
        self.dispatch_labels: set[str] = set()
        self._modes: dict[Any, str | None] = {}
        self._comm: dict[tuple[Any, Any], tuple[str | None, str | None]] = {}
        self._texts: set[Any] = set()
        self._dispatch: dict[tuple[Any, ...], str | None] = {}
        self._categories: dict[tuple[Any, ...], Any] = {}
        self.saw_timing = False  # any row with raw_data / latency_ms.raw_score

    def state(self) -> tuple[dict[str, int], set[str], bool]:
        """What flattening learned, for merging results of several processes."""
        return self.warnings.counts(), self.dispatch_labels, self.saw_timing

    def merge(self, state: tuple[dict[str, int], set[str], bool]) -> None:
        counts, labels, saw_timing = state
        for text, n in counts.items():
            self.warnings.add(text, n)
        self.dispatch_labels |= labels
        self.saw_timing = self.saw_timing or saw_timing

    def flatten(self, i: int, row: Any) -> tuple[Any, ...]:
        if type(row) is not dict:
            raise InputError(f"results[{i}]", f"expected an object, got {json_type(row)}")
        extra: dict[str, Any] = {}
        if not self.saw_timing and "raw_data" in row:
            self.saw_timing = True
        if len(row) != 14 or not ROW_KEYS.issuperset(row):
            for key in row:
                if key in _LEGACY_ROW_KEYS:
                    legacy.reject_schema_v2({})
                if key not in ROW_KEYS:
                    extra[key] = row[key]
                    self.warnings.add(f"results[*].{key}: unknown row key kept in extra_json")
        wl = self._block(i, row, "workload", extra)
        req = self._block(i, row, "requested_config", extra)
        act = self._block(i, row, "actual_config", extra)
        ins = self._block(i, row, "instrumentation", extra)
        lat = self._block(i, row, "latency_ms", extra)

        status = row.get("status")
        if type(status) is not str:
            if status is None and "status" not in row:
                raise InputError(f"results[{i}].status", "missing")
            raise _err(i, "status", "a string", status)
        if status not in _STATUSES:
            raise InputError(
                f"results[{i}].status",
                f"expected one of success, skipped, failed; got {status[:40]!r}",
            )
        skip_reason = row.get("skip_reason")
        if skip_reason is not None and type(skip_reason) is not str:
            raise _err(i, "skip_reason", "a string or null", skip_reason)

        num_tokens = wl.get("num_tokens")
        if type(num_tokens) is not int:
            if num_tokens is None and "num_tokens" not in wl:
                raise InputError(f"results[{i}].workload.num_tokens", "missing")
            raise _err(i, "workload.num_tokens", "an integer", num_tokens)
        if not 0 < num_tokens <= _MAX_NUM_TOKENS:
            raise InputError(
                f"results[{i}].workload.num_tokens",
                f"must be a positive integer ≤ 2**40, got {_shown(num_tokens)}",
            )
        prnt = wl.get("per_rank_num_tokens")
        prnt_json = None
        if prnt is not None:
            if type(prnt) is not list or not all(
                type(x) is int and 0 <= x <= _MAX_NUM_TOKENS for x in prnt
            ):
                bad = (
                    prnt
                    if type(prnt) is not list
                    else next(
                        (x for x in prnt if not (type(x) is int and 0 <= x <= _MAX_NUM_TOKENS)),
                        None,
                    )
                )
                raise InputError(
                    f"results[{i}].workload.per_rank_num_tokens",
                    f"expected an array of integers ≥ 0, got {json_type(prnt)}"
                    + (f" containing {_shown(bad)}" if type(prnt) is list else ""),
                )
            if len(prnt) != self.world_size:
                self.warnings.add(
                    "results[*].workload.per_rank_num_tokens: length differs from world_size"
                )
            prnt_json = orjson.dumps(prnt).decode()

        mode_raw = req.get("parallel_mode")
        mode = self._mode(i, mode_raw)
        if mode is None:
            self.warnings.add(f"requested_config.parallel_mode: unknown mode {_shown(mode_raw)}")
        r_ep = self._opt_int(i, req, "moe_ep_size", "requested_config")
        r_tp = self._opt_int(i, req, "moe_tp_size", "requested_config")
        r_dp = self._opt_bool(i, req, "enable_attention_dp", "requested_config")
        a_ep = self._opt_int(i, act, "moe_ep_size", "actual_config")
        a_tp = self._opt_int(i, act, "moe_tp_size", "actual_config")
        a_dp = self._opt_bool(i, act, "enable_attention_dp", "actual_config")
        ep, tp, dp = resolve_layout(
            mode or "", self.world_size, (r_ep, r_tp, r_dp), (a_ep, a_tp, a_dp)
        )
        if status == "success" and (mode is None or ep is None or tp is None):
            raise InputError(
                f"results[{i}].requested_config.parallel_mode",
                f"unknown parallel mode {_shown(mode_raw)} on a success row"
                if mode is None
                else f"cannot resolve {mode} at world_size={self.world_size} on a success row",
            )

        req_backend = self._text(i, req, "backend", "requested_config")
        act_backend = self._text(i, act, "backend", "actual_config")
        req_comm = self._text(i, req, "comm_method", "requested_config")
        act_comm = self._text(i, act, "comm_method", "actual_config")
        comm = self._comm.get((req_comm, act_comm))
        if comm is None:
            comm = self._comm[(req_comm, act_comm)] = resolve_comm(req_comm, act_comm)
        if comm[1] is not None:  # counted per row, so counts add up across processes
            self.warnings.add(comm[1])
        cuda_graph = self._opt_bool(i, req, "cuda_graph", "requested_config")
        lpmc = self._opt_bool(i, req, "use_low_precision_moe_combine", "requested_config")
        scheduler_kind = self._text(i, act, "scheduler_kind", "actual_config")
        num_chunks = self._opt_int(i, act, "num_chunks", "actual_config")
        autotune = ins.get("autotune_status")
        if autotune is not None and type(autotune) is not str:
            raise _err(i, "instrumentation.autotune_status", "a string or null", autotune)
        bottleneck = row.get("bottleneck")
        if bottleneck is not None and type(bottleneck) is not str:
            raise _err(i, "bottleneck", "a string or null", bottleneck)

        score = self._num(i, lat, "score")
        raw_score = self._num(i, lat, "raw_score")
        if not self.saw_timing and "raw_score" in lat:
            self.saw_timing = True
        if status == "success":
            if score is None:
                raise InputError(f"results[{i}].latency_ms.score", "missing on a success row")
            if not (score >= 0.0 and score != math.inf):
                raise InputError(
                    f"results[{i}].latency_ms.score",
                    f"must be a finite number ≥ 0 on a success row, got {score}",
                )
        score_type = self._text(i, lat, "score_type", "latency_ms")
        stats = lat.get("iter_max_stats")
        if stats:
            if type(stats) is not dict:
                raise _err(i, "latency_ms.iter_max_stats", "an object", stats)
            s_mean = self._num(i, stats, "mean", "latency_ms.iter_max_stats")
            s_median = self._num(i, stats, "median", "latency_ms.iter_max_stats")
            s_stdev = self._num(i, stats, "stdev", "latency_ms.iter_max_stats")
            s_min = self._num(i, stats, "min", "latency_ms.iter_max_stats")
            s_max = self._num(i, stats, "max", "latency_ms.iter_max_stats")
            s_p90 = self._num(i, stats, "p90", "latency_ms.iter_max_stats")
        else:
            s_mean = s_median = s_stdev = s_min = s_max = s_p90 = None
        outliers = lat.get("iter_max_outliers")
        outlier_count = None
        if outliers:
            if type(outliers) is not dict:
                raise _err(i, "latency_ms.iter_max_outliers", "an object", outliers)
            outlier_count = self._opt_int(i, outliers, "count", "latency_ms.iter_max_outliers")

        n_iters = self._n_iters(i, row.get("raw_data"))
        routing_status, off_diag, active = self._routing(i, row.get("routing_control"))
        dispatch = self.dispatch_override or self._dispatch_label(i, wl.get("routing_control"))
        if dispatch is not None:
            self.dispatch_labels.add(dispatch)

        per_rank = lat.get("per_rank")
        spr = row.get("status_per_rank")
        if per_rank is not None and type(per_rank) is not dict:
            raise _err(i, "latency_ms.per_rank", "an object", per_rank)
        if spr is not None and type(spr) is not dict:
            raise _err(i, "status_per_rank", "an object", spr)
        per_rank_json = None
        if per_rank or spr:
            per_rank_json = self._dumps({"per_rank": per_rank or {}, "status_per_rank": spr or {}})
        for key, default in _DEFAULT_BLOCKS:
            block = row.get(key)
            if block and block != default and _non_default(block):
                extra[key] = block
        cat_key = (status, skip_reason, autotune)
        category = self._categories.get(cat_key, _MISSING)
        if category is _MISSING:
            category = self._categories[cat_key] = categorize(status, skip_reason, autotune)
        return (
            i, num_tokens, prnt_json, mode if mode is not None else _upper(mode_raw),
            dp, attn_family(mode) if mode else "?", ep, tp,
            act_backend if act_backend is not None else req_backend, req_backend,
            comm[0], req_comm, act_comm, cuda_graph, lpmc, dispatch, status, category,
            skip_reason, score, raw_score, score_type, s_mean, s_median, s_stdev, s_min,
            s_max, s_p90, outlier_count, n_iters, autotune, bottleneck, scheduler_kind,
            num_chunks, routing_status, off_diag, active, None, per_rank_json,
            self._dumps(extra) if extra else None,
        )  # fmt: skip

    def _dumps(self, value: Any) -> str:
        return dumps(value, nonfinite=self.nonfinite)

    def _block(
        self, i: int, row: dict[str, Any], key: str, extra: dict[str, Any]
    ) -> dict[str, Any]:
        block = row.get(key)
        if type(block) is not dict:
            if block is None:
                if key in ("workload", "requested_config"):
                    raise InputError(f"results[{i}].{key}", "missing")
                return _EMPTY
            raise _err(i, key, "an object", block)
        known = _BLOCK_KEYS[key]
        if not known.issuperset(block):
            for k in block:
                if k not in known:
                    extra[f"{key}.{k}"] = block[k]
                    self.warnings.add(f"results[*].{key}.{k}: unknown key kept in extra_json")
        return block

    def _mode(self, i: int, value: Any) -> str | None:
        try:
            return self._modes[value]
        except KeyError:
            pass
        except TypeError:  # unhashable: a list or object
            raise _err(i, "requested_config.parallel_mode", "a string", value) from None
        if type(value) is not str:
            raise _err(i, "requested_config.parallel_mode", "a string", value)
        check_text(value, f"results[{i}].requested_config.parallel_mode", 64)
        try:
            mode: str | None = normalize_mode(value)
        except ParallelModeError:
            mode = None
        self._modes[value] = mode
        return mode

    def _text(self, i: int, block: dict[str, Any], key: str, where: str) -> str | None:
        value = block.get(key)
        if value is None:
            return None
        if type(value) is not str:
            raise _err(i, f"{where}.{key}", "a string or null", value)
        if value in self._texts:
            return value
        check_text(value, f"results[{i}].{where}.{key}", 256)
        if len(self._texts) < 10_000:
            self._texts.add(value)
        return value

    def _num(
        self, i: int, block: dict[str, Any], key: str, where: str = "latency_ms"
    ) -> float | None:
        value = block.get(key)
        if type(value) is float or value is None:
            return value
        if type(value) is int:
            return float(value)
        raise _err(i, f"{where}.{key}", "a number", value)

    def _opt_int(self, i: int, block: dict[str, Any], key: str, where: str) -> int | None:
        value = block.get(key)
        if value is None:
            return None
        if type(value) is not int:
            raise _err(i, f"{where}.{key}", "an integer or null", value)
        if not -(1 << 62) < value < 1 << 62:
            raise InputError(f"results[{i}].{where}.{key}", f"{_shown(value)} is out of range")
        return value

    def _opt_bool(self, i: int, block: dict[str, Any], key: str, where: str) -> bool | None:
        value = block.get(key)
        if value is None or type(value) is bool:
            return value
        raise _err(i, f"{where}.{key}", "a boolean or null", value)

    def _n_iters(self, i: int, raw_data: Any) -> int | None:
        if not raw_data:
            return None
        if type(raw_data) is not dict:
            raise _err(i, "raw_data", "an object", raw_data)
        forward = raw_data.get("forward_times_ms")
        if not forward:
            return None
        if type(forward) is not dict:
            raise _err(i, "raw_data.forward_times_ms", "an object", forward)
        per_rank = forward.get("per_rank")
        if not per_rank:
            return None
        if type(per_rank) is not dict:
            raise _err(i, "raw_data.forward_times_ms.per_rank", "an object", per_rank)
        lengths = []
        for rank, samples in per_rank.items():
            if type(samples) is not list:
                raise _err(i, f"raw_data.forward_times_ms.per_rank.{rank}", "an array", samples)
            lengths.append(len(samples))
        return min(lengths)  # bench_moe scores the common length across ranks

    def _routing(self, i: int, rc: Any) -> tuple[str | None, float | None, int | None]:
        if not rc:
            return None, None, None
        if type(rc) is not dict:
            raise _err(i, "routing_control", "an object or null", rc)
        actual = rc.get("actual")
        if not actual:
            return None, None, None
        if type(actual) is not dict:
            raise _err(i, "routing_control.actual", "an object", actual)
        where = "routing_control.actual"
        realization = actual.get("routing_realization") or _EMPTY
        if type(realization) is not dict:
            raise _err(i, f"{where}.routing_realization", "an object", realization)
        dispatch = actual.get("observed_dispatch_matrix_summary") or _EMPTY
        if type(dispatch) is not dict:
            raise _err(i, f"{where}.observed_dispatch_matrix_summary", "an object", dispatch)
        hist = actual.get("observed_expert_histogram_summary") or _EMPTY
        if type(hist) is not dict:
            raise _err(i, f"{where}.observed_expert_histogram_summary", "an object", hist)
        return (
            self._text(i, realization, "status", f"{where}.routing_realization"),
            self._num(
                i, dispatch, "off_diagonal_ratio", f"{where}.observed_dispatch_matrix_summary"
            ),
            self._opt_int(i, hist, "active_experts", f"{where}.observed_expert_histogram_summary"),
        )

    def _dispatch_label(self, i: int, spec: Any) -> str | None:
        if spec is None:
            return None
        if type(spec) is not dict:
            raise _err(i, "workload.routing_control", "an object or null", spec)
        comm = spec.get("comm_pattern")
        expert = spec.get("expert_pattern")
        key = (
            comm,
            expert,
            spec.get("per_rank_num_tokens") is not None,
            spec.get("routing_pattern_file"),
        )
        try:
            return self._dispatch[key]
        except KeyError:
            pass
        except TypeError:
            raise _err(i, "workload.routing_control", "string patterns", spec) from None
        for name, value in (("comm_pattern", comm), ("expert_pattern", expert)):
            if value is not None and type(value) is not str:
                raise _err(i, f"workload.routing_control.{name}", "a string or null", value)
        label = dispatch_label(comm, expert, key[2], key[3])
        self._dispatch[key] = label
        return label


def dispatch_label(
    comm_pattern: str | None,
    expert_pattern: str | None,
    has_per_rank_list: bool = False,
    pattern_file: Any = None,
) -> str | None:
    """The dashboard's dispatch label for a requested routing spec.

    A pattern file → "pattern_file"; an explicit per-rank token list →
    "per_rank_skew"; ``receiver_hotspot…`` → "recv_hotspot"; ``local_only…`` →
    "local_only"; ``balanced_alltoall`` with ``balanced`` experts → "balanced";
    otherwise the comm pattern text, plus ``;expert=<pattern>`` when the expert pattern
    is not balanced. None when neither pattern is given.
    """
    if pattern_file:
        return "pattern_file"
    if has_per_rank_list:
        return "per_rank_skew"
    comm = (comm_pattern or "").strip()
    expert = (expert_pattern or "").strip()
    if comm.startswith("receiver_hotspot"):
        return "recv_hotspot"
    if comm.startswith("local_only"):
        return "local_only"
    if comm == "balanced_alltoall" and expert in ("balanced", ""):
        return "balanced"
    if not comm and not expert:
        return None
    return comm if expert in ("balanced", "") else f"{comm};expert={expert}"


def _upper(value: Any) -> str | None:
    return value.strip().upper() if isinstance(value, str) else None


def _non_default(block: Any) -> bool:
    if isinstance(block, dict):
        return any(_non_default(v) for v in block.values())
    if isinstance(block, list):
        return bool(block)
    return block is not None
