"""Pareto page: per model x hardware x precision, the frontier over the candidate cloud.

URL: ``/pareto?model=&hardware=&quant=&ws=&phase=&attn=&dispatch=&mode=&backend=&comm=
&x=&y=&logx=1&logy=1&point=<run_id>:<candidate_index>`` (``dispatch``, ``mode``,
``backend``, ``comm`` may repeat; empty means all).
"""

from __future__ import annotations

import itertools
import math
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import dash
import numpy as np
import pandas as pd
import plotly.graph_objects as go
from dash import Input, Output, State, dcc, html

from analysis import columns as C
from analysis.export import Provenance, env_line, recommended_config_yaml
from analysis.pareto import RECIPE_COLS, TIE_BREAK_COLS, pareto_frontier
from analysis.tree import Deployment, Recommendation
from dashboard import components as ui
from dashboard.figures import AXES, KEY, downsample, pareto_figure
from service.frames import RANKABLE, Cell, DashData

PATH = "/pareto"
CLOUD_MAX_POINTS = 20_000  # keeps the figure payload under ~500 KB (see bench/dashboard.py)
PHASES = ("decode", "prefill", "all")
MULTI = ("dispatch", "mode", "backend", "comm")
_MULTI_COL = {"dispatch": C.DISPATCH, "mode": C.PARALLEL_MODE, "backend": C.BACKEND, "comm": C.COMM}


@dataclass(frozen=True)
class ParetoQuery:
    """Everything the Pareto view depends on (the URL holds exactly this)."""

    cell: Cell | None
    ws: int | None = None  # None = all world sizes
    phase: str = "decode"
    attn: str = "all"  # "D", "T" or "all"
    dispatch: tuple[str, ...] = ()
    mode: tuple[str, ...] = ()
    backend: tuple[str, ...] = ()
    comm: tuple[str, ...] = ()
    x: str = C.SCORE_MS
    y: str = C.TOKENS_PER_S_PER_GPU
    logx: bool = True
    logy: bool = True
    point: str | None = None

    def search(self) -> str:
        c = self.cell
        return ui.search_string(
            {
                "model": c and c.model,
                "hardware": c and c.hardware,
                "quant": c and c.quant,
                "ws": self.ws,
                "phase": self.phase,
                "attn": None if self.attn == "all" else self.attn,
                "dispatch": list(self.dispatch),
                "mode": list(self.mode),
                "backend": list(self.backend),
                "comm": list(self.comm),
                "x": self.x,
                "y": self.y,
                "logx": "1" if self.logx else "0",
                "logy": "1" if self.logy else "0",
                "point": self.point,
            }
        )


@dataclass
class ParetoView:
    cloud: pd.DataFrame
    frontier: pd.DataFrame
    n_matching: int  # rows of the cell passing the filters (any status)
    n_cloud: int  # rankable rows with finite x and y before downsampling
    hints: list[str] = field(default_factory=list)


def parse_query(query: dict[str, Any], cells: list[Cell]) -> ParetoQuery:
    """Query string values -> ParetoQuery; unknown or invalid values fall back."""
    want = Cell(
        ui.first(query, "model") or "",
        ui.first(query, "hardware") or "",
        ui.first(query, "quant") or "",
    )
    cell = want if want in cells else (cells[0] if cells else None)

    def multi(key: str) -> tuple[str, ...]:
        v = query.get(key, [])
        return tuple(str(x) for x in (v if isinstance(v, list) else [v]) if x)

    x = ui.first(query, "x") or C.SCORE_MS
    y = ui.first(query, "y") or C.TOKENS_PER_S_PER_GPU
    phase = ui.first(query, "phase") or "decode"
    attn = ui.first(query, "attn") or "all"
    return ParetoQuery(
        cell=cell,
        ws=ui.as_int(ui.first(query, "ws")),
        phase=phase if phase in PHASES else "decode",
        attn=attn if attn in ("D", "T") else "all",
        **{k: multi(k) for k in MULTI},
        x=x if x in AXES else C.SCORE_MS,
        y=y if y in AXES else C.TOKENS_PER_S_PER_GPU,
        logx=ui.first(query, "logx", "1") != "0",
        logy=ui.first(query, "logy", "1") != "0",
        point=ui.first(query, "point"),
    )


