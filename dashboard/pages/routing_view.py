"""The /routing page's answer panel: summary, the two rankings side by side, the
per-configuration slowdown (table and chart) and the guide's advice next to it.

Everything shown comes from one :class:`service.routing.RoutingSkew` (the API's answer);
this module only lays it out.
"""

from __future__ import annotations

import math
from typing import Any

from dash import html

from analysis.routing_advice import Advice
from analysis.routing_skew import (
    BEYOND_NOISE,
    CONFIGURATION,
    NOISE_BAND_PCT,
    RANK_CHANGE,
    SLOWDOWN_PCT,
)
from dashboard import components as ui
from dashboard.chart_names import deployment_frame, named_graph, slice_of
from dashboard.routing_figures import slowdown_figure
from service.routing import RoutingSkew

COMPARE_COLUMNS: tuple[str, ...] = (
    CONFIGURATION,
    "balanced_rank",
    "skewed_rank",
    RANK_CHANGE,
    "balanced_score_ms",
    "skewed_score_ms",
    SLOWDOWN_PCT,
    NOISE_BAND_PCT,
    BEYOND_NOISE,
    "balanced_n_repeats",
    "skewed_n_repeats",
    "balanced_low_precision_combine",
    "skewed_low_precision_combine",
)


def headers(ans: RoutingSkew) -> dict[str, str]:
    """Column headers with units, naming the two patterns."""
    b, s = ans.balanced, ans.skewed
    return {
        CONFIGURATION: "configuration (backend · comm · mode · EP/TP · CUDA graph)",
        "balanced_rank": f"rank under {b} (1 = fastest)",
        "skewed_rank": f"rank under {s} (1 = fastest)",
        RANK_CHANGE: "rank change (+ = falls behind under skew)",
        "balanced_score_ms": f"score under {b} (ms)",
        "skewed_score_ms": f"score under {s} (ms)",
        SLOWDOWN_PCT: f"slowdown: {s} / {b} − 1 (%)",
        NOISE_BAND_PCT: "noise band (%)",
        BEYOND_NOISE: "beyond noise",
        "balanced_n_repeats": f"runs pooled ({b})",
        "skewed_n_repeats": f"runs pooled ({s})",
        "balanced_low_precision_combine": f"low-precision combine ({b})",
        "skewed_low_precision_combine": f"low-precision combine ({s})",
    }


def _num(value: Any, fmt: str = "{:.4g}", unit: str = "") -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    return fmt.format(value) + unit


def _ranking(ans: RoutingSkew, side: str) -> html.Div:
    """One pattern's ranking as a small table (rank, configuration, score)."""
    assert ans.comparison is not None
    t = ans.comparison.table
    part = t[t[f"{side}_rank"].notna()].sort_values(f"{side}_rank", kind="mergesort")
    label = ans.balanced if side == "balanced" else ans.skewed
    rows = [
        html.Tr(
            [
                html.Td(str(int(r[f"{side}_rank"]))),
                html.Td(str(r[CONFIGURATION])),
                html.Td(_num(float(r[f"{side}_score_ms"]))),
            ]
        )
        for _, r in part.iterrows()
    ]
    head = html.Tr([html.Th("rank"), html.Th("configuration"), html.Th("score (ms)")])
    return html.Div(
        [
            html.H3(f"ranking under {label}"),
            html.Table([html.Thead(head), html.Tbody(rows)], className="small"),
        ],
        className="half",
        **ui.attrs(data_testid=f"routing-ranking-{side}"),
    )


def _summary(ans: RoutingSkew) -> html.Div:
    assert ans.comparison is not None
    s = ans.comparison.summary
    best_b, best_s = s["balanced_best"] or {}, s["skewed_best"] or {}
    facts = {
        f"best under {ans.balanced}": f"{best_b.get(CONFIGURATION, '—')} "
        f"({_num(best_b.get('score_ms'), unit=' ms')})",
        f"best under {ans.skewed}": f"{best_s.get(CONFIGURATION, '—')} "
        f"({_num(best_s.get('score_ms'), unit=' ms')})",
        "winner changes under skew": s["winner_changes"],
        f"balanced pick under {ans.skewed}: slower than the best by": _num(
            s["balanced_pick_regret_pct"], "{:+.1f}", " %"
        ),
        "median slowdown (configurations measured under both)": _num(
            s["median_slowdown_pct"], "{:+.1f}", " %"
        )
        + f" over {s['n_paired']} (noise band {_num(s['median_noise_band_pct'], '{:.1f}')} %)",
        "configurations whose rank changes": s["n_rank_changes"],
    }
    versions = s["trtllm_versions"]
    if versions["balanced"] != versions["skewed"]:
        facts["TensorRT-LLM versions differ"] = (
            f"{ans.balanced}: {', '.join(versions['balanced'])}; "
            f"{ans.skewed}: {', '.join(versions['skewed'])} — the slowdown includes kernel "
            "changes, not only routing"
        )
    return html.Div(ui.kv_table(facts, "routing-summary"), className="half")


