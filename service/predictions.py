"""Predictions for workloads the store has not measured, and how good they have been.

``GET /api/v1/predictions`` and ``GET /api/v1/predictions/validation`` call
:func:`prediction` and :func:`validation`: one cell (model, hardware, quant) read
through :meth:`service.frames.DashData.cell_frame`, answered by :mod:`analysis.predict`
(per-configuration log-log curves, conformal intervals, P(fastest)), cached per cell
version (a new upload of the cell answers anew; the fitted curves of a workload group
are cached apart, so a new token count costs a prediction, not a fit). A measured
token count is answered from the measurements and says so (``kind`` "measured").

An unknown cell is :class:`~service.errors.NoData` on ``model``; nothing measured at
the world size (or no configuration with enough token counts there) is ``NoData`` on
``world_size``.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from analysis import columns as C
from analysis import predict as P
from analysis import predict_validate as V
from analysis.confidence import verdict
from analysis.predict_next import measure_next
from analysis.tables import to_json_records
from service import foreground
from service import predictions_shape as X
from service import shared_answers as shared
from service.errors import NoData, ServiceError
from service.frames import Cell, DashData


def _cell(data: DashData, model: str, hardware: str, quant: str) -> Cell:
    cell = Cell(model, hardware.upper(), quant)
    if cell not in data.cells():
        raise NoData("model", f"no stored data for {cell.label}", "no_data")
    return cell


def _verdict(got: P.Prediction) -> str:
    """The pick's confidence word (``analysis.confidence``): its margin over the
    runner-up, its P(fastest), whether it was extrapolated."""
    scores = got.rows[P.PRED_MS].to_numpy(float)
    margin = 100.0 * (scores[1] / scores[0] - 1.0) if len(scores) > 1 else None
    p = None if got.measured else float(got.rows[P.P_FASTEST].iat[0])
    extrapolated = any("extrapolated" in note for note in got.notes)
    return verdict(got.measured, margin, None, p, extrapolated)


def _attention(flag: bool | None) -> str | None:
    return None if flag is None else ("dp" if flag else "tp")


def _phase(flag: bool | None) -> str | None:
    return None if flag is None else ("decode" if flag else "prefill")


def _neighbour(found: tuple[int, str] | None) -> dict[str, Any] | None:
    return None if found is None else {"num_tokens": found[0], "best": found[1]}


def prediction(
    data: DashData,
    model: str,
    hardware: str,
    quant: str,
    num_tokens: int,
    world_size: int,
    dispatch: str | None = None,
    confidence: float = P.CONFIDENCE,
    attention: str | None = None,
    phase: str | None = None,
) -> dict[str, Any]:
    """Each configuration's score at ``num_tokens`` on ``world_size`` of one cell, with
    its interval, P(fastest), the pick and the measured neighbours (JSON-ready).
    ``attention`` ("dp" / "tp") and ``phase`` ("decode" = CUDA graph on / "prefill"):
    the family ranked (unset: the one measured, attention DP and decode first); where
    the neighbours have different winners, ``split`` names both, the crossover and the
    bench_moe command that settles it."""
    cell = _cell(data, model, hardware, quant)
    frame = data.cell_frame(cell)
    if X.missing_world_size(frame, world_size):
        return _other_world_size(data, cell, frame, num_tokens, world_size, attention, phase,
                                 confidence)  # fmt: skip
    adp = None if attention is None else attention == "dp"
    graph = None if phase is None else phase == "decode"

    def fit() -> P.GroupModel:
        return P.fit_group(frame, world_size, dispatch, confidence, adp, graph)

    def compute() -> dict[str, Any]:
        # the group's curves and intervals are fitted once per cell version; a token
        # count is then a prediction from them
        fitted = data.cached(
            ("prediction_fit", cell, int(world_size), dispatch, float(confidence), adp, graph),
            fit,
            cell,
        )
        got = P.predict_workload(
            fitted.group, num_tokens, world_size, dispatch, confidence, fitted=fitted
        )
        if got.pick is None:
            raise NoData("world_size", "; ".join(got.notes) or "nothing to predict", "no_data")
        return {
            "cell": {"model": cell.model, "hardware": cell.hardware, "quant": cell.quant},
            "workload": {
                "num_tokens": got.num_tokens,
                "world_size": got.world_size,
                "dispatch": got.dispatch,
                "attention": _attention(got.attention_dp),
                "phase": _phase(got.cuda_graph),
            },
            "kind": P.MEASURED if got.measured else P.PREDICTED,
            "pick": got.pick,
            "verdict": _verdict(got),
            "confidence": got.confidence,
            "below": _neighbour(got.below),
            "above": _neighbour(got.above),
            "split": got.split,
            "notes": got.notes,
            "method": "per-configuration log-log interpolation over num_tokens; intervals by "
            "cross-conformal prediction leaving one token count out",
            "items": to_json_records(got.rows),
        }

    key = ("prediction", cell, int(num_tokens), int(world_size), dispatch, float(confidence),
           adp, graph)  # fmt: skip
    out: dict[str, Any] = data.cached(key, compute, where=cell)
    return out


def _measure_next(
    data: DashData, cell: Cell, frame: pd.DataFrame, confidence: float, limit: int = 10
) -> pd.DataFrame:
    """The cell's unmeasured token counts whose winner is least certain, over its world
    sizes (``analysis.predict_next``), most uncertain first."""
    names = {"model": cell.model, "hardware": cell.hardware, "quant": cell.quant}
    parts = []
    families = frame[[C.WORLD_SIZE, C.ATTENTION_DP, C.CUDA_GRAPH]].dropna().drop_duplicates()
    for ws, adp, graph in sorted((int(w), bool(a), bool(g)) for w, a, g in families.to_numpy()):

        def fit(size: int = ws, a: bool = adp, g: bool = graph) -> P.GroupModel:
            return P.fit_group(frame, size, None, confidence, a, g)

        key = ("prediction_fit", cell, ws, None, float(confidence), adp, graph)
        parts.append(measure_next(data.cached(key, fit, cell), names, limit))
    found = [p for p in parts if len(p)]
    if not found:
        return pd.DataFrame()
    every = pd.concat(found, ignore_index=True)
    every = every.sort_values(["expected_regret_pct", "world_size", "num_tokens"],
                              ascending=[False, True, True], kind="mergesort")  # fmt: skip
    return every.head(limit).reset_index(drop=True)


def _other_world_size(
    data: DashData,
    cell: Cell,
    frame: pd.DataFrame,
    num_tokens: int,
    world_size: int,
    attention: str | None,
    phase: str | None,
    confidence: float,
) -> dict[str, Any]:
    """A world size the cell did not measure: the shape model of its GPU and quant, for
    the cell's own shape (``service.predictions_shape``)."""
    shape = X.cell_shape(frame)
    stored = sorted({int(w) for w in frame[C.WORLD_SIZE].dropna().unique()})
    if shape is None:
        raise NoData("world_size", f"nothing measured at world size {world_size} (stored: "
                     f"{stored}) and the model's shape is not recorded", "no_data")  # fmt: skip

    def compute() -> dict[str, Any]:
        fit = X.shape_fit(data, cell.hardware, cell.quant, confidence)
        got = X.answer_from_shape(fit, shape, cell.quant, world_size, num_tokens, attention, phase)
        got["notes"] = [f"world size {world_size} not stored for this model (stored: {stored}): "
                        "predicted by the shape model", *got["notes"]]  # fmt: skip
        names = {"model": cell.model, "hardware": cell.hardware, "quant": cell.quant}
        return {"cell": names, **got}

    key = ("prediction_other_ws", cell, num_tokens, world_size, attention, phase, confidence)
    out: dict[str, Any] = data.cached(
        key, compute, {"hardware": cell.hardware, "quant": cell.quant}
    )
    return out


