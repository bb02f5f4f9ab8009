"""The /planner result: the plan document of ``service.planner.run_plan`` as Dash
components (verdict, best plan, pipeline constraints, co-located comparison, Te fits,
the na sweep and timeline charts, the alternatives grid).

Numbers are formatted here only; every figure and row comes from the document or the
pure builders in ``dashboard.planner_figures``.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
from dash import html

from analysis.planner.plans import ALTERNATIVE_COLUMNS
from dashboard import components as ui
from dashboard import planner_figures as PF
from dashboard.chart_names import named_graph
from dashboard.labelled import scroll_box

ALT_HEADERS = {
    "attention_gpu": "attention GPU", "expert_gpu": "expert GPU", "tpa": "TP attn",
    "tpe": "TP expert", "na": "na", "m": "m", "experts_per_node": "experts/node",
    "expert_nodes": "expert nodes", "batch": "batch B", "ba": "ba", "be": "be",
    "ta_ms": "Ta (ms)", "te_ms": "Te (ms)", "tc_ms": "Tc (ms)", "tbt_ms": "TBT (ms)",
    "t_total_ms": "T total (ms)", "throughput": "tokens/s", "gpus": "GPUs",
    "cost": "cost", "tput_per_gpu": "tokens/s/GPU", "tput_per_cost": "tokens/s/cost",
    "tput_per_watt": "tokens/s/W", "extrapolated": "Te extrapolated", "balance_met": "Ta≈Te",
    "comm_hidden_met": "Tc<Tf",
    "depth_met": "m deep enough", "broken": "constraints broken",
}  # fmt: skip


def fmt(value: Any) -> str:
    """``ui.fmt`` with thousands separators for big numbers (tokens/s reads 88,973)."""
    if (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and abs(value) >= 1e4
    ):
        return f"{value:,.0f}"
    return ui.fmt(value)


def plan_slice(payload: dict[str, Any]) -> str:
    """What the plan's charts show, for their titles and PNG names: ``model · attention
    GPU + expert GPU · N GPUs · decode`` (the planner plans decode), or ``model · the
    GPUs searched`` without a best plan."""
    model = str((payload.get("model") or {}).get("name") or "")
    best = payload.get("best")
    if not best:
        gpus = ", ".join(str(g["name"]) for g in payload.get("gpus") or [])
        return " · ".join(p for p in (model, gpus, "decode") if p)
    pair = (
        str(best["attention_gpu"])
        if best["attention_gpu"] == best["expert_gpu"]
        else f"{best['attention_gpu']} attention + {best['expert_gpu']} experts"
    )
    return f"{model} · {pair} · {best['gpus']} GPUs · decode"


def _table(
    rows: list[dict[str, Any]], test_id: str, row_class: Any = None, hide: tuple[str, ...] = ()
) -> html.Div:
    """A small table in its own horizontal scroll box (narrow windows stay usable)."""
    return scroll_box(_plain_table(rows, test_id, row_class, hide), test_id.replace("-", " "))


def _plain_table(
    rows: list[dict[str, Any]], test_id: str, row_class: Any, hide: tuple[str, ...]
) -> html.Table:
    if not rows:
        return html.Table(className="small", **ui.attrs(data_testid=test_id))
    cols = [c for c in rows[0] if c not in hide]
    body = [
        html.Tr(
            [html.Td(fmt(r[c]), className=row_class(r, c) if row_class else None) for c in cols]
        )
        for r in rows
    ]
    return html.Table(
        [html.Thead(html.Tr([html.Th(c) for c in cols])), html.Tbody(body)],
        className="small",
        **ui.attrs(data_testid=test_id),
    )


def best_facts(best: dict[str, Any], slo: float) -> dict[str, Any]:
    """The best plan's facts as label -> text (the "Best plan" table)."""
    return {
        "attention": f"{best['na']} node(s) × {best['tpa']} {best['attention_gpu']} "
        f"(TP {best['tpa']}, DP {best['na']})",
        "experts": f"{best['expert_nodes']} node(s) × {best['tpe']} {best['expert_gpu']} "
        f"({best['experts_per_node']} expert(s) per node, TP {best['tpe']})",
        "micro-batches m": best["m"],
        "batch B / ba / be (sequences, tokens)": f"{best['batch']} / {best['ba']} / "
        f"{ui.fmt(best['be'])}",
        "Ta / Te / Tc (ms)": f"{best['ta_ms']:.3f} / {best['te_ms']:.3f} / {best['tc_ms']:.3f}",
        "TBT (ms)": f"{best['tbt_ms']:.1f} (SLO {ui.fmt(float(slo))})",
        "throughput (tokens/s)": fmt(best["throughput"]),
        "GPUs (attention + expert)": f"{best['gpus']} ({best['attention_gpus']} + "
        f"{best['expert_gpus']})",
        "cost (units)": fmt(best["cost"]),
        "tokens/s per GPU": fmt(best["tput_per_gpu"]),
        "tokens/s per cost unit": fmt(best["tput_per_cost"]),
        "tokens/s per W": best["tput_per_watt"],
        "attention memory (GB used / usable)": f"{best['attention_mem_gb']:.1f} / "
        f"{best['attention_cap_gb']:.1f}",
        "expert memory (GB used / usable)": f"{best['expert_mem_gb']:.1f} / "
        f"{best['expert_cap_gb']:.1f}",
        "balance na ≈ k1·E/(x·k3·K)": best["na_balance"],
        "Ta / Te model": f"{best['attention_fit']} / {best['expert_fit']}",
    }


