"""Recommendations: the guide's decision tree for one deployment, next to the data.

URL: ``/recommend?hardware=&model=&quant=&ws=&attn=DP|TP&phase=decode|prefill
&tokens=&th=published|derived&check=<threshold name>``.

Shows ``analysis.tree.recommend`` with its path (threshold vs observed value), the
measured best at the nearest num_tokens in the store, the published-vs-derived
threshold table (``analysis.thresholds.derive_guide_thresholds``) with an evidence
chart, and the YAML / env line from ``analysis.export``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from dataclasses import dataclass
from typing import Any

import dash
import numpy as np
import pandas as pd
from dash import Input, Output, State, dcc, html

from analysis import capabilities as cap
from analysis import columns as C
from analysis.best import RANK, top_by_workload
from analysis.export import Provenance, env_line, recommended_config_yaml
from analysis.serving_map import CUSTOM_SHAPES, MODEL_SHAPES
from analysis.thresholds import GuideCheck, derive_guide_thresholds, thresholds_from_check
from analysis.tree import Deployment, Recommendation, recommend
from dashboard import components as ui
from dashboard.figures import evidence_figure, path_figure
from service.frames import Cell, DashData

PATH = "/recommend"
QUANTS = (
    "NVFP4",
    "W4A8_MXFP4_MXFP8",
    "FP8_BLOCK_SCALES",
    "FP8",
    "BF16",
    "W4A16_MXFP4",
    "W4A8_MXFP4_FP8",
    "W4A16_NVFP4",
    "MXFP8",
)
_FIELDS = ("hardware", "model", "quant", "ws", "attn", "phase", "tokens", "th", "check")


@dataclass(frozen=True)
class Form:
    hardware: str = "GB300"
    model: str = "deepseek_v4_pro"
    quant: str = "NVFP4"
    ws: int = 8
    attn: str = "DP"
    phase: str = "decode"
    tokens: int = 1024
    th: str = "published"
    check: str | None = None

    def search(self) -> str:
        return ui.search_string(dataclasses.asdict(self))


def model_shapes(data: DashData) -> dict[str, tuple[int, int, int]]:
    """model -> (num_experts, top_k, hidden_size): stored runs first, then the guide's
    table (analysis.serving_map)."""
    shapes = {m: (e, k, h) for m, (e, k, h, _) in {**CUSTOM_SHAPES, **MODEL_SHAPES}.items()}

    def load() -> dict[str, tuple[int, int, int]]:
        runs = data.store.list_runs(limit=10_000).items
        out = {}
        for r in runs.to_dict("records"):
            vals = (r.get(C.NUM_EXPERTS), r.get(C.TOP_K), r.get(C.HIDDEN_SIZE))
            if r.get(C.MODEL) and all(v is not None and not pd.isna(v) for v in vals):
                out[str(r[C.MODEL])] = tuple(int(v) for v in vals)
        return out

    shapes.update(data.cached("model_shapes", load))
    return shapes


def parse_form(query: dict[str, Any]) -> Form:
    d = Form()
    hw = (ui.first(query, "hardware") or d.hardware).upper()
    attn = ui.first(query, "attn") or d.attn
    phase = ui.first(query, "phase") or d.phase
    th = ui.first(query, "th") or d.th
    return Form(
        hardware=hw,
        model=ui.first(query, "model") or d.model,
        quant=ui.first(query, "quant") or d.quant,
        ws=max(1, ui.as_int(ui.first(query, "ws"), d.ws) or d.ws),
        attn=attn if attn in ("DP", "TP") else d.attn,
        phase=phase if phase in ("decode", "prefill") else d.phase,
        tokens=max(1, ui.as_int(ui.first(query, "tokens"), d.tokens) or d.tokens),
        th=th if th in ("published", "derived") else d.th,
        check=ui.first(query, "check"),
    )


def guide_check(data: DashData) -> GuideCheck:
    """The five published thresholds re-derived from every stored candidate (cached)."""
    return data.cached("guide_check", lambda: derive_guide_thresholds(data.all_frame()))


def make_recommendation(data: DashData, form: Form) -> Recommendation | str:
    """The tree's answer, or a message saying which input is missing."""
    shape = model_shapes(data).get(form.model)
    if shape is None:
        return f"unknown model {form.model!r}: no stored run and not in the guide's table"
    dep = Deployment(
        hardware=form.hardware,
        num_experts=shape[0],
        top_k=shape[1],
        hidden_size=shape[2],
        quant=form.quant,
        world_size=form.ws,
        attention_dp=form.attn == "DP",
        cuda_graph=form.phase == "decode",
        num_tokens=form.tokens,
        model=form.model,
    )
    th = thresholds_from_check(guide_check(data)) if form.th == "derived" else None
    return recommend(dep, th)


