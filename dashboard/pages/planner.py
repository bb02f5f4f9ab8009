"""Deployment planner: MegaScale-Infer-style disaggregated expert parallelism.

URL: ``/planner?model=&seq=&slo=&gpu=<name>&gpu=…&mode=homogeneous|heterogeneous&nm=
&xpn=&fq=`` plus edited figures: model fields ``E K h hff L g dense pa pe`` (pa/pe in
GB) and GPU figures ``<GPU>.<field>`` (e.g. ``H20.price=1.9``); only values that differ
from the catalogue are written. Opening a URL plans it; the Plan button re-plans.

The computation is ``api.routes.planner.run_plan`` (the same as ``POST
/api/v1/planner/plan``), run in the WSGI worker thread of the callback with a loading
state, cached per request and store version. The heterogeneous search is bounded the
same way as the API's (at most 4 GPUs unless experts per node is pinned).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import dash
import dash_ag_grid as dag
import pandas as pd
from dash import Input, Output, State, dcc, html
from pydantic import ValidationError

from analysis import columns as C
from analysis.planner import GPUS, MODELS
from analysis.planner.plans import ALTERNATIVE_COLUMNS
from api.routes.planner import (
    GPU_FIELDS,
    HETERO_MAX_GPUS,
    PlanInputError,
    PlanRequest,
    export_filename,
    run_plan,
    store_loader,
)
from dashboard import components as ui
from dashboard import planner_figures as PF
from service.frames import DashData

PATH = "/planner"
GB = 1e9
DEFAULT_MODEL = "mixtral_8x22b"
DEFAULT_GPUS: tuple[str, ...] = ("H20",)
# URL key -> ModelSpec field; pa/pe are shown and written in GB.
MODEL_KEYS: dict[str, str] = {
    "E": "num_experts", "K": "top_k", "h": "hidden_size", "hff": "intermediate_size",
    "L": "num_layers", "g": "gqa_groups", "dense": "dense_layers",
    "pa": "attention_param_bytes", "pe": "expert_param_bytes",
}  # fmt: skip
MODEL_LABELS: dict[str, str] = {
    "E": "experts E", "K": "top-k K", "h": "hidden h", "hff": "expert width h'",
    "L": "MoE layers L", "g": "KV groups g (KV = 4h/g B)", "dense": "dense layers",
    "pa": "attention-side weights Pa (GB)", "pe": "one expert, all layers Pe (GB)",
}  # fmt: skip
_INT_KEYS = {"E", "K", "h", "hff", "L", "dense"}
GPU_LABELS: dict[str, str] = {
    "price": "price (L20 = 1)", "memory_gb": "memory (GB)", "bandwidth_gb_s": "HBM (GB/s)",
    "bf16_tflops": "BF16 TFLOPS", "nic_gbps": "NIC (Gb/s)", "power_w": "TDP (W)",
    "intra_node_gb_s": "NVLink (GB/s)", "gpus_per_node": "GPUs per node",
}  # fmt: skip
GRID_FIELDS: tuple[str, ...] = (
    "price",
    "memory_gb",
    "bandwidth_gb_s",
    "bf16_tflops",
    "nic_gbps",
    "power_w",
    "intra_node_gb_s",
    "gpus_per_node",
)
TOP_ALTERNATIVES = 20
_ALT_HEADERS = {
    "attention_gpu": "attention GPU", "expert_gpu": "expert GPU", "tpa": "TP attn",
    "tpe": "TP expert", "na": "na", "m": "m", "experts_per_node": "experts/node",
    "expert_nodes": "expert nodes", "batch": "batch B", "ba": "ba", "be": "be",
    "ta_ms": "Ta (ms)", "te_ms": "Te (ms)", "tc_ms": "Tc (ms)", "tbt_ms": "TBT (ms)",
    "t_total_ms": "T total (ms)", "throughput": "tokens/s", "gpus": "GPUs",
    "cost": "cost", "tput_per_gpu": "tokens/s/GPU", "tput_per_cost": "tokens/s/cost",
    "tput_per_watt": "tokens/s/W", "balance_met": "Ta≈Te", "comm_hidden_met": "Tc<Tf",
    "depth_met": "m deep enough",
}  # fmt: skip


# ------------------------------------------------------------------ the form
@dataclass(frozen=True)
class Form:
    model: str = DEFAULT_MODEL
    seq: float = 2048.0
    slo: float = 150.0
    gpus: tuple[str, ...] = DEFAULT_GPUS
    mode: str = "homogeneous"
    nm: int = 4
    xpn: int | None = None
    fq: str | None = None
    model_over: dict[str, float] = field(default_factory=dict)  # URL key -> value
    gpu_over: dict[str, dict[str, float]] = field(default_factory=dict)

    def query(self) -> dict[str, Any]:
        q: dict[str, Any] = {
            "model": self.model,
            "seq": _txt(self.seq),
            "slo": _txt(self.slo),
            "gpu": list(self.gpus),
            "mode": self.mode,
            "nm": self.nm,
            "xpn": self.xpn,
            "fq": self.fq,
        }
        q.update({k: _txt(v) for k, v in self.model_over.items()})
        for gpu, fields in self.gpu_over.items():
            q.update({f"{gpu}.{k}": _txt(v) for k, v in fields.items()})
        return q

    def search(self) -> str:
        return ui.search_string(self.query())


def _txt(value: float) -> str:
    """Exact URL text of a number (integers without the trailing .0)."""
    value = float(value)
    return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)


def _num(value: Any) -> float | None:
    try:
        out = float(str(value))
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def catalog_model_value(model: str, key: str) -> float | None:
    spec = MODELS.get(model)
    if spec is None:
        return None
    value = float(getattr(spec, MODEL_KEYS[key]))
    return value / GB if key in ("pa", "pe") else value


def _differs(a: float, b: float | None) -> bool:
    return b is None or abs(a - b) > 1e-9 * max(1.0, abs(b))


def parse_form(query: dict[str, Any]) -> Form:
    """Query (strings or lists of strings) -> Form; bad values fall back to defaults."""
    d = Form()
    model = ui.first(query, "model") or d.model
    model = model if model in MODELS else d.model
    raw_gpus = query.get("gpu", list(d.gpus))
    names = raw_gpus if isinstance(raw_gpus, list) else [raw_gpus]
    gpus = tuple(dict.fromkeys(str(n).upper() for n in names if str(n).upper() in GPUS))
    mode = ui.first(query, "mode") or d.mode
    seq = _num(ui.first(query, "seq"))
    slo = _num(ui.first(query, "slo"))
    nm = ui.as_int(ui.first(query, "nm"), d.nm) or d.nm
    model_over = {}
    for key in MODEL_KEYS:
        value = _num(ui.first(query, key))
        if value is not None and value > 0 and _differs(value, catalog_model_value(model, key)):
            model_over[key] = float(int(value)) if key in _INT_KEYS else value
    gpu_over: dict[str, dict[str, float]] = {}
    for key in query:
        gpu, _, fld = str(key).partition(".")
        if gpu.upper() in gpus and fld in GPU_FIELDS:
            value = _num(ui.first(query, key))
            base = float(getattr(GPUS[gpu.upper()], fld))
            if value is not None and value > 0 and _differs(value, base):
                gpu_over.setdefault(gpu.upper(), {})[fld] = value
    return Form(
        model=model,
        seq=seq if seq is not None and seq > 0 else d.seq,
        slo=slo if slo is not None and slo > 0 else d.slo,
        gpus=gpus or d.gpus,
        mode=mode if mode in ("homogeneous", "heterogeneous") else d.mode,
        nm=min(8, max(2, nm)),
        xpn=ui.as_int(ui.first(query, "xpn")),
        fq=ui.first(query, "fq") or None,
        model_over=model_over,
        gpu_over=gpu_over,
    )


def plan_request(form: Form) -> PlanRequest:
    """The API request this form stands for (pydantic ValidationError if out of range)."""
    over: dict[str, Any] = {}
    for key, value in form.model_over.items():
        name = MODEL_KEYS[key]
        over[name] = (
            value * GB if key in ("pa", "pe") else (int(value) if key in _INT_KEYS else value)
        )
    body: dict[str, Any] = {
        "model": form.model,
        "workload": {"seq_len": form.seq, "slo_tbt_ms": form.slo},
        "gpus": list(form.gpus),
        "gpu_overrides": {
            g: {k: (int(v) if k == "gpus_per_node" else v) for k, v in f.items()}
            for g, f in form.gpu_over.items()
        },
        "mode": form.mode,
        "options": {
            "max_micro_batches": form.nm,
            "experts_per_node": [form.xpn] if form.xpn else None,
        },
        "fit": {"quant": form.fq},
        "top": TOP_ALTERNATIVES,
    }
    if over:
        body["model_overrides"] = over
    return PlanRequest.model_validate(body)


def compute(data: DashData, form: Form) -> dict[str, Any] | str:
    """The plan payload (cached per request and store version), or why there is none."""
    try:
        req = plan_request(form)
    except ValidationError as exc:
        first = exc.errors()[0]
        return f"{'.'.join(str(x) for x in first['loc'])}: {first['msg']}"
    key = ("planner", json.dumps(req.model_dump(mode="json"), sort_keys=True))
    try:
        return data.cached(key, lambda: run_plan(req, store_loader(data.store)))
    except PlanInputError as exc:
        return f"{'.'.join(str(x) for x in exc.loc)}: {exc.msg}"


# ------------------------------------------------------------------ rendering
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


def _table(
    rows: list[dict[str, Any]], test_id: str, row_class: Any = None, hide: tuple[str, ...] = ()
) -> html.Table:
    if not rows:
        return html.Table(className="small", **{"data-testid": test_id})
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
        **{"data-testid": test_id},
    )


def best_facts(best: dict[str, Any], slo: float) -> dict[str, Any]:
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


def render(payload: dict[str, Any], form: Form) -> html.Div:
    """Result children: verdict, best plan, constraints, co-located, fits, charts, table."""
    best = payload.get("best")
    colo = payload.get("colocated")
    gain = payload.get("disaggregation_gain")
    pays = gain is None or gain >= 1
    verdict = html.P(
        [html.Strong(payload["verdict"])],
        className="verdict-agrees" if best and pays else "verdict-disagrees",
        **{"data-testid": "planner-verdict"},
    )
    status = html.P(
        f"{payload['n_alternatives']} feasible plans searched in "
        f"{payload['elapsed_ms'] / 1e3:.2f} s · model {payload['model']['name']} "
        f"· {payload['mode']} over {', '.join(g['name'] for g in payload['gpus'])}",
        className="status",
        id="plan-status",
    )
    fits = html.Div(
        [
            html.H3("Expert time Te (per expert, one GPU)"),
            _table(PF.fit_rows(payload["expert_fits"]), "planner-fits", _fit_class),
        ]
    )
    colo_rows = PF.comparison_rows(best, colo)
    colo_block = html.Div(
        [
            html.H3("Co-located alternative (same GPU type and count)"),
            _table(colo_rows, "planner-colocated")
            if colo
            else ui.empty_state(
                "No co-located deployment on these GPUs meets memory and the SLO.",
                test_id="planner-no-colocated",
            ),
            html.P(
                f"co-located: {colo['replicas']} attention replica(s) of TP "
                f"{colo['tp_attention']} on {colo['gpus']} {colo['gpu']}, every GPU holding "
                "experts; no ping-pong, TBT = L·(Ta + Te + 2Tc)",
                className="status",
            )
            if colo
            else None,
        ]
    )
    if best is None:
        return html.Div(
            [
                verdict,
                status,
                ui.empty_state(
                    "No disaggregated plan fits memory and the TBT SLO.",
                    [
                        "relax the TBT SLO or shorten the sequence length",
                        "add GPUs with more memory, or allow more micro-batches",
                    ],
                    test_id="planner-no-plan",
                ),
                colo_block,
                fits,
                html.Ul([html.Li(n) for n in payload["notes"]], className="notes"),
            ]
        )
    alts = payload["alternatives"]
    alt_frame = pd.DataFrame(alts, columns=list(ALTERNATIVE_COLUMNS))
    overrides = {c: {"headerName": h} for c, h in _ALT_HEADERS.items()}
    return html.Div(
        [
            verdict,
            status,
            html.Div(
                [
                    html.Div(
                        [
                            html.H3("Best plan"),
                            ui.kv_table(best_facts(best, form.slo), "planner-best"),
                        ],
                        className="half",
                    ),
                    html.Div(
                        [
                            html.H3("Pipeline constraints"),
                            _table(
                                PF.constraint_rows(best["constraints"]),
                                "planner-constraints",
                                _constraint_class,
                                hide=("met",),
                            ),
                            html.P(
                                "Violations do not rule a plan out; they slow every "
                                "micro-batch step to max(Ta, Te, Tc, (Ta+Te+2Tc)/m).",
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
                        dcc.Graph(
                            id="plan-sweep",
                            figure=PF.na_sweep_figure(
                                payload["na_sweep"],
                                best["na"],
                                f"Throughput per GPU against na "
                                f"({best['attention_gpu']} attention × "
                                f"{best['expert_gpu']} experts, m = {best['m']})",
                            ),
                            config={"displaylogo": False},
                        ),
                        className="half",
                    ),
                    html.Div(
                        dcc.Graph(
                            id="plan-timeline",
                            figure=PF.timeline_figure(
                                payload["timeline"],
                                f"Ping-pong timeline of one layer (m = {best['m']}, Tf = "
                                f"{best['tf_ms']:.3f} ms)",
                            ),
                            config={"displaylogo": False},
                        ),
                        className="half",
                    ),
                ],
                className="row",
            ),
            html.H3(
                f"Top {len(alts)} of {payload['n_alternatives']} plans (by tokens/s per cost unit)"
            ),
            ui.grid(
                "plan-alts",
                alt_frame,
                list(ALTERNATIVE_COLUMNS),
                page_size=20,
                height="430px",
                col_overrides=overrides,
            ),
            html.Ul([html.Li(n) for n in payload["notes"]], className="notes"),
        ]
    )


def update(data: DashData, form: Form) -> tuple[Any, str, Any]:
    """Form -> (result children, URL search, payload for the download store)."""
    payload = compute(data, form)
    if isinstance(payload, str):
        hints = (
            [
                f"the heterogeneous search is limited to {HETERO_MAX_GPUS} GPUs unless "
                "experts per node is fixed"
            ]
            if "heterogeneous" in payload
            else []
        )
        return (
            ui.empty_state(f"Cannot plan: {payload}", hints, test_id="planner-error"),
            form.search(),
            None,
        )
    return render(payload, form), form.search(), payload


# ------------------------------------------------------------------ layout
def gpu_rows(
    gpus: tuple[str, ...] | list[str],
    edits: dict[str, dict[str, float]],
    previous: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Editable grid rows for the chosen GPUs: catalogue figures, then URL edits, then
    the rows the user already edited (kept when the GPU stays selected)."""
    kept = {str(r.get("gpu")): r for r in previous or []}
    rows = []
    for name in gpus:
        spec = GPUS.get(name)
        if spec is None:
            continue
        row = {"gpu": name, **{f: getattr(spec, f) for f in GRID_FIELDS}}
        row.update(edits.get(name, {}))
        if name in kept:
            row.update({f: kept[name][f] for f in GRID_FIELDS if f in kept[name]})
        rows.append(row)
    return rows