def filter_mask(frame: pd.DataFrame, q: ParetoQuery) -> np.ndarray:
    """Rows of the cell frame that pass the query's filters (any status)."""
    mask = np.ones(len(frame), dtype=bool)
    if q.ws is not None:
        mask &= frame[C.WORLD_SIZE].to_numpy() == q.ws
    if q.phase != "all":
        mask &= (frame[C.PHASE] == q.phase).to_numpy(dtype=bool, na_value=False)
    if q.attn != "all":
        mask &= (frame[C.ATTN] == q.attn).to_numpy(dtype=bool, na_value=False)
    for key in MULTI:
        values = getattr(q, key)
        if values:
            mask &= frame[_MULTI_COL[key]].isin(values).to_numpy(dtype=bool, na_value=False)
    return mask


_FRONTIER_COLS = tuple(
    dict.fromkeys(
        (
            *TIE_BREAK_COLS,
            *RECIPE_COLS,
            C.STATUS,
            C.SCORE_MS,
            C.FAILURE_CATEGORY,
            C.AUTOTUNE_STATUS,
            C.PHASE,
            C.NUM_TOKENS,
            C.WORLD_SIZE,
            C.ATTN,
            C.DISPATCH,
            *AXES,
        )
    )
)
# Every column a filter can select on: a frontier of rows picked by any filter is a
# subset of the union of the frontiers of these atomic groups.
_ATOMIC = (C.WORLD_SIZE, C.PHASE, C.ATTN, C.DISPATCH, C.PARALLEL_MODE, C.BACKEND, C.COMM)


def _plottable(frame: pd.DataFrame, q: ParetoQuery) -> np.ndarray:
    """Rankable rows with finite x and y (and > 0 on log axes)."""
    mask = frame[RANKABLE].to_numpy().copy()
    for axis, log in ((q.x, q.logx), (q.y, q.logy)):
        v = frame[axis].to_numpy(np.float64, na_value=np.nan)
        mask &= np.isfinite(v) & ((v > 0) if log else True)
    return mask


def _rows(frame: pd.DataFrame, idx: np.ndarray) -> pd.DataFrame:
    cols = [c for c in _FRONTIER_COLS if c in frame]
    sub = frame[cols].take(idx)
    sub.insert(0, KEY, idx)
    return sub