def _constraint_class(row: dict[str, Any], col: str) -> str | None:
    if col != "status":
        return None
    return "verdict-agrees" if row["met"] else "verdict-disagrees"


def _fit_class(row: dict[str, Any], col: str) -> str | None:
    if col != "source":
        return None
    return "verdict-agrees" if row["source"] == "fit" else None


def render(payload: dict[str, Any], compare: tuple[int, int] = (1, 2)) -> html.Div:
    """Result children: verdict, best plan, constraints, co-located, fits, charts, table,
    and the plans ranked ``compare`` side by side."""
    best = payload.get("best")
    colo = payload.get("colocated")
    where = plan_slice(payload)
    gain = payload.get("disaggregation_gain")
    pays = gain is None or gain >= 1
    verdict = html.P(
        [html.Strong(payload["verdict"])],
        className="verdict-agrees" if best and pays else "verdict-disagrees",
        **ui.attrs(data_testid="planner-verdict"),
    )
    warnings = (
        html.Div(
            [html.Strong("Warnings"), html.Ul([html.Li(w) for w in payload["warnings"]])],
            className="verdict-disagrees",
            **ui.attrs(data_testid="planner-warnings"),
        )
        if payload.get("warnings")
        else None
    )
    status = html.P(
        f"{payload['evaluations']} plan evaluations (estimate "
        f"{payload['estimated_evaluations']}, limit "
        f"{payload['limits']['max_evaluations']}){' — TRUNCATED' if payload['truncated'] else ''}"
        f" · {payload['n_alternatives']} plans offered, "
        f"{payload.get('n_broken_plans', 0)} breaking a pipeline constraint, searched in "
        f"{payload['elapsed_ms'] / 1e3:.2f} s · model {payload['model']['name']} "
        f"· {payload['mode']} over {', '.join(g['name'] for g in payload['gpus'])}",
        className="status",
        id="plan-status",
    )
    fits = html.Div(
        [
            html.H2("Expert time Te (per expert, one GPU)"),
            html.Div(
                [html.Strong("Which measurements feed the fit: ")]
                + [html.P(line) for line in PF.fit_rule_lines(payload["expert_fits"])],
                className="status",
                **ui.attrs(data_testid="planner-fit-rule"),
            )
            if PF.fit_rule_lines(payload["expert_fits"])
            else None,
            _table(PF.fit_rows(payload["expert_fits"]), "planner-fits", _fit_class),
            *[
                named_graph(
                    PF.fit_points_figure(f),
                    f"Te fit on {f.get('gpu')}",
                    where,
                    id=f"plan-fit-{f['gpu']}",
                )
                for f in payload["expert_fits"]
                if f.get("points")
            ],
        ]
    )
    colo_rows = PF.comparison_rows(best, colo)
    colo_block = html.Div(
        [
            html.H2("Co-located baseline (fewest whole nodes of one GPU type, paper's)"),
            _table(colo_rows, "planner-colocated")
            if colo
            else ui.empty_state(
                "No co-located deployment on these GPUs meets memory and the SLO.",
                test_id="planner-no-colocated",
            ),
            html.P(
                f"co-located: {colo['replicas']} attention replica(s) of TP "
                f"{colo['tp_attention']} on {colo['gpus']} {colo['gpu']}, every GPU holding "
                f"experts ({fmt(colo.get('be'))} tokens per expert"
                f"{', Te extrapolated' if colo.get('extrapolated') else ''}); no ping-pong, "
                "TBT = L·(Ta + Te + 2Tc)",
                className="status",
            )
            if colo
            else None,
            html.Details(
                [
                    html.Summary("A fair baseline: both sides pay the same modelled costs"),
                    html.Ul([html.Li(c) for c in payload.get("colocated_costs") or []]),
                ],
                **ui.attrs(data_testid="planner-colocated-costs"),
            ),
        ]
    )
    if best is None:
        binding = payload.get("binding") or {}
        return html.Div(
            [
                verdict,
                warnings,
                status,
                ui.empty_state(
                    f"No disaggregated plan is offered: {binding.get('label', 'nothing fits')}"
                    f" — {binding.get('message', '')}",
                    HINTS.get(str(binding.get("reason")), []),
                    test_id="planner-no-plan",
                ),
                broken_block(payload),
                colo_block,
                fits,
                html.Ul([html.Li(n) for n in payload["notes"]], className="notes"),
            ]
        )
    alts = payload["alternatives"]
    alt_frame = pd.DataFrame(alts, columns=list(ALTERNATIVE_COLUMNS))
    overrides = {c: {"headerName": h} for c, h in ALT_HEADERS.items()}
    return html.Div(
        [
            verdict,
            warnings,
            status,
            near_block(payload["near_best"]),
            serving_block(payload.get("deployment") or {}),
            sensitivity_block(payload.get("sensitivity") or []),
            html.Div(
                [
                    html.Div(
                        [
                            html.H2("Best plan"),
                            ui.kv_table(
                                best_facts(best, payload["workload"]["slo_tbt_ms"]), "planner-best"
                            ),
                        ],
                        className="half",
                    ),
                    html.Div(
                        [
                            html.H2("Pipeline constraints"),
                            _table(
                                PF.constraint_rows(best["constraints"]),
                                "planner-constraints",
                                _constraint_class,
                                hide=("met",),
                            ),
                            html.P(
                                "Only plans meeting all three are offered; the others are "
                                "listed apart below with the constraint they break.",
                                className="status",
                            ),
                            colo_block,
                        ],
                        className="half",
                    ),
                ],
                className="row",
            ),
            fits,
            html.Div(
                [
                    html.Div(
                        named_graph(
                            PF.na_sweep_figure(payload["na_sweep"], best["na"]),
                            f"throughput per GPU against na (m = {best['m']})",
                            where,
                            id="plan-sweep",
                        ),
                        className="half",
                    ),
                    html.Div(
                        named_graph(
                            PF.timeline_figure(payload["timeline"]),
                            f"ping-pong timeline of one layer (m = {best['m']}, Tf = "
                            f"{best['tf_ms']:.3f} ms)",
                            where,
                            id="plan-timeline",
                        ),
                        className="half",
                    ),
                ],
                className="row",
            ),
            html.H2(
                f"Top {len(alts)} of {payload['n_alternatives']} plans offered (each meets "
                "every pipeline constraint), by tokens/s per cost unit"
            ),
            ui.grid(
                "plan-alts",
                alt_frame,
                list(ALTERNATIVE_COLUMNS),
                page_size=20,
                height="430px",
                col_overrides=overrides,
            ),
            compare_block(alts, compare),
            broken_block(payload),
            html.Ul([html.Li(n) for n in payload["notes"]], className="notes"),
        ]
    )