def gpu_edits(rows: list[dict[str, Any]] | None) -> dict[str, dict[str, float]]:
    """Rows of the GPU grid -> {gpu: {field: value}} where it differs from the catalogue."""
    out: dict[str, dict[str, float]] = {}
    for row in rows or []:
        name = str(row.get("gpu"))
        spec = GPUS.get(name)
        if spec is None:
            continue
        for f in GRID_FIELDS:
            value = _num(row.get(f))
            if value is not None and value > 0 and _differs(value, float(getattr(spec, f))):
                out.setdefault(name, {})[f] = value
    return out


def xpn_options(num_experts: Any) -> list[dict[str, Any]]:
    e = ui.as_int(num_experts) or 0
    choices = [x for x in (2**i for i in range(13)) if e and x <= e and e % x == 0]
    return [{"label": "auto (powers of two)", "value": 0}] + [
        {"label": f"{x} per node", "value": x} for x in choices
    ]


def _model_value(form: Form, key: str) -> float | None:
    value = form.model_over.get(key, catalog_model_value(form.model, key))
    if value is None:
        return None
    return int(value) if key in _INT_KEYS else round(value, 4)


def _ctl(text: str, comp: Any, wide: bool = False) -> html.Div:
    return html.Div([html.Label(text), comp], className="control wide" if wide else "control")