def nearest_measured(data: DashData, form: Form, n: int = 3) -> tuple[pd.DataFrame, int | None]:
    """The ``n`` best measured candidates at the stored num_tokens nearest (in log2) to
    the form's, for the same model/hardware/quant/world size/attention/phase."""
    cell = Cell(form.model, form.hardware, form.quant)
    if cell not in data.cells():
        return pd.DataFrame(), None
    f = data.cell_frame(cell)
    mask = (
        (f[C.WORLD_SIZE].to_numpy() == form.ws)
        & (f[C.ATTENTION_DP].to_numpy(dtype=bool) == (form.attn == "DP"))
        & (f[C.CUDA_GRAPH].to_numpy(dtype=bool) == (form.phase == "decode"))
        & f["_rankable"].to_numpy()
    )
    sub = f.loc[mask]
    if sub.empty:
        return sub, None
    tokens = np.unique(sub[C.NUM_TOKENS].to_numpy(np.float64))
    nearest = int(tokens[np.argmin(np.abs(np.log2(tokens) - math.log2(form.tokens)))])
    at = sub[sub[C.NUM_TOKENS].to_numpy() == nearest]
    return top_by_workload(at, [C.NUM_TOKENS], n=n), nearest


def export_text(data: DashData, rec: Recommendation, form: Form) -> tuple[str, str | None]:
    top, _ = nearest_measured(data, form)
    runs = tuple(sorted({int(r) for r in top[C.RUN_ID]})) if len(top) else ()
    version = str(top[C.TRTLLM_VERSION].iloc[0]) if len(top) else None
    prov = Provenance(run_ids=runs, trtllm_version=version, date=dt.date.today().isoformat())
    return recommended_config_yaml(rec, prov), env_line(rec)


# ------------------------------------------------------------------ rendering
def _path_list(rec: Recommendation) -> html.Ol:
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
    return html.Ol(items, className="path", **{"data-testid": "rec-path"})


def _summary(rec: Recommendation) -> html.Div:
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
        "inside the guide's coverage": rec.in_guide_coverage,
    }
    return html.Div(
        [
            ui.kv_table(facts, "rec-summary"),
            html.Ul([html.Li(n) for n in rec.notes], className="notes") if rec.notes else None,
        ]
    )


def _measured(top: pd.DataFrame, nearest: int | None, rec: Recommendation, form: Form) -> Any:
    if top.empty or nearest is None:
        return ui.empty_state(
            f"No measured candidates for {form.model} · {form.hardware} · {form.quant} at "
            f"world size {form.ws}, attention {form.attn}, {form.phase}.",
            [
                "upload a bench_moe sweep for this deployment",
                "or change world size / attention / phase to one the Overview lists",
            ],
            test_id="rec-no-data",
        )
    winner = top.iloc[0]
    agree = str(winner[C.BACKEND]) == rec.backend
    cols = [
        RANK,
        C.BACKEND,
        C.COMM,
        C.PARALLEL_MODE,
        C.SCORE_MS,
        C.TOKENS_PER_S_PER_GPU,
        C.RUN_ID,
        C.CANDIDATE_INDEX,
    ]
    rows = [html.Tr([html.Td(ui.fmt(r[c])) for c in cols]) for r in top.to_dict("records")]
    return html.Div(
        [
            html.P(
                [
                    f"Nearest measured workload: num_tokens = {nearest} (asked {form.tokens}). ",
                    html.Strong(
                        "The data agrees with the tree's backend."
                        if agree
                        else f"The data's fastest backend is {winner[C.BACKEND]}, not "
                        f"{rec.backend}."
                    ),
                ]
            ),
            html.Table(
                [html.Thead(html.Tr([html.Th(ui.label(c)) for c in cols])), html.Tbody(rows)],
                className="small",
                **{"data-testid": "rec-measured"},
            ),
        ]
    )


