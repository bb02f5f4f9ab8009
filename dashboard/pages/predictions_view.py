"""The /predictions page's tables, from one answer of
``service.predictions.validation`` (the same dict ``GET /api/v1/predictions/validation``
serves): the held-out regret summaries, coverage and what to measure next. Pure: an
answer in, frames and Dash components out, so the parity test reads the same frames the
page draws."""

from __future__ import annotations

from typing import Any

import pandas as pd
from dash import dcc, html

from dashboard import components as ui
from dashboard.labelled import scroll_box

# (answer key, row label) of each summary table
TOKEN_ROWS = (("predicted", "predicted pick"), ("nearest", "nearest measured workload's winner"))
MODEL_ROWS = (
    ("predicted", "predicted pick (shape model)"),
    ("tree", "published decision tree"),
    ("nearest", "nearest model's winner (same workload)"),
)
STAT_COLUMNS = {
    "answer": "answer",
    "n": "queries scored (count)",
    "censored": "pick not kept by the source (count)",
    "median_regret_pct": "median regret (%)",
    "p90_regret_pct": "p90 regret (%)",
    "worst_regret_pct": "worst regret (%)",
    "wrong_picks": "wrong picks (count)",
}
NEXT_COLUMNS = {
    "world_size": "world size (GPUs)",
    "attention": "attention",
    "phase": "phase",
    "num_tokens": "num_tokens (tokens)",
    "pick": "predicted pick",
    "p_fastest": "P(pick fastest) (%)",
    "expected_regret_pct": "expected regret (%)",
    "extrapolated": "extrapolated",
    "command": "bench_moe command",
}
HELD_OUT_COLUMNS = {
    "world_size": "world size (GPUs)",
    "attention_dp": "attention DP",
    "cuda_graph": "CUDA graph",
    "num_tokens": "held-out num_tokens (tokens)",
    "pick": "predicted pick",
    "regret_pct": "regret of the pick (%)",
    "pick_censored": "pick not kept there",
    "nearest_tokens": "nearest measured num_tokens (tokens)",
    "nearest_regret_pct": "regret of the nearest answer (%)",
    "n_predicted": "scores predicted (count)",
    "n_covered": "inside the interval (count)",
    "edge": "beyond the measured range",
}


def _stats(summary: dict[str, Any], rows: tuple[tuple[str, str], ...]) -> pd.DataFrame:
    out = []
    for key, name in rows:
        got = summary.get(key) or {}
        out.append({"answer": name, **{c: got.get(c) for c in list(STAT_COLUMNS)[1:]}})
    return pd.DataFrame(out, columns=list(STAT_COLUMNS))


def token_summary(got: dict[str, Any]) -> pd.DataFrame:
    """Leave one token count out: one row per answer, :data:`STAT_COLUMNS`."""
    return _stats(got["summary"], TOKEN_ROWS)


def model_summary(got: dict[str, Any]) -> pd.DataFrame:
    """Leave one model out (the cell's GPU and quant): predicted pick, tree, nearest
    model over every workload each could be scored on, then the pick and the tree over
    the workloads both could (``paired``)."""
    summary = got["leave_one_model_out"]["summary"]
    table = _stats(summary, MODEL_ROWS)
    paired = summary.get("paired")
    if paired:
        both = _stats(paired, (("predicted", "predicted pick, paired with the tree"),
                               ("tree", "tree, paired with the predicted pick")))  # fmt: skip
        table = pd.concat([table, both], ignore_index=True)
    return table


def next_frame(got: dict[str, Any]) -> pd.DataFrame:
    """What to measure next, in the page's units (P(fastest) in %)."""
    frame = pd.DataFrame(got["measure_next"], columns=list(NEXT_COLUMNS))
    frame["p_fastest"] = 100.0 * frame["p_fastest"].astype(float)
    return frame


def coverage_pct(summary: dict[str, Any]) -> float | None:
    value = summary.get("coverage")
    return None if value is None else 100.0 * float(value)


def held_out_frame(got: dict[str, Any]) -> pd.DataFrame:
    """Every held-out token count (the download), columns of :data:`HELD_OUT_COLUMNS`."""
    return pd.DataFrame(got["items"]).reindex(columns=list(HELD_OUT_COLUMNS))