def _fit_quants(data: DashData) -> list[str]:
    try:
        cov = data.coverage()
    except Exception:  # noqa: BLE001 - an empty or unavailable store shows no choices
        return []
    return sorted({str(q) for q in cov[C.QUANT].dropna()}) if len(cov) else []


def layout(data: DashData, **query: Any) -> html.Div:
    form = parse_form(query)
    spec = MODELS[form.model]
    model_inputs = [
        _ctl(
            MODEL_LABELS[k],
            dcc.Input(
                id=f"plan-m-{k}",
                type="number",
                min=0,
                step=1 if k in _INT_KEYS else "any",
                value=_model_value(form, k),
                debounce=True,
            ),
        )
        for k in MODEL_KEYS
    ]
    quants = _fit_quants(data)
    grid_cols = [{"field": "gpu", "headerName": "GPU", "editable": False, "pinned": "left"}] + [
        {
            "field": f,
            "headerName": GPU_LABELS[f],
            "editable": True,
            "cellEditor": "agNumberCellEditor",
            "type": "numericColumn",
        }
        for f in GRID_FIELDS
    ]

    return html.Div(
        [
            dcc.Location(id="plan-url", refresh=False),
            html.H2("Disaggregated deployment planner"),
            html.P(
                [
                    "Plans a MegaScale-Infer deployment (arXiv 2504.02263): attention on na "
                    "data-parallel nodes, experts on their own nodes, m micro-batches ping-ponging "
                    "between them. Te is fitted from stored sweeps of the same model shape and "
                    "GPU where there are enough points, else a roofline estimate. Formulas and "
                    "assumptions: docs/planner.md; the same plan as JSON: ",
                    html.Code("POST /api/v1/planner/plan"),
                    ".",
                ],
                className="lead",
            ),
            html.Div(
                [
                    _ctl(
                        "model",
                        dcc.Dropdown(
                            id="plan-model",
                            options=ui.options(sorted(MODELS)),
                            value=form.model,
                            clearable=False,
                        ),
                    ),
                    _ctl(
                        "avg sequence length (tokens in KV)",
                        dcc.Input(
                            id="plan-seq", type="number", min=1, value=form.seq, debounce=True
                        ),
                    ),
                    _ctl(
                        "TBT SLO (ms)",
                        dcc.Input(
                            id="plan-slo", type="number", min=1, value=form.slo, debounce=True
                        ),
                    ),
                    _ctl(
                        "max micro-batches Nm",
                        dcc.Input(
                            id="plan-nm",
                            type="number",
                            min=2,
                            max=8,
                            step=1,
                            value=form.nm,
                            debounce=True,
                        ),
                    ),
                    _ctl(
                        "GPUs (catalogue)",
                        dcc.Dropdown(
                            id="plan-gpus",
                            options=ui.options(GPUS),
                            value=list(form.gpus),
                            multi=True,
                            clearable=False,
                        ),
                        wide=True,
                    ),
                    _ctl(
                        "mode",
                        dcc.RadioItems(
                            id="plan-mode",
                            options=[
                                {
                                    "label": "homogeneous (one GPU type per plan)",
                                    "value": "homogeneous",
                                },
                                {
                                    "label": "heterogeneous (attention/expert pairs, "
                                    f"≤ {HETERO_MAX_GPUS} GPUs)",
                                    "value": "heterogeneous",
                                },
                            ],
                            value=form.mode,
                        ),
                        wide=True,
                    ),
                    _ctl(
                        "experts per expert node",
                        dcc.Dropdown(
                            id="plan-xpn",
                            options=xpn_options(spec.num_experts),
                            value=form.xpn or 0,
                            clearable=False,
                        ),
                    ),
                    _ctl(
                        "Te fit: sweep quant",
                        dcc.Dropdown(
                            id="plan-fq",
                            options=ui.options(
                                sorted(set(quants) | ({form.fq} if form.fq else set()))
                            ),
                            value=form.fq,
                            placeholder="any quant",
                        ),
                    ),
                ],
                className="controls",
            ),
            html.Details(
                [
                    html.Summary("Model figures (prefilled from the catalogue, editable)"),
                    html.Div(model_inputs, className="controls"),
                    html.P(spec.source, className="status", id="plan-model-source"),
                ],
                open=bool(form.model_over),
            ),
            html.Details(
                [
                    html.Summary("GPU figures (editable: click a cell)"),
                    dag.AgGrid(
                        id="plan-gpu-grid",
                        rowData=gpu_rows(form.gpus, form.gpu_over),
                        columnDefs=grid_cols,
                        defaultColDef={"resizable": True, "minWidth": 110},
                        dashGridOptions={
                            "singleClickEdit": True,
                            "stopEditingWhenCellsLoseFocus": True,
                            "domLayout": "autoHeight",
                        },
                        columnSize="sizeToFit",
                        className="ag-theme-alpine",
                    ),
                    html.P(
                        "Prices are normalised cost units (L20 = 1.0); the H100/H200/Blackwell "
                        "prices are estimates: put your own.",
                        className="status",
                    ),
                ],
                open=bool(form.gpu_over),
            ),
            html.Div(
                [
                    html.Button("Plan", id="plan-run", className="button", n_clicks=0),
                    ui.download_button("plan-download-btn", "Download plan JSON"),
                    html.Span(id="plan-running", className="status"),
                ]
            ),
            dcc.Store(id="plan-payload"),
            dcc.Download(id="plan-download"),
            ui.loading(html.Div(id="plan-body"), "plan-loading"),
        ]
    )