def _threshold_table(check: GuideCheck) -> html.Table:
    cols = (
        "name",
        "published",
        "derived",
        "bracket_lo",
        "bracket_hi",
        "status",
        "n_workloads",
        "accuracy",
        "verdict",
    )
    rows = [
        html.Tr(
            [
                html.Td(
                    ui.fmt(r[c]), className=f"verdict-{r['verdict']}" if c == "verdict" else None
                )
                for c in cols
            ]
        )
        for r in check.table.to_dict("records")
    ]
    return html.Table(
        [html.Thead(html.Tr([html.Th(c.replace("_", " ")) for c in cols])), html.Tbody(rows)],
        className="small",
        **{"data-testid": "rec-thresholds"},
    )


def evidence_for(check: GuideCheck, name: str) -> Any:
    row = check.table[check.table["name"] == name]
    if row.empty:
        return evidence_figure(pd.DataFrame(), C.ACTIVATED_TOKENS_PER_RANK, None, None, None, name)
    r = row.iloc[0]
    ev = check.evidence[check.evidence["name"] == name]
    derived = float(r["derived"]) if pd.notna(r["derived"]) else None
    bracket = (
        (float(r["bracket_lo"]), float(r["bracket_hi"])) if pd.notna(r["bracket_lo"]) else None
    )
    return evidence_figure(
        ev, str(r["axis"]), float(r["published"]), derived, bracket, f"{name}: {r['description']}"
    )


def update(data: DashData, form: Form) -> tuple[Any, str]:
    """Form -> (result children, URL search)."""
    rec = make_recommendation(data, form)
    if isinstance(rec, str):
        return ui.empty_state(rec, ["pick a model from the list"]), form.search()
    top, nearest = nearest_measured(data, form)
    check = guide_check(data)
    decided = [s.threshold_name for s in rec.path if s.threshold_name]
    names = list(check.table["name"])
    chosen = (
        form.check
        if form.check in names
        else (next((d for d in reversed(decided) if d in names), names[0] if names else ""))
    )
    yaml_text, env = export_text(data, rec, form)
    steps = [dataclasses.asdict(s) for s in rec.path]
    body = html.Div(
        [
            html.Div(
                [
                    html.Div([html.H3("Recommendation"), _summary(rec)], className="half"),
                    html.Div([html.H3("Decision path"), _path_list(rec)], className="half"),
                ],
                className="row",
            ),
            dcc.Graph(figure=path_figure(steps), config={"displaylogo": False}),
            html.H3(
                ui.with_synthetic_note(
                    data.is_synthetic(None), "Measured best at the nearest workload"
                )
            ),
            _measured(top, nearest, rec, form),
            html.H3("Published vs data-derived thresholds"),
            _threshold_table(check),
            html.Div(
                [
                    html.Label("evidence for"),
                    dcc.Dropdown(
                        id="rec-check", options=ui.options(names), value=chosen, clearable=False
                    ),
                ],
                className="control wide",
            ),
            dcc.Graph(
                id="rec-evidence", figure=evidence_for(check, chosen), config={"displaylogo": False}
            ),
            html.H3("Config"),
            html.Pre(yaml_text, className="code", id="rec-yaml"),
            html.Pre(
                env or "comm: leave AUTO (no environment variable needed)",
                className="code",
                id="rec-env",
            ),
            html.Div(
                [
                    ui.download_button("rec-yaml-btn", "Download YAML"),
                    ui.download_button("rec-env-btn", "Download env line"),
                ]
            ),
        ]
    )
    return body, dataclasses.replace(form, check=chosen or None).search()