def table(frame: pd.DataFrame, headers: dict[str, str], test_id: str) -> html.Table:
    """A plain table with unit-bearing headers (numbers as :func:`ui.fmt` writes them)."""
    head = html.Thead(html.Tr([html.Th(headers[c], scope="col") for c in frame.columns]))
    body = html.Tbody(
        [html.Tr([html.Td(ui.fmt(v)) for v in row]) for row in frame.itertuples(index=False)]
    )
    return html.Table([head, body], className="data-table", **ui.attrs(data_testid=test_id))


_WRAP = {"whiteSpace": "pre-wrap", "wordBreak": "break-all"}  # a long command wraps


def next_table(frame: pd.DataFrame) -> html.Table | html.Div:
    """What to measure next, each command copyable."""
    if frame.empty:
        return ui.empty_state("Nothing to measure next: no unmeasured token count could be "
                              "predicted here.", test_id="pred-next-empty")  # fmt: skip
    cols = [c for c in NEXT_COLUMNS if c != "command"]
    head = html.Thead(html.Tr([html.Th(NEXT_COLUMNS[c], scope="col") for c in [*cols, "command"]]))
    rows = []
    for i, row in enumerate(frame.to_dict("records")):
        cmd = str(row["command"])
        cells = [html.Td(ui.fmt(row[c])) for c in cols]
        cells.append(html.Td([html.Code(cmd, id=f"pred-cmd-{i}", style=_WRAP),
                              dcc.Clipboard(target_id=f"pred-cmd-{i}", title="copy the command",
                                            className="copy")]))  # fmt: skip
        rows.append(html.Tr(cells))
    return html.Table([head, html.Tbody(rows)], className="data-table",
                      **ui.attrs(data_testid="pred-next"))  # fmt: skip


def render(got: dict[str, Any]) -> list[Any]:
    """The answer laid out: two summaries with coverage, then what to measure next."""
    conf = round(100 * float(got["confidence"]))
    lomo = got["leave_one_model_out"]["summary"]
    token_cov, model_cov = coverage_pct(got["summary"]), coverage_pct(lomo)
    out: list[Any] = [
        html.H2("Leave one token count out"),
    ]
    if got["summary"].get("n_queries"):
        out += [
            html.P(
                f"{got['summary']['n_queries']} held-out token counts of this cell, each held "
                "out of the fit and of the calibration. Regret: the pick's measured score "
                "against the measured best there."
            ),  # fmt: skip
            scroll_box(
                table(token_summary(got), STAT_COLUMNS, "pred-token-summary"),
                "leave one token count out",
            ),
            html.P(
                f"Coverage of the {conf} % intervals: {ui.fmt(token_cov)} % of held-out scores.",
                **ui.attrs(data_testid="pred-token-coverage"),
            ),  # fmt: skip
        ]
    else:
        out.append(ui.empty_state("No token count of this cell could be held out and predicted "
                                  "(too few configurations measured at 3 token counts).",
                                  test_id="pred-empty"))  # fmt: skip
    out.append(html.H2("Leave one model out"))
    if lomo.get("n_workloads", 0):
        out += [
            html.P(
                f"{lomo['n_workloads']} workloads of the models stored on this GPU and quant, "
                "each model held out in turn and answered by the shape model fitted on the "
                "others."
            ),  # fmt: skip
            scroll_box(
                table(model_summary(got), STAT_COLUMNS, "pred-model-summary"),
                "leave one model out",
            ),
            html.P(
                f"Coverage of the {conf} % intervals: {ui.fmt(model_cov)} % of held-out scores.",
                **ui.attrs(data_testid="pred-model-coverage"),
            ),  # fmt: skip
        ]
    else:
        out.append(ui.empty_state("One model stored on this GPU and quant: nothing to hold out.",
                                  test_id="pred-model-empty"))  # fmt: skip
    out += [
        html.H2("What to measure next"),
        html.P("Unmeasured token counts ranked by the expected regret of their predicted pick."),
        scroll_box(next_table(next_frame(got)), "what to measure next"),
    ]
    return out
