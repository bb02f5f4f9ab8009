"""The Recommend page's blocks, each laid out from a service answer (no data access)."""

from __future__ import annotations

from typing import Any

import pandas as pd
from dash import dcc, html

from analysis import columns as C
from analysis.concurrency import TokenCount
from analysis.export import coverage_text
from analysis.identity import N_REPEATS, SCORE_SPREAD
from analysis.measured import RANK
from analysis.thresholds import GuideCheck
from analysis.tree import Recommendation
from dashboard import components as ui
from dashboard.chart_names import file_stem, named_figure, slice_of
from dashboard.figures import evidence_figure
from dashboard.labelled import scroll_box
from dashboard.pages.thresholds_view import UNITS
from service.export import ExportAnswer
from service.recommend import RecommendationAnswer

_MEASURED_COLUMNS = (
    RANK,
    C.BACKEND,
    C.COMM,
    C.PARALLEL_MODE,
    C.SCORE_MS,
    N_REPEATS,
    SCORE_SPREAD,
    C.TOKENS_PER_S_PER_GPU,
    C.RUN_ID,
    C.CANDIDATE_INDEX,
)
_MEASURED_HEADERS = {
    C.SCORE_MS: "score (ms; median over repeats)",
    N_REPEATS: "runs",
    SCORE_SPREAD: "spread (%)",
}
_THRESHOLD_COLUMNS = (
    "name",
    "unit",
    "published",
    "derived",
    "bracket_lo",
    "bracket_hi",
    "status",
    "n_workloads",
    "accuracy",
    "verdict",
)


def path_list(rec: Recommendation) -> html.Ol:
    """The tree's decisions in order, each threshold next to the observed value."""
    items = []
    for s in rec.path:
        parts: list[Any] = [
            html.Span(s.step, className="step"),
            f" {s.question} → ",
            html.Strong(s.answer),
        ]
        if s.threshold_name is not None and s.observed is not None:
            parts.append(
                html.Span(
                    f"  {s.threshold_name}: observed {ui.fmt(s.observed)} vs "
                    f"threshold {ui.fmt(s.threshold_value)}",
                    className="threshold",
                )
            )
        items.append(html.Li(parts))
    return html.Ol(items, className="path", **ui.attrs(data_testid="rec-path"))


def summary(rec: Recommendation) -> html.Div:
    """The tree's pick as a facts table, with its notes."""
    comm = (
        f"{rec.comm} (set TRTLLM_FORCE_COMM_METHOD)"
        if rec.force_comm
        else f"AUTO (expected: {rec.expected_comm})"
    )
    facts = {
        "MoE parallelism": f"{rec.parallel_mode} (EP {rec.moe_ep_size} × TP {rec.moe_tp_size})",
        "backend": rec.backend,
        "communication": comm,
        "phase": rec.phase,
        "activated tokens per rank (tokens)": rec.activated_tokens_per_rank,
        "dispatch (KiB)": rec.dispatch_kb,
        "coverage": coverage_text(rec),
    }
    return html.Div(
        [
            ui.kv_table(facts, "rec-summary"),
            html.Ul([html.Li(n) for n in rec.notes], className="notes") if rec.notes else None,
        ]
    )


def conflicts_block(lines: list[str]) -> Any:
    """Where the stored measurements contradict the hand tables for this hardware
    (``service.capabilities.conflict_lines``, the API's ``capability_conflicts``)."""
    if not lines:
        return None
    return html.Div(
        [
            html.H3("Capabilities: the data contradicts the hand table"),
            html.Ul(
                [html.Li(x) for x in lines],
                className="notes",
                **ui.attrs(data_testid="rec-conflicts"),
            ),
        ]
    )


