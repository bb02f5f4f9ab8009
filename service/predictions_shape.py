"""Predictions for a model given by its shape, or a world size the store lacks, and the
leave-one-model-out validation of those answers.

Reads every stored cell of one (hardware, quant) slice through
:meth:`service.frames.DashData.cell_frame` (a bounded number of cells: the models
measured on that GPU and quant), fits :mod:`analysis.predict_shape` once per version of
those cells (cached with ``where`` = the slice, shared by replicas), and answers from it.
A slice with nothing stored is :class:`~service.errors.NoData` on ``hardware``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pandas as pd

from analysis import columns as C
from analysis import predict as P
from analysis import predict_shape as S
from analysis import predict_shape_validate as L
from analysis.confidence import verdict
from analysis.identity import configuration_frame
from analysis.predict_command import shape_command
from analysis.tables import to_json_records
from service.cell_configurations import read_configurations
from service.errors import NoData
from service.frames import Cell, DashData

METHOD = (
    "one model across shapes on one GPU and quant: per configuration kind a ridge fit of "
    "log(score) on log activated tokens, FLOPs, weight bytes read and dispatch volume per "
    "rank and log world size, corrected by what the stored models measured for that kind "
    "near the same routed tokens; intervals by cross-conformal prediction leaving one "
    "model out; where the pick is less likely than even to be fastest, the decision tree's "
    "configuration goes first when it is a contender"
)


# What a slice's shape fit and its validation need of their own, beyond the process's
# caches: they run within the frame cache's budget (DashData.make_room), not on top of it.
# Measured (bench/slice_memory.py, a 17-model slice of 1M-row cells on DuckDB): reading
# the slice in pieces ~100 MiB of temporaries, a 30,000-row fit ~150 MiB at its peak.
SLICE_FIT_BYTES = 256 * 2**20

# Revision of the validation answers: part of their shared-answer keys, so answers a
# replica stored with an earlier method are not read as this one's.
REVISION = 3


def _slice(hardware: str, quant: str) -> dict[str, Any]:
    return {"hardware": hardware.upper(), "quant": quant}


def slice_frame(data: DashData, hardware: str, quant: str) -> pd.DataFrame:
    """The configurations of one (hardware, quant) slice, all models: each cell's
    configuration frame (``analysis.identity.configuration_frame``: one row per workload
    x configuration, its latest version's repeats pooled) under the cell's default
    routing pattern -- the pattern a cell's predictions answer for. That is all the
    shape model and its validation read (they pool a frame with ``configuration_frame``,
    which leaves a configuration frame as it is), and it is a few thousand rows per cell
    where a year of sweeps stores a million: the cells are read one at a time and never
    held together (issue 23's memory bound)."""
    cells = data.cells_matching(_slice(hardware, quant))
    if not cells:
        raise NoData("hardware", f"nothing stored for {hardware.upper()} · {quant}", "no_data")
    return pd.concat([_configurations(data, c) for c in cells], ignore_index=True)


def _configurations(data: DashData, cell: Cell) -> pd.DataFrame:
    """One cell's part of :func:`slice_frame`, cached per version of the cell (a few MB):
    after an upload to one cell of a slice, the slice's answers are recomputed from the
    other cells' cached parts without reading their rows again."""

    def compute() -> pd.DataFrame:
        frame = data.held_cell_frame(cell)
        if frame is not None:  # a visitor's: nothing to read
            return configuration_frame(frame, rows=S.answer_rows(frame))
        # read in pieces, keeping only the rows the answer needs: the cell's frame is
        # never built (a 1M-row cell's is ~300 MB; issue 23's memory bound)
        data.store.stats.ensure_cell(cell.model, cell.hardware, cell.quant)
        return read_configurations(data.store, cell.model, cell.hardware, cell.quant)

    out: pd.DataFrame = data.cached(("shape_configurations", cell), compute, cell)
    return out


def shape_fit(data: DashData, hardware: str, quant: str, confidence: float) -> S.ShapeModel:
    """The slice's shape model, fitted once per version of its cells, with the tie-break
    threshold its leave-one-model-out validation chose
    (``analysis.predict_shape_validate.answer_threshold``: read from the shared,
    precomputed :func:`model_validation` when the slice has enough models to choose one)."""

    def fit() -> S.ShapeModel:
        data.make_room(SLICE_FIT_BYTES)
        return S.fit_shapes(slice_frame(data, hardware, quant), confidence)

    where = _slice(hardware, quant)
    key = ("prediction_shape_fit", where["hardware"], quant, float(confidence))
    out: S.ShapeModel = data.cached(key, fit, where)
    if len(out.models) - 1 < L.MIN_MODELS:
        return out  # too few models to choose it: the a-priori threshold
    summary = model_validation(data, hardware, quant, confidence)["summary"]
    return replace(out, prefer_tree_below=float(summary["prefer_tree_below"]))


def answer_from_shape(
    fit: S.ShapeModel,
    shape: S.Shape,
    quant: str,
    world_size: int,
    num_tokens: int,
    attention: str | None,
    phase: str | None,
) -> dict[str, Any]:
    """The JSON-ready answer of :func:`analysis.predict_shape.predict_shape` (the fields
    of ``service.predictions.prediction``: kind, pick, verdict, items …)."""
    adp = attention != "tp"
    graph = phase != "prefill"
    rows = S.predict_shape(fit, shape, quant, world_size, num_tokens, adp, graph)
    if rows.empty:
        raise NoData("world_size", "no configuration of this family stored on this GPU", "no_data")
    p = rows["p_fastest"].to_numpy(float)  # among the contenders (analysis.predict_shape)
    rows["kind"] = P.PREDICTED
    margin = (
        100.0 * (rows["score_ms"].iat[1] / rows["score_ms"].iat[0] - 1.0) if len(rows) > 1 else None
    )
    return {
        "workload": {"num_tokens": num_tokens, "world_size": world_size, "dispatch": "balanced",
                     "attention": "dp" if adp else "tp", "phase": "decode" if graph else "prefill"},
        "shape": {"num_experts": shape.num_experts, "top_k": shape.top_k,
                  "hidden_size": shape.hidden_size, "intermediate_size": shape.intermediate_size},
        "kind": P.PREDICTED,
        "source": "shape model",
        "pick": str(rows["config"].iat[0]),
        "verdict": verdict(False, margin, None, float(p[0]), False),
        "confidence": fit.confidence,
        "below": None,
        "above": None,
        "split": None,
        "notes": [f"fitted on {', '.join(fit.models)} on this GPU and quant; only configuration "
                  "kinds measured near this load on some model are contenders",
                  f"picked by the {rows['picked_by'].iat[0]}"],
        "method": METHOD,
        "items": to_json_records(rows),
    }  # fmt: skip


def shape_prediction(
    data: DashData,
    hardware: str,
    quant: str,
    dims: tuple[int, int, int, int],
    world_size: int,
    num_tokens: int,
    attention: str | None = None,
    phase: str | None = None,
    confidence: float = P.CONFIDENCE,
) -> dict[str, Any]:
    """Each configuration kind's predicted score for a model given by its shape
    (``dims``: num_experts, top_k, hidden_size, intermediate_size) on a stored GPU and
    quant (JSON-ready, fastest contender first)."""
    shape = S.Shape(*dims)

    def compute() -> dict[str, Any]:
        fit = shape_fit(data, hardware, quant, confidence)
        got = answer_from_shape(fit, shape, quant, world_size, num_tokens, attention, phase)
        ran = shape_command(hardware.upper(), quant, dims, world_size, num_tokens,
                            attention != "tp", phase != "prefill")  # fmt: skip
        measure = {"command": ran.command, "preset": ran.preset, "model_args": ran.model_args}
        return {"cell": {"model": None, "hardware": hardware.upper(), "quant": quant}, **got,
                "measure": measure}  # fmt: skip

    key = ("prediction_shape", hardware.upper(), quant, shape, world_size, num_tokens, attention,
           phase, float(confidence))  # fmt: skip
    out: dict[str, Any] = data.cached(key, compute, _slice(hardware, quant))
    return out


def model_validation(
    data: DashData, hardware: str, quant: str, confidence: float = P.CONFIDENCE
) -> dict[str, Any]:
    """Leave-one-model-out validation of one (hardware, quant) slice
    (``analysis.predict_shape_validate``): summary (predicted pick, tree, nearest model;
    paired with the tree) and one row per held-out workload."""

    def compute() -> dict[str, Any]:
        data.make_room(SLICE_FIT_BYTES)
        table = L.validate_models(slice_frame(data, hardware, quant), confidence)
        summary = {**L.summarize_models(table), "prefer_tree_below": L.answer_threshold(table)}
        return {"summary": summary, "items": to_json_records(table)}

    where = _slice(hardware, quant)
    key = ("prediction_model_validation", where["hardware"], quant, float(confidence), REVISION)
    out: dict[str, Any] = data.cached(key, compute, where, share=True)
    return out


def cell_shape(frame: pd.DataFrame) -> S.Shape | None:
    """The shape a cell's rows record (None when they do not)."""
    if frame.empty or any(c not in frame for c in S.SHAPE):
        return None
    first = frame[list(S.SHAPE)].dropna()
    if first.empty:
        return None
    row = first.iloc[0]
    return S.Shape(*(int(row[c]) for c in S.SHAPE))


def missing_world_size(frame: pd.DataFrame, world_size: int) -> bool:
    """Whether the cell measured nothing at ``world_size`` (but something elsewhere)."""
    return bool(len(frame)) and not (frame[C.WORLD_SIZE].astype(float) == world_size).any()