_FORM_STATES = (
    "plan-model",
    "plan-seq",
    "plan-slo",
    "plan-gpus",
    "plan-mode",
    "plan-nm",
    "plan-xpn",
    "plan-fq",
)


def form_from_controls(
    model: Any,
    seq: Any,
    slo: Any,
    gpus: Any,
    mode: Any,
    nm: Any,
    xpn: Any,
    fq: Any,
    model_values: list[Any],
    grid_rows: list[dict[str, Any]] | None,
) -> Form:
    """Control values -> Form (through the URL parser, so page and URL agree)."""
    query: dict[str, Any] = {
        "model": model,
        "seq": seq,
        "slo": slo,
        "gpu": list(gpus or []),
        "mode": mode,
        "nm": nm,
        "xpn": xpn or None,
        "fq": fq,
    }
    query.update(dict(zip(MODEL_KEYS, model_values, strict=True)))
    for gpu, fields in gpu_edits(grid_rows).items():
        query.update({f"{gpu}.{k}": v for k, v in fields.items()})
    clean = {
        k: (v if isinstance(v, list) else str(v))
        for k, v in query.items()
        if v is not None and v != "" and v != []
    }
    return parse_form(clean)


def download(payload: dict[str, Any] | None) -> dict[str, Any] | None:
    if not payload:
        return None
    return {
        "content": json.dumps(payload, indent=1),
        "filename": export_filename(payload),
        "type": "application/json",
    }