class ParetoIndex:
    """Per-cell orderings that make a frontier over any filter a linear pass.

    ``groups``: one int id per row for its atomic filter group (``_ATOMIC`` values).
    Per axis (computed on first use, then kept): the rows ordered by (group, axis value
    best first) and the dense rank of the axis value (0 = best). With them the frontier
    candidates of every atomic group for (x, y) are one running minimum of the y rank
    along the x order -- no sort per filter change or per new pair of axes.
    """

    def __init__(self, frame: pd.DataFrame) -> None:
        self.frame = frame
        self.n = len(frame)
        self.groups, self.n_groups = _group_ids(frame, [c for c in _ATOMIC if c in frame])
        self._axes: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._pos: dict[str, bool] = {}
        self._pos_lock = threading.Lock()
        self._locks = {axis: threading.Lock() for axis in AXES}
        self._atomic: dict[tuple[str, str, bool, bool], pd.DataFrame] = {}
        self._atomic_locks: dict[tuple[str, str, bool, bool], threading.Lock] = {}
        self._atomic_lock = threading.Lock()

    def axis(self, axis: str) -> tuple[np.ndarray, np.ndarray]:
        """(rows by (group, value best first), dense rank of the value, 0 = best)."""
        with self._locks[axis]:  # one computation per axis, also across threads
            if axis not in self._axes:
                self._axes[axis] = self._axis(axis)
            return self._axes[axis]

    def prepare_rest(self) -> threading.Thread:
        """In a daemon thread: every axis not computed yet (``AXES`` order, the default
        view's first), then the atomic frontiers of every pair of axes (default log
        scales). A later change of axes is then a cache hit; a request meanwhile waits
        only for what it needs, or computes it itself when the thread is elsewhere."""
        default = ParetoQuery(cell=None)
        # pairs that keep the default y (one dropdown change) come first
        pairs = sorted(
            itertools.permutations(AXES, 2),
            key=lambda p: (p != (default.x, default.y), p[1] != default.y),
        )

        def run() -> None:
            for axis in AXES:
                self.axis(axis)
            for x, y in pairs:
                self.atomic(ParetoQuery(cell=None, x=x, y=y))

        thread = threading.Thread(target=run, name="moedash-pareto-index", daemon=True)
        thread.start()
        return thread

    def _positive(self, axis: str) -> bool:
        """True when every rankable finite value of ``axis`` is > 0 (then the log and
        the linear scale keep the same rows)."""
        with self._pos_lock:
            if axis not in self._pos:
                v = self.frame[axis].to_numpy(np.float64, na_value=np.nan)
                v = v[self.frame[RANKABLE].to_numpy() & np.isfinite(v)]
                self._pos[axis] = bool((v > 0).all())
            return self._pos[axis]

    def atomic(self, q: ParetoQuery) -> pd.DataFrame:
        """``atomic_frontiers(frame, q)``, computed once per axes and scales (scales that
        keep the same rows share one result)."""
        key = (q.x, q.y, q.logx and not self._positive(q.x), q.logy and not self._positive(q.y))
        with self._atomic_lock:
            lock = self._atomic_locks.setdefault(key, threading.Lock())
        with lock:
            if key not in self._atomic:
                self._atomic[key] = atomic_frontiers(self.frame, q, self)
            return self._atomic[key]

    def _axis(self, axis: str) -> tuple[np.ndarray, np.ndarray]:
        v = self.frame[axis].to_numpy(np.float64, na_value=np.nan)
        bad = v if AXES[axis] == "min" else -v  # ascending = best first; NaN last
        order = np.argsort(bad)
        sv = bad[order]
        new = np.ones(len(sv), dtype=bool)
        new[1:] = sv[1:] != sv[:-1]  # NaNs never compare equal: each its own rank
        rank = np.empty(len(sv), dtype=np.int64)
        rank[order] = np.cumsum(new) - 1
        g = self.groups[order]
        if self.n_groups <= np.iinfo(np.int16).max:  # stable radix sort on int16
            by_group = order[np.argsort(g.astype(np.int16), kind="stable")]
        else:
            by_group = order[np.lexsort((np.arange(len(g)), g))]
        return by_group, rank

    def frontier_rows(self, q: ParetoQuery) -> np.ndarray:
        """Sorted row positions holding every atomic-group frontier point of q's axes
        (a superset: exact duplicates and equal-y points may stay; the exact frontier is
        ``pareto_frontier`` over these rows)."""
        plot = _plottable(self.frame, q)
        # y first: on a fresh index the background thread starts with x of the default
        # view, so the two sorts run in parallel (numpy sorts release the GIL)
        _, y_rank = self.axis(q.y)
        by_x, x_rank = self.axis(q.x)
        seq = by_x[plot[by_x]]
        if not len(seq):
            return seq
        # Along seq the groups ascend and x gets worse; offsetting each group's y ranks
        # below the previous group's makes one running minimum restart per group.
        vals = y_rank[seq] - self.groups[seq] * (self.n + 1)
        best = np.minimum.accumulate(vals)
        keep = np.ones(len(seq), dtype=bool)
        keep[1:] = vals[1:] < best[:-1]  # strictly better y than every better-x point
        # ... or an exact duplicate (same x and y) of the point that set that best y
        setter = np.maximum.accumulate(np.where(keep, np.arange(len(seq)), 0))
        xr = x_rank[seq]
        keep[1:] |= (vals[1:] == best[:-1]) & (xr[1:] == xr[setter[:-1]])
        return np.sort(seq[keep])