def _advice_card(a: Advice) -> html.Div:
    kind = {"indicated": "measured", "note": "synthetic"}.get(a.verdict, "muted")
    checks = [
        html.Tr(
            [
                html.Td(c.condition),
                html.Td(c.observed),
                html.Td({True: "yes", False: "no", None: "open"}[c.met]),
            ]
        )
        for c in a.checks
    ]
    title = (
        "--use_low_precision_moe_combine" if a.technique == "low_precision_combine" else a.technique
    )
    return html.Div(
        [
            html.H3([title, " ", ui.badge(a.verdict, kind)]),
            html.P(a.summary),
            html.Table(
                [
                    html.Thead(
                        html.Tr([html.Th("guide's condition"), html.Th("data"), html.Th("holds")])
                    ),
                    html.Tbody(checks),
                ],
                className="small",
            )
            if checks
            else None,
            html.Ul([html.Li(d) for d in a.details], className="notes") if a.details else None,
        ],
        className="detail",
        **ui.attrs(data_testid=f"routing-advice-{a.technique}"),
    )


def chart_where(ans: RoutingSkew) -> str:
    """``model · GPU · quant · N GPUs · phase`` of the workload."""
    q = ans.query
    return slice_of(deployment_frame(q.model, q.cell.hardware, q.quant, q.world_size, q.phase))


def chart_what(ans: RoutingSkew) -> str:
    """What the slowdown chart shows: the two patterns and the rest of the workload."""
    q = ans.query
    return (
        f"slowdown under {ans.skewed} vs {ans.balanced} at {q.num_tokens} tokens, "
        f"attention {q.attention.upper()}"
    )


def render(ans: RoutingSkew) -> Any:
    """The whole answer (or the one-pattern empty state)."""
    prov = ans.provenance
    status = html.P(
        ui.with_synthetic_note(
            ans.synthetic,
            f"patterns stored for this workload: {', '.join(ans.patterns) or 'none'}; "
            f"runs {', '.join(str(r) for r in prov['run_ids']) or '—'}; "
            f"{prov['n_candidates']} candidates; repeats: {ans.query.repeats}.",
        ),
        className="status",
        **ui.attrs(data_testid="routing-status"),
    )
    if ans.comparison is None:
        return html.Div(
            [status, ui.empty_state(ans.message or "nothing to compare", test_id="routing-empty")]
        )
    table = ans.comparison.table
    overrides: dict[str, dict[str, Any]] = {c: {"headerName": h} for c, h in headers(ans).items()}
    overrides[BEYOND_NOISE] = {
        **overrides[BEYOND_NOISE],
        "cellClassRules": {"tie-cell": "params.value === false"},
    }
    grid = ui.grid(
        "routing-grid",
        table,
        [c for c in COMPARE_COLUMNS if c in table],
        page_size=25,
        height="420px",
        col_overrides=overrides,
    )
    return html.Div(
        [
            status,
            html.Div([_summary(ans)], className="row"),
            html.Div([_ranking(ans, "balanced"), _ranking(ans, "skewed")], className="row"),
            html.Div(
                [
                    html.Div(
                        named_graph(
                            slowdown_figure(table, str(ans.balanced), str(ans.skewed)),
                            chart_what(ans),
                            chart_where(ans),
                            id="routing-slowdown",
                        ),
                        className="half",
                    ),
                    html.Div(
                        [html.H2("The guide's advanced techniques, against this data")]
                        + [_advice_card(a) for a in ans.advice],
                        className="half",
                    ),
                ],
                className="row",
            ),
            html.H2("Per configuration"),
            grid,
        ]
    )
