"""The /history and /compare figure builders as plain functions (DataFrame in, figure out)
and the two pages' forms <-> URL, with hand-checkable answers."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis import columns as C
from dashboard import history_figures as HF
from dashboard.app import parse_search
from dashboard.pages import compare_form as CF
from dashboard.pages import history_form as HFm

V = "version"


def _points() -> pd.DataFrame:
    return pd.DataFrame(
        {
            V: ["1.2.0rc28", "1.2.0rc27", "1.2.0rc27", "1.2.0rc28", "1.2.0rc9"],
            "series": ["a", "a", "b", "b", "a"],
            C.SCORE_MS: [2.0, 1.0, 10.0, 12.0, float("nan")],
            "spread": [0.1, None, 0.05, 0.0, 0.1],
        }
    )


def test_history_figure_orders_versions_as_given_and_draws_one_line_per_series() -> None:
    order = ["1.2.0rc9", "1.2.0rc27", "1.2.0rc28"]
    fig = HF.history_figure(_points(), x_col=V, series_col="series", order=order, title="t")
    assert [t.name for t in fig.data] == ["a", "b"]
    a, b = fig.data
    # the version without a score (rc9) is left out of the axis and the line
    assert list(fig.layout.xaxis.categoryarray) == ["1.2.0rc27", "1.2.0rc28"]
    assert list(a.x) == ["1.2.0rc27", "1.2.0rc28"] and list(a.y) == [1.0, 2.0]
    assert list(b.y) == [10.0, 12.0]
    # scores span 12x: log axis with the unit in its title
    assert fig.layout.yaxis.type == "log"
    assert fig.layout.yaxis.title.text == "latency, score (ms)"
    assert "version" in fig.layout.xaxis.title.text
    assert fig.layout.title.text == "t"


def test_history_figure_spread_error_bars_and_linear_axis_for_a_narrow_range() -> None:
    pts = _points()
    narrow = pts[pts["series"] == "a"]
    fig = HF.history_figure(narrow, x_col=V, series_col="series", spread_col="spread")
    (a,) = fig.data
    # +-10 % of 2.0 ms at rc28; unknown spread at rc27 -> no bar
    assert list(a.error_y.array) == pytest.approx([0.0, 0.2])
    assert fig.layout.yaxis.type == "linear"
    # a version the order does not name still shows, after the named ones
    fig2 = HF.history_figure(pts, x_col=V, series_col="series", order=["1.2.0rc28"])
    assert list(fig2.layout.xaxis.categoryarray) == ["1.2.0rc28", "1.2.0rc27"]


def test_history_figure_empty_says_so() -> None:
    fig = HF.history_figure(pd.DataFrame(), x_col=V, series_col="s", empty="upload two runs")
    assert fig.layout.annotations[0].text == "upload two runs"
    nan = pd.DataFrame({V: ["x"], "s": ["a"], C.SCORE_MS: [float("nan")]})
    assert HF.history_figure(nan, x_col=V, series_col="s").layout.annotations


def test_frontier_overlay_one_step_trace_per_version_sorted_by_latency() -> None:
    fr = pd.DataFrame(
        {
            V: ["b", "a", "a", "b"],
            C.SCORE_MS: [1.0, 2.0, 1.0, 0.5],
            C.TOKENS_PER_S_PER_GPU: [900.0, 1000.0, 500.0, 400.0],
            C.NUM_TOKENS: [256, 1024, 128, 64],
        }
    )
    fig = HF.frontier_overlay_figure(fr, version_col=V, order=["a", "b"], title="front")
    assert [t.name for t in fig.data] == ["a", "b"]
    a, b = fig.data
    assert list(a.x) == [1.0, 2.0] and list(a.y) == [500.0, 1000.0]
    assert list(b.x) == [0.5, 1.0] and list(b.customdata) == [64.0, 256.0]
    assert a.line.shape == "hv" and a.line.color != b.line.color
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    assert "ms" in fig.layout.xaxis.title.text and "tokens/s/GPU" in fig.layout.yaxis.title.text
    assert fig.layout.legend.title.text == "TensorRT-LLM version"
    assert HF.frontier_overlay_figure(fr.iloc[:0], version_col=V).layout.annotations


def test_version_colors_newest_darkest_and_distinct() -> None:
    colors = HF.version_colors(["a", "b", "c"])
    assert list(colors) == ["a", "b", "c"] and len(set(colors.values())) == 3
    assert HF.version_colors(["only"]) == {"only": HF.version_colors(["x", "only"])["only"]}
    assert HF.version_colors([]) == {}


def test_change_figure_one_trace_per_verdict_and_threshold_lines() -> None:
    table = pd.DataFrame(
        {
            C.NUM_TOKENS: [64, 128, 256, 512],
            "change_pct": [12.0, -8.0, 1.0, None],
            "verdict": ["regression", "improvement", "unchanged", "newly_failing"],
        }
    )
    fig = HF.change_figure(table, change_col="change_pct", verdict_col="verdict", threshold_pct=5)
    assert [t.name for t in fig.data] == ["regression", "improvement", "unchanged"]
    assert fig.data[0].marker.color == HF.VERDICT_COLORS["regression"]
    assert sorted(s.y0 for s in fig.layout.shapes) == [-5, 5]
    assert fig.layout.xaxis.type == "log" and "(%)" in fig.layout.yaxis.title.text
    empty = HF.change_figure(
        table.iloc[3:], change_col="change_pct", verdict_col="verdict", threshold_pct=5
    )
    assert empty.layout.annotations


# ------------------------------------------------------------------ forms <-> URL
def test_compare_form_round_trips_and_names_its_csv() -> None:
    form = CF.Form(
        base="1.2.0rc27",
        head="1.2.0rc28",
        model="deepseek_v4_pro",
        hardware="GB300",
        quant="NVFP4",
        world_size=8,
        phase="decode",
        threshold_pct=2.5,
    )
    assert form.search() == (
        "?base=1.2.0rc27&head=1.2.0rc28&model=deepseek_v4_pro&hardware=GB300&quant=NVFP4"
        "&world_size=8&phase=decode&threshold_pct=2.5"
    )
    assert CF.parse_query(parse_search(form.search())) == form
    assert form.api_href("csv") == (
        "/api/v1/compare?base=1.2.0rc27&head=1.2.0rc28&model=deepseek_v4_pro&hardware=GB300"
        "&quant=NVFP4&world_size=8&phase=decode&threshold_pct=2.5&repeats=median&format=csv"
    )
    assert form.filename() == (
        "compare-deepseek_v4_pro-gb300-nvfp4-ws8-decode-1.2.0rc27-vs-1.2.0rc28.csv"
    )
    assert CF.Form(base="3", head="7").filename() == "compare-all-models-all-gpus-3-vs-7.csv"


def test_compare_form_odd_values_fall_back() -> None:
    odd = CF.make_form("", "all", "m", "gb300", "all", "eight", "both", "all", "-3", "mean")
    assert odd == CF.Form(model="m", hardware="GB300")
    assert CF.threshold("nan") == CF.DEFAULT_THRESHOLD
    assert CF.threshold("1e9") == CF.DEFAULT_THRESHOLD
    assert CF.threshold(["0"]) == 0.0
    # the default threshold and repeats stay out of the URL
    assert "threshold" not in CF.Form(base="1").search()


def test_history_form_round_trips() -> None:
    form = HFm.Form(
        model="m",
        hardware="GB300",
        quant="NVFP4",
        world_size=8,
        phase="prefill",
        num_tokens=256,
        config="TRTLLM · NVLINK_ONE_SIDED · DEP",
        base="1.2.0rc27",
        head="1.2.0rc28",
        repeats="latest",
    )
    assert HFm.parse_query(parse_search(form.search())) == form
    assert form.complete() and not HFm.Form(model="m").complete()
    # best per workload and median are the defaults and stay out of the URL
    assert HFm.Form(model="m").search() == "?model=m"
    assert HFm.make_form(phase="both", num_tokens="many", config="") == HFm.Form()
    assert form.filename("frontier") == "history-frontier-m-gb300-nvfp4-ws8-prefill"
