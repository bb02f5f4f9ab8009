"""The Recommend page's form: its state (:class:`Form`, in the URL) and its controls."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from dash import dcc, html

from dashboard import components as ui

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
FIELDS = ("hardware", "model", "quant", "ws", "attn", "phase", "tokens", "th", "check")


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


def form_from_controls(*values: Any) -> Form:
    query = dict(zip(FIELDS, [None if v is None else str(v) for v in values], strict=True))
    return parse_form({k: v for k, v in query.items() if v is not None})


def _ctl(text: str, comp: Any, wide: bool = False) -> html.Div:
    return html.Div([html.Label(text), comp], className="control wide" if wide else "control")


def controls(form: Form, models: list[str], hardware: list[str], quants: list[str]) -> html.Div:
    """The deployment controls, set to ``form`` (``form_from_controls`` reads them back)."""
    return html.Div(
        [
            _ctl(
                "GPU / system",
                dcc.Dropdown(
                    id="rec-hardware",
                    options=ui.options(hardware),
                    value=form.hardware,
                    clearable=False,
                ),
            ),
            _ctl(
                "model",
                dcc.Dropdown(
                    id="rec-model",
                    options=ui.options(models),
                    value=form.model,
                    clearable=False,
                ),
            ),
            _ctl(
                "quantization",
                dcc.Dropdown(
                    id="rec-quant",
                    options=ui.options(quants),
                    value=form.quant,
                    clearable=False,
                ),
            ),
            _ctl(
                "world size (GPUs)",
                dcc.Input(id="rec-ws", type="number", min=1, step=1, value=form.ws, debounce=True),
            ),
            _ctl(
                "attention",
                dcc.RadioItems(id="rec-attn", options=["DP", "TP"], value=form.attn, inline=True),
            ),
            _ctl(
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
            _ctl(
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
            _ctl(
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
    )