def _group_ids(frame: pd.DataFrame, cols: list[str]) -> tuple[np.ndarray, int]:
    """(dense int64 id per row for the value combination of ``cols``, number of ids);
    missing values are a value of their own. Ids ascend with the combined codes."""
    key = np.zeros(len(frame), dtype=np.int64)
    for col in cols:
        s = frame[col]
        if isinstance(s.dtype, pd.CategoricalDtype):
            codes, card = s.cat.codes.to_numpy().astype(np.int64), len(s.cat.categories)
        else:
            codes, uniq = pd.factorize(s, use_na_sentinel=True)
            codes, card = np.asarray(codes, dtype=np.int64), len(uniq)
        key = key * (card + 1) + (codes + 1)
        if key.max(initial=0) > 1 << 40:  # keep the combined key small
            _, key = np.unique(key, return_inverse=True)
            key = key.astype(np.int64)
    if len(key) and key.max() < 1 << 26:
        present = np.zeros(int(key.max()) + 1, dtype=bool)
        present[key] = True
        dense = np.cumsum(present) - 1
        return dense[key], int(present.sum())
    uniq, inv = np.unique(key, return_inverse=True)
    return inv.astype(np.int64), len(uniq)


def atomic_frontiers(
    frame: pd.DataFrame, q: ParetoQuery, index: ParetoIndex | None = None
) -> pd.DataFrame:
    """Frontier rows of every atomic filter group (``_ATOMIC``) for q's axes: one
    ``pareto_frontier`` call, reused by every filter change. With ``index`` (of the same
    frame) only its :meth:`ParetoIndex.frontier_rows` take part -- same result."""
    rows = index.frontier_rows(q) if index is not None else np.flatnonzero(_plottable(frame, q))
    sub = _rows(frame, rows)
    group = [c for c in _ATOMIC if c in sub]
    return pareto_frontier(
        sub,
        q.x,
        q.y,
        minimize_x=AXES[q.x] == "min",
        maximize_y=AXES[q.y] == "max",
        group_cols=group,
    )


def pareto_view(
    frame: pd.DataFrame,
    q: ParetoQuery,
    max_points: int = CLOUD_MAX_POINTS,
    atomic: pd.DataFrame | None = None,
) -> ParetoView:
    """Filtered cloud (downsampled to ``max_points``) and the full frontier per phase.

    The frontier is ``analysis.pareto.pareto_frontier`` over every matching rankable
    row; it is computed from ``atomic`` (``atomic_frontiers`` of the same frame and
    axes, computed here when not given), which holds every row that can be on it.
    """
    mask = filter_mask(frame, q)
    n_matching = int(mask.sum())
    idx = np.flatnonzero(mask & _plottable(frame, q))
    n_cloud = len(idx)
    atomic = atomic_frontiers(frame, q) if atomic is None else atomic
    pool = atomic[filter_mask(atomic, q)]
    frontier = pareto_frontier(
        pool,
        q.x,
        q.y,
        minimize_x=AXES[q.x] == "min",
        maximize_y=AXES[q.y] == "max",
        group_cols=[C.PHASE],
    )
    if len(idx) > 4 * max_points:
        # Thin uniformly first so the grid pass below stays cheap on huge cells.
        idx = np.sort(np.random.default_rng(0).choice(idx, 4 * max_points, replace=False))
    xy = pd.DataFrame(
        {"x": frame[q.x].to_numpy(np.float64)[idx], "y": frame[q.y].to_numpy(np.float64)[idx]}
    )
    keep = downsample(xy, "x", "y", max_points, logx=q.logx, logy=q.logy).index.to_numpy()
    cloud = _rows(frame, idx[keep])
    hints = _relax_hints(q) if n_cloud == 0 else []
    return ParetoView(cloud, frontier, n_matching, n_cloud, hints)


def _relax_hints(q: ParetoQuery) -> list[str]:
    hints = []
    if q.ws is not None:
        hints.append("choose “all” world sizes")
    if q.phase != "all":
        hints.append(f"set phase to “all” (now {q.phase})")
    if q.attn != "all":
        hints.append("set attention to “all”")
    for key in MULTI:
        if getattr(q, key):
            hints.append(f"clear the {key} filter ({', '.join(getattr(q, key))})")
    return hints or ["this cell has no successful candidate with finite values on both axes"]