def measured_block(ans: RecommendationAnswer, asked_tokens: int) -> Any:
    """The measured best at the nearest workload and its runners-up, or an empty state
    saying what is missing."""
    dep, pick = ans.deployment, ans.measured
    if pick is None or ans.top.empty:
        attention = "DP" if dep.attention_dp else "TP"
        return ui.empty_state(
            f"No measured candidates for {dep.model} · {dep.hardware} · {dep.quant} at "
            f"world size {dep.world_size}, attention {attention}, {ans.tree.phase}.",
            [
                "upload a bench_moe sweep for this deployment",
                "or change world size / attention / phase to one the Overview lists",
            ],
            test_id="rec-no-data",
        )
    rows = [
        html.Tr([html.Td(_cell(r, c)) for c in _MEASURED_COLUMNS])
        for r in ans.top.to_dict("records")
    ]
    routing = ans.routing.label if ans.routing is not None else "not recorded"
    pooled = "median over repeat runs" if ans.repeats == "median" else "latest run only"
    return html.Div(
        [
            html.P(
                [
                    f"Nearest measured workload: num_tokens = {pick.measured_num_tokens} "
                    f"(asked {asked_tokens}). Routing: {routing}. Repeats: {pooled}. ",
                    html.Strong(verdict_text(ans), **ui.attrs(data_testid="rec-verdict")),
                ]
            ),
            _scroll(
                html.Table(
                    [
                        html.Thead(
                            html.Tr(
                                [
                                    html.Th(_MEASURED_HEADERS.get(c) or ui.label(c))
                                    for c in _MEASURED_COLUMNS
                                ]
                            )
                        ),
                        html.Tbody(rows),
                    ],
                    className="small",
                    **ui.attrs(data_testid="rec-measured"),
                ),
                "measured best and runners-up",
            ),
            confidence_block(ans),
        ]
    )


def confidence_block(ans: RecommendationAnswer) -> Any:
    """The confidence panel (``service.recommend_confidence``, the API's ``confidence``):
    measured at the asked workload or not, the plain verdict and why; between two
    measured counts, both neighbours -- and when they disagree, the crossover bracket
    and the bench_moe command that settles it."""
    panel = ans.confidence
    if panel is None:
        return html.Div()
    items: list[Any] = [
        html.Li(
            "measured at the asked num_tokens"
            if panel.measured
            else "not measured at the asked num_tokens (the pick rests on its neighbours)"
        ),
        html.Li(["verdict: ", html.Strong(panel.verdict)]),
        html.Li(f"why: {panel.note}"),
    ]
    for n in panel.neighbours:
        items.append(
            html.Li(
                f"measured neighbour: {n.num_tokens} tokens -> {n.pick} "
                f"({n.score_ms:.3g} ms, {n.verdict})"
            )
        )
    if panel.crossover is not None:
        lo, hi = panel.crossover
        items.append(html.Li(f"crossover between {lo} and {hi} tokens"))
    body: list[Any] = [html.H3("Confidence"), html.Ul(items)]
    if panel.command:
        body += [
            html.P("The bench_moe command that measures the asked workload:", className="muted"),
            html.Pre(panel.command, className="code", **ui.attrs(data_testid="rec-command")),
        ]
    return html.Div(body, **ui.attrs(data_testid="rec-confidence"))


def _scroll(table: html.Table, name: str) -> html.Div:
    """A wide table scrolls inside its own box, so a narrow window (800 px) does not
    scroll the whole page sideways."""
    return scroll_box(table, name)


def _cell(row: dict[str, Any], col: str) -> str:
    value = row.get(col)
    if col == SCORE_SPREAD and value is not None and pd.notna(value):
        return ui.fmt(100.0 * float(value))
    return ui.fmt(value)


def verdict_text(ans: RecommendationAnswer) -> str:
    """Whether the data agree with the tree at the measured workload, backend and comm
    (the agreement API's row for that workload), with the regret of following the tree."""
    row = ans.agreement
    if row is None:
        return "No agreement row for this workload."
    tree = f"{row['tree_backend']} / {row['tree_expected_comm']}"
    best = f"{row['best_backend']} / {row['best_comm']}"
    if row["agrees"]:
        return f"The data agree with the tree (backend and comm): {best}."
    parts = []
    if not row["backend_agrees"]:
        parts.append("backend")
    if not row["comm_agrees"]:
        parts.append("comm")
    regret = row.get("regret_pct")
    cost = (
        f" Following the tree costs {ui.fmt(float(regret))} % (regret)."
        if regret is not None and pd.notna(regret)
        else " The tree's pick was not measured here (regret unknown)."
    )
    return (
        f"The data disagree on the {' and '.join(parts)}: the tree at num_tokens = "
        f"{row[C.NUM_TOKENS]} runs {tree}, the fastest measured is {best}.{cost}"
    )


def workload_block(tokens: TokenCount | None, num_tokens: int) -> html.P:
    """The num_tokens the answer uses and, when it was computed from the serving load,
    the formula."""
    if tokens is None:
        return html.P(
            f"num_tokens = {num_tokens} (as given).", **ui.attrs(data_testid="rec-workload")
        )
    notes = " ".join(tokens.notes)
    return html.P(
        [html.Strong(f"num_tokens = {tokens.num_tokens}"), f" — {tokens.formula}. {notes}"],
        **ui.attrs(data_testid="rec-workload"),
    )