def register(app: dash.Dash, data: DashData) -> None:
    model_fields = [State(f"plan-m-{k}", "value") for k in MODEL_KEYS]

    @app.callback(
        [Output(f"plan-m-{k}", "value") for k in MODEL_KEYS]
        + [
            Output("plan-xpn", "options"),
            Output("plan-xpn", "value"),
            Output("plan-model-source", "children"),
        ],
        Input("plan-model", "value"),
        prevent_initial_call=True,
    )
    def _model_changed(model: str) -> list[Any]:
        form = Form(model=model if model in MODELS else DEFAULT_MODEL)
        values = [_model_value(form, k) for k in MODEL_KEYS]
        return values + [xpn_options(values[0]), 0, MODELS[form.model].source]

    @app.callback(
        Output("plan-gpu-grid", "rowData"),
        Input("plan-gpus", "value"),
        State("plan-gpu-grid", "rowData"),
        prevent_initial_call=True,
    )
    def _gpus_changed(gpus: list[str] | None, rows: list[dict[str, Any]] | None) -> Any:
        return gpu_rows([str(g) for g in gpus or []], {}, rows)

    @app.callback(
        Output("plan-body", "children"),
        Output("plan-url", "search"),
        Output("plan-payload", "data"),
        Input("plan-run", "n_clicks"),
        *[State(i, "value") for i in _FORM_STATES],
        *model_fields,
        State("plan-gpu-grid", "rowData"),
        running=[
            (Output("plan-run", "disabled"), True, False),
            (Output("plan-running", "children"), "planning…", ""),
        ],
    )
    def _plan(_n: int | None, *values: Any) -> tuple[Any, str, Any]:
        n = len(_FORM_STATES)
        form = form_from_controls(*values[:n], list(values[n : n + len(MODEL_KEYS)]), values[-1])
        return update(data, form)

    @app.callback(
        Output("plan-download", "data"),
        Input("plan-download-btn", "n_clicks"),
        State("plan-payload", "data"),
        prevent_initial_call=True,
    )
    def _download(n: int | None, payload: dict[str, Any] | None) -> Any:
        if not n or not payload:
            return dash.no_update
        return download(payload)