def validation(
    data: DashData, model: str, hardware: str, quant: str, confidence: float = P.CONFIDENCE
) -> dict[str, Any]:
    """Leave-one-token-count-out validation of one cell (``analysis.predict_validate.validate``):
    the summary (regret of the predicted pick and of the nearest-workload answer,
    coverage), one row per held-out query, and ``measure_next``: the unmeasured token
    counts whose winner is least certain, with their bench_moe commands."""
    cell = _cell(data, model, hardware, quant)

    def compute() -> dict[str, Any]:
        # the cell's own part first: its frame is let go before the slice's (which
        # makes room in the frame cache for its fits: a frame held here would stay)
        own = _cell_validation(data, cell, confidence)
        return {**own, "leave_one_model_out": _models(data, cell, confidence)}

    where = {"hardware": cell.hardware, "quant": cell.quant}  # the other models count too
    key = ("prediction_validation", cell, float(confidence), X.REVISION)
    # shared: computed once per version of the slice's cells, by the warm-up at start and
    # the recomputation after an upload (warm_validations), read by every replica
    out: dict[str, Any] = data.cached(key, compute, where, share=True)
    return out


def _cell_validation(data: DashData, cell: Cell, confidence: float) -> dict[str, Any]:
    """:func:`validation`'s answer from the cell's own frame (all but the slice's
    leave-one-model-out part)."""
    frame = data.cell_frame(cell)
    table = V.validate(frame, confidence)
    names = {"model": cell.model, "hardware": cell.hardware, "quant": cell.quant}
    return {
        "cell": names,
        "confidence": confidence,
        "summary": V.summarize(table),
        "items": to_json_records(table),
        "measure_next": to_json_records(_measure_next(data, cell, frame, confidence)),
    }


def warm_validations(data: DashData, cells: list[Cell] | None = None) -> list[str]:
    """Compute (or read) and share the validation of ``cells`` (default: the first
    ``data.max_cells`` of the store, the pages' order) so the first visit of the
    Predictions page or ``GET /api/v1/predictions/validation`` finds it ready; each cell
    between visitors (``service.foreground``). Returns the keys of the cells answered;
    a cell that cannot be answered is skipped (its page says why)."""
    done = []
    for cell in cells if cells is not None else data.cells()[: data.max_cells]:
        foreground.step_aside()
        try:
            with shared.writing():
                validation(data, cell.model, cell.hardware, cell.quant)
        except ServiceError:
            continue
        done.append(cell.key)
    return done


def _models(data: DashData, cell: Cell, confidence: float) -> dict[str, Any]:
    """The leave-one-model-out validation of the cell's GPU and quant: the slice's summary
    and this model's held-out workloads (empty with one model stored)."""
    got = X.model_validation(data, cell.hardware, cell.quant, confidence)
    items = [r for r in got["items"] if r.get("model") == cell.model]
    return {"summary": got["summary"], "items": items}