def find_point(frame: pd.DataFrame, point: str | None) -> pd.Series | None:
    """The cell-frame row for ``"<run_id>:<candidate_index>"``, or None."""
    if not point or ":" not in point:
        return None
    run, _, idx = point.partition(":")
    run_id, cand = ui.as_int(run), ui.as_int(idx)
    if run_id is None or cand is None:
        return None
    hit = frame.index[
        (frame[C.RUN_ID].to_numpy() == run_id) & (frame[C.CANDIDATE_INDEX].to_numpy() == cand)
    ]
    return frame.loc[hit[0]] if len(hit) else None


# ------------------------------------------------------------------ export
# analysis.export renders a tree Recommendation; a candidate picked here is not a tree
# output, so we describe it as one: its own backend, comm and layout, an empty decision
# path and a note that it was measured, not recommended.
def _int(value: Any, default: int = 0) -> int:
    try:
        f = float(value)
    except (TypeError, ValueError):
        return default
    return int(f) if math.isfinite(f) else default


def candidate_recommendation(row: Mapping[str, Any]) -> Recommendation:
    """A ``Recommendation`` describing the measured candidate ``row`` (cell-frame row)."""
    dep = Deployment(
        hardware=str(row[C.HARDWARE]),
        num_experts=_int(row[C.NUM_EXPERTS]),
        top_k=_int(row[C.TOP_K]),
        hidden_size=_int(row[C.HIDDEN_SIZE]),
        quant=str(row[C.QUANT]),
        world_size=_int(row[C.WORLD_SIZE], 1),
        attention_dp=bool(row[C.ATTENTION_DP]),
        cuda_graph=bool(row[C.CUDA_GRAPH]),
        num_tokens=_int(row[C.NUM_TOKENS], 1),
        model=str(row[C.MODEL]),
    )
    comm = str(row[C.COMM]) if row.get(C.COMM) is not None else "AUTO"
    requested = row.get(C.COMM_REQUESTED)
    forced = requested not in (None, "AUTO") and comm not in ("AUTO", "NONE")
    return Recommendation(
        deployment=dep,
        parallel_mode=str(row[C.PARALLEL_MODE]),
        moe_ep_size=_int(row[C.MOE_EP_SIZE], 1),
        moe_tp_size=_int(row[C.MOE_TP_SIZE], 1),
        backend=str(row[C.BACKEND]),
        comm=comm if forced else "AUTO",
        force_comm=forced,
        expected_comm=comm,
        activated_tokens_per_rank=float(row[C.ACTIVATED_TOKENS_PER_RANK]),
        dispatch_kb=float(row[C.DISPATCH_KB]),
        path=(),
        notes=(
            f"measured candidate: run {row[C.RUN_ID]}, candidate "
            f"{row[C.CANDIDATE_INDEX]}, score {float(row[C.SCORE_MS]):.4g} ms",
        ),
    )


def candidate_export(row: Mapping[str, Any]) -> tuple[str, str | None]:
    """(YAML text, env line or None) for one measured candidate."""
    rec = candidate_recommendation(row)
    prov = Provenance(
        run_ids=(int(row[C.RUN_ID]),),
        trtllm_version=None if row.get(C.TRTLLM_VERSION) is None else str(row[C.TRTLLM_VERSION]),
        date=None if row.get(C.RUN_DATE) is None else str(row[C.RUN_DATE]),
        produced_by="moedash Pareto page (measured bench_moe candidate)",
    )
    return recommended_config_yaml(rec, prov), env_line(rec)


# ------------------------------------------------------------------ layout
def _filter_options(frame: pd.DataFrame) -> dict[str, list[dict[str, Any]]]:
    def vals(col: str) -> list[Any]:
        return sorted(str(v) for v in frame[col].dropna().unique())

    ws = sorted(int(v) for v in frame[C.WORLD_SIZE].dropna().unique())
    return {
        "ws": [{"label": "all", "value": "all"}] + ui.options(ws),
        "dispatch": ui.options(vals(C.DISPATCH)),
        "mode": ui.options(vals(C.PARALLEL_MODE)),
        "backend": ui.options(vals(C.BACKEND)),
        "comm": ui.options(vals(C.COMM)),
    }


