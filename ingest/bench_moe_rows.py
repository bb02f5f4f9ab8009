"""Flatten bench_moe result rows into tuples in ``CANDIDATE_COLUMNS`` order.

Format: ``/work/shared/reference/bench_moe_schema.md`` §2 (rows). The document-level
parser (:mod:`ingest.bench_moe`) builds one :class:`RowFlattener` per report and feeds
it every row, in one process or in forked ones (:mod:`ingest.parallel_parse`), which then
:meth:`~RowFlattener.merge` what each process learned. The row rules (required keys,
unknown keys kept in ``extra_json``, warnings) are described in :mod:`ingest.bench_moe`.
"""

from __future__ import annotations

import math
from typing import Any

import orjson

from ingest import legacy
from ingest.comm import resolve_comm
from ingest.errors import InputError
from ingest.failures import categorize
from ingest.fields import Warnings, _shown, check_text, escape_controls, json_type
from ingest.lenient_json import dumps
from ingest.parallel_modes import ParallelModeError, attn_family, normalize_mode, resolve_layout

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
_DEFAULT_BLOCKS: tuple[tuple[str, Any], ...] = (
    ("kernel_breakdown", {"moe_forward_kernels": [], "other_kernels": []}),
    ("phase_times_ms", {"agg": {}, "per_rank": {}}),
    ("overlap", {"overlap_ms": None, "overlap_ratio": None}),
)
_MAX_NUM_TOKENS = 1 << 40


def _err(i: int, path: str, expected: str, value: Any) -> InputError:
    return InputError(f"results[{i}].{path}", f"expected {expected}, got {json_type(value)}")


class RowFlattener:
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
        if skip_reason is not None:
            skip_reason = escape_controls(skip_reason)

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
            if len(prnt) > self.world_size:
                # one count per rank: more counts than ranks cannot be a measurement
                raise InputError(
                    f"results[{i}].workload.per_rank_num_tokens",
                    f"{len(prnt)} counts for world_size {self.world_size}",
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
        if autotune is not None:
            autotune = escape_controls(autotune)
        bottleneck = row.get("bottleneck")
        if bottleneck is not None and type(bottleneck) is not str:
            raise _err(i, "bottleneck", "a string or null", bottleneck)
        if bottleneck is not None:
            bottleneck = escape_controls(bottleneck)

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
