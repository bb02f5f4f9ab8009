"""Figure builders as plain functions: DataFrame in, figure out, no browser."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analysis import columns as C
from dashboard import figures as F
from service.frames import prepare_frame
from tests import factories


def _cloud(n: int = 6) -> pd.DataFrame:
    rows = [
        {
            C.CANDIDATE_INDEX: i,
            C.NUM_TOKENS: 2 ** (i % 4 + 6),
            C.BACKEND: ("TRTLLM", "CUTEDSL")[i % 2],
            C.SCORE_MS: 0.5 + i * 0.25,
        }
        for i in range(n)
    ]
    frame = prepare_frame(factories.make_candidates(rows))
    return frame.assign(**{F.KEY: np.arange(n)})


def _frontier_trace(fig: go.Figure) -> go.Scatter:
    (trace,) = [t for t in fig.data if str(t.name).startswith("Pareto frontier")]
    return trace


def test_pareto_figure_draws_cloud_as_webgl_and_frontier_on_top() -> None:
    cloud = _cloud()
    frontier = cloud.iloc[[0, 3]]
    fig = F.pareto_figure(cloud, frontier, C.SCORE_MS, C.TOKENS_PER_S_PER_GPU)
    cloud_traces = [t for t in fig.data if isinstance(t, go.Scattergl)]
    # every candidate drawn once: the frontier's points only by the frontier trace
    assert sum(len(t.x) for t in cloud_traces) == len(cloud) - len(frontier)
    front = _frontier_trace(fig)
    assert isinstance(front, go.Scatter) and front.mode == "lines+markers"
    assert list(front.x) == sorted(frontier[C.SCORE_MS])
    # the frontier is the last trace, so it is drawn over the cloud
    assert fig.data[-1] is front
    assert [int(k) for k in front.customdata[:, 0]] == [0, 3]


def test_pareto_figure_hover_names_the_recipe_and_units() -> None:
    cloud = _cloud(2)
    fig = F.pareto_figure(cloud, cloud.iloc[[0]], C.SCORE_MS, C.TOKENS_PER_S_PER_GPU)
    first = fig.data[0].hovertemplate
    for text in (
        "TRTLLM" if "TRTLLM" in first else "CUTEDSL",
        "NVLINK_ONE_SIDED",
        "DEP",
        "EP 8 / TP 1",
        "CUDA graph on",
        " ms",
        "tokens/s/GPU",
        "activated tokens",
    ):
        assert text in first
    assert "frontier" in _frontier_trace(fig).hovertemplate
    assert "TRTLLM" in _frontier_trace(fig).text[0] or "CUTEDSL" in _frontier_trace(fig).text[0]


def test_pareto_figure_axes_have_units_and_log_toggle() -> None:
    cloud = _cloud()
    lin = F.pareto_figure(cloud, cloud.iloc[:0], C.ACTIVATED_TOKENS_PER_RANK, C.SCORE_MS)
    log = F.pareto_figure(
        cloud, cloud.iloc[:0], C.ACTIVATED_TOKENS_PER_RANK, C.SCORE_MS, logx=True, logy=True
    )
    assert lin.layout.xaxis.title.text == "activated tokens per rank (tokens)"
    assert lin.layout.yaxis.title.text == "latency, score (ms)"
    assert lin.layout.xaxis.type == "linear" and log.layout.xaxis.type == "log"
    assert log.layout.yaxis.type == "log"


def test_pareto_figure_title_says_when_downsampled() -> None:
    cloud = _cloud()
    fig = F.pareto_figure(
        cloud, cloud.iloc[:1], C.SCORE_MS, C.TOKENS_PER_S_PER_GPU, n_cloud_total=60_000
    )
    assert "of 60,000" in fig.layout.title.text and "downsampled" in fig.layout.title.text


def test_pareto_figure_sends_typed_arrays() -> None:
    fig = F.pareto_figure(_cloud(), _cloud().iloc[:1], C.SCORE_MS, C.TOKENS_PER_S_PER_GPU)
    payload = fig.to_plotly_json()["data"][0]
    assert payload["x"]["dtype"] == "f4" and "bdata" in payload["x"]


def test_path_figure_has_one_bar_pair_per_threshold_step() -> None:
    steps = [
        {
            "step": "STEP2",
            "threshold_name": "decode_megamoe_tokens_per_rank",
            "threshold_value": 512.0,
            "observed": 768.0,
            "answer": "no -> MEGAMOE",
        },
        {
            "step": "STEP1",
            "threshold_name": None,
            "threshold_value": None,
            "observed": None,
            "answer": "EP",
        },
    ]
    fig = F.path_figure(steps)
    assert [list(t.x) for t in fig.data] == [[512.0], [768.0]]
    assert fig.layout.xaxis.type == "log"
    assert "no threshold" in F.path_figure(steps[1:]).layout.annotations[0].text


def test_evidence_figure_marks_bracket_published_and_derived() -> None:
    ev = pd.DataFrame(
        {
            "axis_value": [64.0, 128.0, 1024.0, 2048.0],
            "margin_pct": [5.0, 2.0, 4.0, 9.0],
            "winner": [
                "backend=TRTLLM",
                "backend=TRTLLM",
                "backend=MEGAMOE_CUTEDSL",
                "backend=MEGAMOE_CUTEDSL",
            ],
        }
    )
    fig = F.evidence_figure(
        ev, C.ACTIVATED_TOKENS_PER_RANK, 512.0, 362.0, (128.0, 1024.0), "decode"
    )
    names = {t.name for t in fig.data}
    assert {"backend=TRTLLM wins", "backend=MEGAMOE_CUTEDSL wins"} <= names
    by_name = {t.name: t for t in fig.data}
    bracket = by_name["crossover bracket 128–1024"]
    assert (min(bracket.x), max(bracket.x)) == (128.0, 1024.0)
    assert list(by_name["published 512"].x) == [512.0, 512.0]
    assert list(by_name["derived 362"].x) == [362.0, 362.0]
    assert fig.layout.xaxis.type == "log"
    # nothing placed in axis units: a log axis would read x=362 as 1e362
    assert not fig.layout.annotations and not fig.layout.shapes
    empty = F.evidence_figure(ev.iloc[:0], C.DISPATCH_KB, 8192.0, None, None, "x")
    assert "no comparison points" in empty.layout.annotations[0].text


def test_third_metric_is_the_one_not_on_an_axis() -> None:
    assert F.third_metric(C.SCORE_MS, C.TOKENS_PER_S_PER_GPU) == C.ACTIVATED_TOKENS_PER_RANK
    assert F.third_metric(C.ACTIVATED_TOKENS_PER_RANK, C.SCORE_MS) == C.TOKENS_PER_S_PER_GPU