HINTS: dict[str, list[str]] = {
    "tp_choice": ["choose TP sizes up to the GPUs per node (GPU figures)"],
    "memory": ["add GPUs with more memory, more TP, or fewer experts per node"],
    "gpu_count": ["raise the GPU cap per plan"],
    "slo": ["relax the TBT SLO or shorten the sequence length"],
    "te_range": ["measure the sweeps over more token counts, or fit over another range"],
    "pipeline": [
        "allow more micro-batches (Nm): m ≥ 2·(1 + Tc/Tf)",
        "longer sequences or faster links make Tc < Tf",
    ],
}


def serving_block(deployment: dict[str, Any]) -> html.Div:
    """Which stack runs the plan (and the co-located alternative), from the exported
    deployment's ``serving`` (service.planner_serving)."""
    serve = deployment.get("serving")
    if not serve:
        return html.Div()
    stacks = serve["disaggregated"]["stacks"]
    colo = serve.get("colocated")
    items = [
        html.Li(
            "disaggregated: "
            + "; ".join(f"{s['stack']} ({s['status']})" for s in stacks)
            + f". {serve['disaggregated']['not_supported_by']}."
        )
    ]
    if colo:
        items.append(
            html.Li(
                f"co-located: {colo['stack']} on {colo['gpus']} {colo['gpu']} "
                f"({', '.join(f'{k}={v}' for k, v in colo['settings'].items())})"
            )
        )
    return html.Div(
        [
            html.Strong(f"Serve with (recommended: {serve['recommended']}): "),
            html.Ul(items),
            html.P("Per-role settings are in the deployment download.", className="status"),
        ],
        **ui.attrs(data_testid="planner-serving"),
    )


