"""Log-axis ticks (dashboard.components.log_axis): labels read 1, 10, 100, 1k … with the
unit in the title, never plotly's bare leading digit ("300k" shown as "3")."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from analysis import columns as C
from dashboard import components as ui
from dashboard.crossover_figures import crossover_figure
from dashboard.figures import evidence_figure, path_figure


def test_wide_range_labels_powers_of_ten_with_si_suffixes() -> None:
    vals, texts, minors = ui.log_ticks(1, 300_000)
    assert texts == ["1", "10", "100", "1k", "10k", "100k", "1M"]
    assert vals == [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000]
    # minor gridlines at 2..9 of every decade, none on a labelled tick
    assert 300_000 in minors and 2 in minors and 9_000 in minors
    assert not set(minors) & set(vals)
    assert len(minors) == 8 * 6


def test_sub_one_values_read_as_decimals_not_milli() -> None:
    _, texts, _ = ui.log_ticks(0.02, 50)
    assert texts == ["0.01", "0.1", "1", "10", "100"]


def test_one_to_three_decades_label_1_2_5() -> None:
    vals, texts, minors = ui.log_ticks(30, 900)
    assert texts == ["10", "20", "50", "100", "200", "500", "1k"]
    assert 300 in minors and 200 not in minors


def test_under_a_decade_every_leading_digit_near_the_data() -> None:
    _, texts, _ = ui.log_ticks(200, 900)
    assert texts == ["100", "200", "300", "400", "500", "600", "700", "800", "900", "1k"]


def test_a_narrow_range_gets_even_round_ticks() -> None:
    vals, texts, minors = ui.log_ticks(100, 130)
    assert texts == ["100", "110", "120", "130", "140"]
    assert minors == []
    # no float noise in the values either
    assert ui.log_ticks(0.1, 0.3)[1] == ["0.1", "0.15", "0.2", "0.25", "0.3", "0.35"]


@pytest.mark.parametrize(
    ("value", "text"),
    [(1, "1"), (20, "20"), (999, "999"), (1_000, "1k"), (300_000, "300k"), (1.5e6, "1.5M"),
     (2e9, "2G"), (0.5, "0.5"), (0.001, "0.001")],
)  # fmt: skip
def test_tick_text(value: float, text: str) -> None:
    assert ui.tick_text(value) == text


@pytest.mark.parametrize("bad", [(0, 10), (-1, 10), (1, math.inf), (math.nan, 2)])
def test_log_ticks_refuses_a_non_positive_range(bad: tuple[float, float]) -> None:
    with pytest.raises(ValueError, match="positive and finite"):
        ui.log_ticks(*bad)


def test_log_axis_uses_only_positive_finite_values_of_every_array() -> None:
    props = ui.log_axis(
        "num_tokens (tokens)",
        [None, math.nan, -5, 0, 4],
        np.array([300_000], np.float32),
        pd.Series([2, None], dtype="Int64"),
    )
    assert props["type"] == "log" and props["tickmode"] == "array"
    assert props["title"] == {"text": "num_tokens (tokens)"}
    assert props["ticktext"][0] == "1" and props["ticktext"][-1] == "1M"
    assert props["minor"]["showgrid"] is True
    go.Layout(xaxis=props)  # plotly accepts every property


def test_log_axis_without_data_falls_back_to_decade_ticks() -> None:
    props = ui.log_axis("score (ms)", [], [None, -1])
    assert props == {"type": "log", "title": {"text": "score (ms)"}, "dtick": 1,
                     "exponentformat": "SI"}  # fmt: skip


def test_axis_is_linear_unless_asked() -> None:
    assert ui.axis("x (ms)", [1, 1000]) == {"type": "linear", "title": {"text": "x (ms)"}}
    assert ui.axis("x (ms)", [1, 10_000], log=True)["ticktext"] == ["1", "10", "100", "1k", "10k"]


def test_figure_builders_use_the_log_ticks() -> None:
    steps = [
        {"step": 1, "threshold_name": "t", "threshold_value": 128, "observed": 300_000,
         "answer": "yes"},
    ]  # fmt: skip
    fig = path_figure(steps)
    assert fig.layout.xaxis.type == "log"
    assert "300k" not in fig.layout.xaxis.ticktext  # not a tick: between 100k and 1M
    assert list(fig.layout.xaxis.ticktext) == ["100", "1k", "10k", "100k", "1M"]

    evidence = pd.DataFrame(
        {"axis_value": [64.0, 512.0, 8192.0], "margin_pct": [3.0, 5.0, 2.0],
         "winner": ["a", "b", "a"]}
    )  # fmt: skip
    fig = evidence_figure(evidence, C.ACTIVATED_TOKENS_PER_RANK, 256, 300, (128, 512), "t")
    assert fig.layout.xaxis.title.text == ui.label(C.ACTIVATED_TOKENS_PER_RANK)
    # 64 .. 8192: two decades, labelled 1-2-5
    assert list(fig.layout.xaxis.ticktext) == [
        "10", "20", "50", "100", "200", "500", "1k", "2k", "5k", "10k"
    ]  # fmt: skip


def test_crossover_figure_score_axis_reads_round_numbers() -> None:
    from analysis.crossovers import AXIS_VALUE, OPTION, RANK

    points = pd.DataFrame(
        {
            AXIS_VALUE: [1.0, 1.0, 64.0, 64.0],
            OPTION: ["A", "B", "A", "B"],
            C.SCORE_MS: [0.05, 0.07, 3.0, 2.0],
            RANK: [1, 2, 2, 1],
            "n_options": [2, 2, 2, 2],
        }
    )
    fig = crossover_figure(points, pd.DataFrame(), "num_tokens", "t")
    assert fig.layout.yaxis.type == "log"
    assert list(fig.layout.yaxis.ticktext) == [
        "0.01", "0.02", "0.05", "0.1", "0.2", "0.5", "1", "2", "5", "10"
    ]  # fmt: skip