def export_block(
    export: ExportAnswer | str | None, prefix: str, title: str, launch: bool = False
) -> Any:
    """A config block: the YAML, the env line, its warnings and the download buttons
    (ids ``<prefix>-yaml``, ``<prefix>-env``, ``<prefix>-yaml-btn``, ``<prefix>-env-btn``);
    or the reason there is no deployable config (``<prefix>-invalid``)."""
    if export is None:
        return None
    if isinstance(export, str):
        return html.Div([html.H3(title), ui.empty_state(export, test_id=f"{prefix}-none")])
    if not export.deployable:
        return html.Div(
            [
                html.H3(title),
                ui.empty_state(
                    "Not deployable with TensorRT-LLM: " + "; ".join(export.errors),
                    ["pick another configuration", "or export the tree's recommendation"],
                    test_id=f"{prefix}-invalid",
                ),
            ]
        )
    warnings = (
        html.Ul(
            [html.Li(f"warning: {w}") for w in export.warnings],
            className="notes",
            **ui.attrs(data_testid=f"{prefix}-warnings"),
        )
        if export.warnings
        else None
    )
    return html.Div(
        [
            html.H3(title),
            warnings,
            html.Pre(
                export.yaml,
                className="code",
                id=f"{prefix}-yaml",
                tabIndex="0",
                **ui.attrs(aria_label=f"YAML of {title}"),
            ),
            html.Pre(
                export.env or "comm: leave AUTO (no environment variable needed)",
                className="code",
                id=f"{prefix}-env",
                tabIndex="0",
                **ui.attrs(aria_label=f"environment line of {title}"),
            ),
            html.Pre(
                export.command,
                className="code",
                id=f"{prefix}-command",
                tabIndex="0",
                **ui.attrs(aria_label=f"trtllm-serve command line of {title}"),
            ),
            html.Div(
                [
                    ui.download_button(f"{prefix}-yaml-btn", "Download YAML"),
                    ui.download_button(f"{prefix}-env-btn", "Download env line"),
                    *(
                        [ui.download_button(f"{prefix}-launch-btn", "Download launch script")]
                        if launch
                        else []
                    ),
                ]
            ),
        ]
    )


def threshold_table(check: GuideCheck) -> html.Div:
    """Published vs data-derived thresholds, the verdict cell coloured."""
    rows = [
        html.Tr(
            [
                html.Td(
                    ui.fmt(r[c]), className=f"verdict-{r['verdict']}" if c == "verdict" else None
                )
                for c in _THRESHOLD_COLUMNS
            ]
        )
        for r in (
            {**row, "unit": UNITS.get(str(row.get("axis")), str(row.get("axis")))}
            for row in check.table.to_dict("records")
        )
    ]
    return _scroll(
        html.Table(
            [
                html.Thead(html.Tr([html.Th(c.replace("_", " ")) for c in _THRESHOLD_COLUMNS])),
                html.Tbody(rows),
            ],
            className="small",
            **ui.attrs(data_testid="rec-thresholds"),
        ),
        "published vs data-derived thresholds",
    )


def evidence_named(check: GuideCheck, name: str) -> tuple[Any, dcc.Graph.Config]:
    """(the evidence chart of threshold ``name``, its ``dcc.Graph`` config), both named
    for the threshold and the slice of its comparison points."""
    ev = check.evidence[check.evidence["name"] == name] if len(check.evidence) else pd.DataFrame()
    where = slice_of(ev)
    what = f"evidence for {name}"
    config = ui.graph_config(filename=file_stem(what, where))
    fig = _evidence(check, ev, name)
    # keep the threshold's description from the figure's own title
    return named_figure(fig, f"evidence for {fig.layout.title.text or name}", where), config


def _evidence(check: GuideCheck, ev: pd.DataFrame, name: str) -> Any:
    row = check.table[check.table["name"] == name]
    if row.empty:
        return evidence_figure(pd.DataFrame(), C.ACTIVATED_TOKENS_PER_RANK, None, None, None, name)
    r = row.iloc[0]
    derived = float(r["derived"]) if pd.notna(r["derived"]) else None
    bracket = (
        (float(r["bracket_lo"]), float(r["bracket_hi"])) if pd.notna(r["bracket_lo"]) else None
    )
    fig = evidence_figure(
        ev, str(r["axis"]), float(r["published"]), derived, bracket, f"{name}: {r['description']}"
    )
    return fig