def layout(data: DashData, **query: Any) -> html.Div:
    cells = data.cells()
    q = parse_query(query, cells)
    if q.cell is None:
        return html.Div(
            [
                html.H2("Pareto"),
                ui.empty_state(
                    "No runs in the database yet.",
                    ["upload a bench_moe JSON via POST /api/v1/runs or `moedash ingest`"],
                ),
            ]
        )
    frame = data.cell_frame(q.cell)
    opts = _filter_options(frame)
    axis_opts = [{"label": ui.label(a), "value": a} for a in AXES]

    def multi(key: str, text: str) -> html.Div:
        return html.Div(
            [
                html.Label(text),
                dcc.Dropdown(
                    id=f"pareto-{key}",
                    options=opts[key],
                    value=list(getattr(q, key)),
                    multi=True,
                    placeholder="all",
                ),
            ],
            className="control",
        )

    controls = html.Div(
        [
            html.Div(
                [
                    html.Label("model · hardware · precision"),
                    dcc.Dropdown(
                        id="pareto-cell",
                        options=[{"label": c.label, "value": c.key} for c in cells],
                        value=q.cell.key,
                        clearable=False,
                    ),
                ],
                className="control wide",
            ),
            html.Div(
                [
                    html.Label("world size (GPUs)"),
                    dcc.Dropdown(
                        id="pareto-ws",
                        options=opts["ws"],
                        value="all" if q.ws is None else q.ws,
                        clearable=False,
                    ),
                ],
                className="control",
            ),
            html.Div(
                [
                    html.Label("phase"),
                    dcc.RadioItems(
                        id="pareto-phase",
                        options=[
                            {"label": "decode (CUDA graph on)", "value": "decode"},
                            {"label": "prefill (CUDA graph off)", "value": "prefill"},
                            {"label": "both", "value": "all"},
                        ],
                        value=q.phase,
                        inline=True,
                    ),
                ],
                className="control wide",
            ),
            html.Div(
                [
                    html.Label("attention"),
                    dcc.RadioItems(
                        id="pareto-attn",
                        options=[
                            {"label": "all", "value": "all"},
                            {"label": "DP", "value": "D"},
                            {"label": "TP", "value": "T"},
                        ],
                        value=q.attn,
                        inline=True,
                    ),
                ],
                className="control",
            ),
            multi("dispatch", "dispatch pattern"),
            multi("mode", "parallel mode"),
            multi("backend", "backend"),
            multi("comm", "comm"),
            html.Div(
                [
                    html.Label("x axis"),
                    dcc.Dropdown(id="pareto-x", options=axis_opts, value=q.x, clearable=False),
                ],
                className="control",
            ),
            html.Div(
                [
                    html.Label("y axis"),
                    dcc.Dropdown(id="pareto-y", options=axis_opts, value=q.y, clearable=False),
                ],
                className="control",
            ),
            html.Div(
                [
                    html.Label("scales"),
                    dcc.Checklist(
                        id="pareto-log",
                        options=[
                            {"label": "log x", "value": "x"},
                            {"label": "log y", "value": "y"},
                        ],
                        value=[a for a, on in (("x", q.logx), ("y", q.logy)) if on],
                        inline=True,
                    ),
                ],
                className="control",
            ),
        ],
        className="controls",
    )
    # The first figure comes with the page: the first paint needs no callback round
    # trip (the figure callback does not fire on page load).
    figure, status = update_figure(data, q)
    return html.Div(
        [
            dcc.Location(id="pareto-url", refresh=False),
            dcc.Store(id="pareto-point", data=q.point),
            html.H2("Pareto frontier"),
            html.P(
                "Each dot is one successful bench_moe candidate; the line is the frontier "
                "(no other candidate is both faster and higher-throughput). Click a point "
                "for its recipe and exportable config.",
                className="lead",
            ),
            controls,
            ui.loading(
                html.Div(
                    [
                        html.Div(status, id="pareto-status"),
                        dcc.Graph(
                            id="pareto-graph",
                            figure=figure,
                            config={"displaylogo": False},
                            className="pareto-graph",
                        ),
                    ]
                ),
                "pareto-loading",
            ),
            html.Div(id="pareto-detail", className="detail"),
            dcc.Download(id="pareto-download"),
        ]
    )