def layout(data: DashData, **query: Any) -> html.Div:
    form = parse_form(query)
    models = sorted(set(model_shapes(data)) | {form.model})
    hardware = sorted(set(cap.HARDWARE) | {form.hardware})
    quants = sorted(set(QUANTS) | {form.quant})

    def ctl(text: str, comp: Any, wide: bool = False) -> html.Div:
        return html.Div([html.Label(text), comp], className="control wide" if wide else "control")

    return html.Div(
        [
            dcc.Location(id="rec-url", refresh=False),
            html.H2("Which MoE configuration should I run?"),
            html.P(
                "The TensorRT-LLM MoE guide's decision tree for your deployment, checked "
                "against the sweeps in this database.",
                className="lead",
            ),
            html.Div(
                [
                    ctl(
                        "GPU / system",
                        dcc.Dropdown(
                            id="rec-hardware",
                            options=ui.options(hardware),
                            value=form.hardware,
                            clearable=False,
                        ),
                    ),
                    ctl(
                        "model",
                        dcc.Dropdown(
                            id="rec-model",
                            options=ui.options(models),
                            value=form.model,
                            clearable=False,
                        ),
                    ),
                    ctl(
                        "quantization",
                        dcc.Dropdown(
                            id="rec-quant",
                            options=ui.options(quants),
                            value=form.quant,
                            clearable=False,
                        ),
                    ),
                    ctl(
                        "world size (GPUs)",
                        dcc.Input(
                            id="rec-ws", type="number", min=1, step=1, value=form.ws, debounce=True
                        ),
                    ),
                    ctl(
                        "attention",
                        dcc.RadioItems(
                            id="rec-attn", options=["DP", "TP"], value=form.attn, inline=True
                        ),
                    ),
                    ctl(
                        "phase",
                        dcc.RadioItems(
                            id="rec-phase",
                            options=[
                                {"label": "decode (CUDA graph on)", "value": "decode"},
                                {"label": "prefill (CUDA graph off)", "value": "prefill"},
                            ],
                            value=form.phase,
                            inline=True,
                        ),
                        wide=True,
                    ),
                    ctl(
                        "num_tokens (tokens; global under DP, per rank under TP)",
                        dcc.Input(
                            id="rec-tokens",
                            type="number",
                            min=1,
                            step=1,
                            value=form.tokens,
                            debounce=True,
                        ),
                        wide=True,
                    ),
                    ctl(
                        "thresholds",
                        dcc.RadioItems(
                            id="rec-th",
                            options=[
                                {"label": "published", "value": "published"},
                                {"label": "derived from this data", "value": "derived"},
                            ],
                            value=form.th,
                            inline=True,
                        ),
                        wide=True,
                    ),
                ],
                className="controls",
            ),
            dcc.Store(id="rec-check-init", data=form.check),
            ui.loading(html.Div(id="rec-body"), "rec-loading"),
            dcc.Download(id="rec-download"),
        ]
    )


def form_from_controls(*values: Any) -> Form:
    query = dict(zip(_FIELDS, [None if v is None else str(v) for v in values], strict=True))
    return parse_form({k: v for k, v in query.items() if v is not None})


def download(data: DashData, which: str, form: Form) -> dict[str, Any] | None:
    rec = make_recommendation(data, form)
    if isinstance(rec, str):
        return None
    yaml_text, env = export_text(data, rec, form)
    stem = f"moedash_{form.model}_{form.hardware}_{form.quant}_ws{form.ws}_{form.phase}"
    if which == "yaml":
        return {"content": yaml_text, "filename": stem + ".yaml", "type": "text/yaml"}
    text = (env or "# comm: leave AUTO (TRTLLM_FORCE_COMM_METHOD unset)") + "\n"
    return {"content": text, "filename": stem + ".env", "type": "text/plain"}


def register(app: dash.Dash, data: DashData) -> None:
    controls = [Input(f"rec-{f}", "value") for f in _FIELDS[:-1]]

    @app.callback(
        Output("rec-body", "children"),
        Output("rec-url", "search"),
        *controls,
        State("rec-check-init", "data"),
    )
    def _update(*values: Any) -> tuple[Any, str]:
        return update(data, form_from_controls(*values))

    @app.callback(
        Output("rec-evidence", "figure"),
        Output("rec-url", "search", allow_duplicate=True),
        Input("rec-check", "value"),
        *[State(f"rec-{f}", "value") for f in _FIELDS[:-1]],
        prevent_initial_call=True,
    )
    def _evidence(name: str, *values: Any) -> tuple[Any, str]:
        form = form_from_controls(*values, name)
        return evidence_for(guide_check(data), name), form.search()

    @app.callback(
        Output("rec-download", "data"),
        Input("rec-yaml-btn", "n_clicks"),
        Input("rec-env-btn", "n_clicks"),
        *[State(f"rec-{f}", "value") for f in _FIELDS[:-1]],
        prevent_initial_call=True,
    )
    def _download(n_yaml: int | None, n_env: int | None, *values: Any) -> Any:
        which = "env" if dash.ctx.triggered_id == "rec-env-btn" else "yaml"
        if not (n_yaml or n_env):
            return dash.no_update
        return download(data, which, form_from_controls(*values, None))