def broken_block(payload: dict[str, Any]) -> html.Div | html.Details:
    """Plans that fit memory and the SLO but break a ping-pong pipeline constraint: not
    offered, listed apart with the constraints they break."""
    rows = payload.get("broken_plans") or []
    if not rows:
        return html.Div()
    keep = ("broken", "attention_gpu", "expert_gpu", "tpa", "tpe", "na", "m", "experts_per_node",
            "gpus", "tbt_ms", "ta_ms", "te_ms", "tc_ms", "tput_per_cost")  # fmt: skip
    shown = [{ALT_HEADERS.get(k, k): r.get(k) for k in keep} for r in rows[:10]]
    return html.Details(
        [
            html.Summary(
                f"{payload.get('n_broken_plans', len(rows))} plan(s) break a ping-pong "
                "pipeline constraint: not offered (the 10 best by tokens/s per cost)"
            ),
            _table(shown, "planner-broken"),
        ],
        **ui.attrs(data_testid="planner-broken-plans"),
    )


def compare_block(alts: list[dict[str, Any]], ranks: tuple[int, int]) -> html.Div:
    """Two of the listed plans (ranks from 1) side by side, metric by metric."""
    rows = PF.side_by_side_rows(alts, *ranks)
    if not rows:
        return html.Div()
    return html.Div(
        [
            html.H2(f"Plans #{ranks[0]} and #{ranks[1]} side by side"),
            _table(rows, "planner-compare"),
        ]
    )


def near_block(near: dict[str, Any]) -> html.Div:
    """How many plans are within ``near['pct']`` % of the best, their GPU spread and the
    smallest such deployment (service.planner_near.near_best)."""
    small = near.get("smallest")
    if not near.get("count") or small is None:
        return html.Div()
    text = (
        f"{near['count']} plan(s) within {near['pct']:g} % of the best tokens/s per cost "
        f"({fmt(near['tput_per_cost_min'])}–{fmt(near['tput_per_cost_max'])} tokens/s per "
        f"cost unit) span {near['gpus_min']}–{near['gpus_max']} GPUs. Smallest: "
        f"{small['gpus']} GPUs — {small['na']}× {small['attention_gpu']} TP{small['tpa']} "
        f"attention, {small['expert_gpu']} TP{small['tpe']} experts "
        f"({small['experts_per_node']} per node), m = {small['m']}, batch {small['batch']}, "
        f"TBT {fmt(small['tbt_ms'])} ms."
    )
    return html.Div(html.P(text), **ui.attrs(data_testid="planner-near-best"))


def sensitivity_block(rows: list[dict[str, Any]]) -> html.Div:
    """The ±20 % price / sequence-length re-plans (service.planner_sensitivity)."""
    if not rows:
        return html.Div()
    shown = [
        {
            "variant": r["variant"],
            "same plan": "yes" if r["same_plan"] else "no",
            "best plan then": r["plan"],
            "GPUs": r["gpus"],
            "tokens/s per cost unit": r["tput_per_cost"],
        }
        for r in rows
    ]
    return html.Div(
        [
            html.H2("Sensitivity: the best plan at ±20 % price and sequence length"),
            _table(shown, "planner-sensitivity"),
        ]
    )