# ------------------------------------------------------------------ callbacks
def query_from_controls(
    cell_key: str | None,
    ws: Any,
    phase: str | None,
    attn: str | None,
    dispatch: list | None,
    mode: list | None,
    backend: list | None,
    comm: list | None,
    x: str | None,
    y: str | None,
    log: list | None,
    point: str | None = None,
) -> ParetoQuery:
    return ParetoQuery(
        cell=Cell.from_key(cell_key),
        ws=None if ws in (None, "all") else ui.as_int(ws),
        phase=phase or "decode",
        attn=attn or "all",
        dispatch=tuple(dispatch or ()),
        mode=tuple(mode or ()),
        backend=tuple(backend or ()),
        comm=tuple(comm or ()),
        x=x or C.SCORE_MS,
        y=y or C.TOKENS_PER_S_PER_GPU,
        logx="x" in (log or []),
        logy="y" in (log or []),
        point=point,
    )


def update_figure(data: DashData, q: ParetoQuery) -> tuple[go.Figure, Any]:
    """Filters -> (figure, status/empty-state children)."""
    if q.cell is None:
        return go.Figure(), ui.empty_state("Pick a model · hardware · precision.")
    frame = data.cell_frame(q.cell)
    view = pareto_view(frame, q, atomic=pareto_index(data, q.cell, frame).atomic(q))
    if view.n_cloud == 0:
        return (
            pareto_figure(view.cloud, view.frontier, q.x, q.y, logx=q.logx, logy=q.logy),
            ui.empty_state(
                f"No runs for this filter in {q.cell.label} "
                f"({view.n_matching} candidates match, none successful).",
                [f"try: {h}" for h in view.hints],
            ),
        )
    fig = pareto_figure(
        view.cloud, view.frontier, q.x, q.y, logx=q.logx, logy=q.logy, n_cloud_total=view.n_cloud
    )
    status = html.Span(
        ui.with_synthetic_note(
            data.is_synthetic(q.cell),
            f"{view.n_matching:,} candidates match the filters; "
            f"{view.n_cloud:,} successful; {len(view.frontier)} on the frontier.",
        ),
        className="status",
        **{"data-testid": "pareto-count"},
    )
    return fig, status


def pareto_index(data: DashData, cell: Cell, frame: pd.DataFrame | None = None) -> ParetoIndex:
    """The (cached) :class:`ParetoIndex` of the cell's frame (``frame``, default the
    current one), cached per frame object (``DashData.frame_cached``): an index always
    belongs to the frame it is used with, also when the store changes meanwhile. Its
    first use starts the background work of :meth:`ParetoIndex.prepare_rest`."""
    frame = data.cell_frame(cell) if frame is None else frame

    def build() -> ParetoIndex:
        index = ParetoIndex(frame)
        index.prepare_rest()
        return index

    return data.frame_cached(("pareto-index", cell), frame, build)


def point_from_click(data: DashData, cell_key: str | None, click: dict | None) -> str | None:
    """clickData -> ``"<run_id>:<candidate_index>"`` (None when it cannot be resolved)."""
    cell = Cell.from_key(cell_key)
    if cell is None or not click or not click.get("points"):
        return None
    custom = click["points"][0].get("customdata")
    key = ui.as_int(custom[0] if isinstance(custom, list) and custom else None)
    frame = data.cell_frame(cell)
    if key is None or not 0 <= key < len(frame):
        return None
    row = frame.iloc[key]
    return f"{int(row[C.RUN_ID])}:{int(row[C.CANDIDATE_INDEX])}"


def render_detail(data: DashData, cell_key: str | None, point: str | None) -> Any:
    cell = Cell.from_key(cell_key)
    if cell is None or not point:
        return html.P("Click a point to see its recipe and exportable config.", className="muted")
    row = find_point(data.cell_frame(cell), point)
    if row is None:
        return ui.empty_state(f"Candidate {point} is not in {cell.label}.")
    yaml_text, env = candidate_export(row.to_dict())
    run_id = int(row[C.RUN_ID])
    facts = {
        ui.label(c): row[c]
        for c in (
            C.BACKEND,
            C.COMM,
            C.PARALLEL_MODE,
            C.MOE_EP_SIZE,
            C.MOE_TP_SIZE,
            C.CUDA_GRAPH,
            C.NUM_TOKENS,
            C.WORLD_SIZE,
            C.DISPATCH,
            C.SCORE_MS,
            C.TOKENS_PER_S_PER_GPU,
            C.ACTIVATED_TOKENS_PER_RANK,
            C.DISPATCH_KB,
            C.STATUS,
        )
    }
    return html.Div(
        [
            html.H3(f"Candidate {row[C.CANDIDATE_INDEX]} of run {run_id}"),
            html.Div(
                [
                    html.Div(
                        [
                            ui.kv_table(facts, "pareto-facts"),
                            dcc.Link(f"all candidates of run {run_id} →", href=f"/run?id={run_id}"),
                        ],
                        className="half",
                    ),
                    html.Div(
                        [
                            html.H4("trtllm-serve config (extra_llm_api_options)"),
                            html.Pre(yaml_text, id="pareto-yaml", className="code"),
                            html.Pre(
                                env or "comm: leave AUTO (no environment variable)",
                                className="code",
                            ),
                            ui.download_button("pareto-download-btn", "Download YAML"),
                        ],
                        className="half",
                    ),
                ],
                className="row",
            ),
        ]
    )


def download_yaml(data: DashData, cell_key: str | None, point: str | None) -> dict | None:
    cell = Cell.from_key(cell_key)
    row = find_point(data.cell_frame(cell), point) if cell else None
    if row is None:
        return None
    yaml_text, _ = candidate_export(row.to_dict())
    name = f"moedash_run{int(row[C.RUN_ID])}_cand{int(row[C.CANDIDATE_INDEX])}.yaml"
    return {"content": yaml_text, "filename": name, "type": "text/yaml"}


_CONTROLS = ("cell", "ws", "phase", "attn", "dispatch", "mode", "backend", "comm", "x", "y", "log")


def register(app: dash.Dash, data: DashData) -> None:
    inputs = [Input(f"pareto-{c}", "value") for c in _CONTROLS]

    @app.callback(
        [Output(f"pareto-{k}", "options") for k in ("ws", *MULTI)]
        + [Output(f"pareto-{k}", "value") for k in ("ws", *MULTI)],
        Input("pareto-cell", "value"),
        prevent_initial_call=True,
    )
    def _cell_changed(cell_key: str | None) -> list[Any]:
        cell = Cell.from_key(cell_key)
        if cell is None:
            return [[] for _ in range(5)] + ["all", [], [], [], []]
        opts = _filter_options(data.cell_frame(cell))
        return [opts[k] for k in ("ws", *MULTI)] + ["all", [], [], [], []]

    @app.callback(
        Output("pareto-graph", "figure"),
        Output("pareto-status", "children"),
        *inputs,
        prevent_initial_call=True,
    )  # layout() drew the first figure
    def _figure(*values: Any) -> tuple[go.Figure, Any]:
        return update_figure(data, query_from_controls(*values))

    @app.callback(
        Output("pareto-point", "data"),
        Input("pareto-graph", "clickData"),
        State("pareto-cell", "value"),
        prevent_initial_call=True,
    )
    def _click(click: dict | None, cell_key: str | None) -> str | None:
        return point_from_click(data, cell_key, click) or dash.no_update

    @app.callback(
        Output("pareto-detail", "children"),
        Input("pareto-point", "data"),
        Input("pareto-cell", "value"),
    )
    def _detail(point: str | None, cell_key: str | None) -> Any:
        return render_detail(data, cell_key, point)

    @app.callback(Output("pareto-url", "search"), *inputs, Input("pareto-point", "data"))
    def _url(*values: Any) -> str:
        return query_from_controls(*values).search()

    @app.callback(
        Output("pareto-download", "data"),
        Input("pareto-download-btn", "n_clicks"),
        State("pareto-cell", "value"),
        State("pareto-point", "data"),
        prevent_initial_call=True,
    )
    def _download(n: int | None, cell_key: str | None, point: str | None) -> Any:
        return download_yaml(data, cell_key, point) if n else dash.no_update
