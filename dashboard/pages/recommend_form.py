"""The Recommend page's form: its state (:class:`Form`, in the URL) and its controls.

The workload is either ``num_tokens`` (``size=tokens``) or the serving load it comes
from (``size=load``): concurrency, MTP draft tokens and max_batch_size for decode,
max_num_tokens (and optionally the ISL) for prefill -- converted by
``analysis.concurrency`` (via ``service.recommend.token_count``), the same function the
serving-config mapping and the API's ``concurrency=`` use. :func:`size_note` shows the
computed num_tokens and the formula next to the inputs.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from dash import dcc, html

from analysis.identity import REPEATS
from dashboard import components as ui
from dashboard.labelled import control, number

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
# control order (every one but ``check`` is an Input of the page's callbacks)
FIELDS = (
    "hardware",
    "model",
    "quant",
    "ws",
    "attn",
    "phase",
    "tokens",
    "th",
    "size",
    "conc",
    "mtp",
    "mbs",
    "mnt",
    "isl",
    "dispatch",
    "repeats",
    "check",
)
SIZES = ("tokens", "load")
THRESHOLDS = ("published", "derived", "validated")


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
    size: str = "tokens"  # "tokens": num_tokens as given; "load": from the serving load
    conc: int = 256  # decode: requests in flight on the instance
    mtp: int = 0  # decode: MTP draft tokens
    mbs: int | None = None  # max_batch_size (requests per attention rank)
    mnt: int = 8192  # prefill: max_num_tokens (TensorRT-LLM's default)
    isl: int | None = None  # prefill: input sequence length
    dispatch: str | None = None  # routing pattern; None = the default
    repeats: str = "median"
    check: str | None = None

    def search(self) -> str:
        """The URL query in ``GET /api/v1/recommendation``'s names (``DeploymentRequest``:
        world_size, attention=dp|tp, num_tokens, thresholds, concurrency, max_batch_size,
        max_num_tokens); ``size`` and ``check`` are the page's own."""
        values: dict[str, Any] = dataclasses.asdict(self)
        defaults = dataclasses.asdict(Form())
        for key in _OPTIONAL:  # the newer fields appear only when they are not the default
            if values[key] == defaults[key]:
                values[key] = None
        values["attn"] = str(values["attn"]).lower()
        return ui.search_string({_API_NAMES.get(k, k): v for k, v in values.items()})


_OPTIONAL = ("size", "conc", "mtp", "mbs", "mnt", "isl", "dispatch", "repeats")
# the form's field -> the API's parameter (older permalinks' names are still read)
_API_NAMES = {
    "ws": "world_size",
    "attn": "attention",
    "tokens": "num_tokens",
    "th": "thresholds",
    "conc": "concurrency",
    "mbs": "max_batch_size",
    "mnt": "max_num_tokens",
}


def _get(query: dict[str, Any], key: str) -> Any:
    """The value of the form field ``key``: under the API's name, else the old one."""
    return ui.first(query, _API_NAMES.get(key, key)) or ui.first(query, key)


def _pos(query: dict[str, Any], key: str, default: int | None) -> int | None:
    value = ui.as_int(_get(query, key), default)
    return value if value is None or value >= 1 else default


def parse_form(query: dict[str, Any], base: Form | None = None) -> Form:
    """The form of a URL query; a missing or bad value takes ``base``'s (default:
    :class:`Form`'s defaults)."""
    d = base or Form()
    hw = (ui.first(query, "hardware") or d.hardware).upper()
    attn = str(_get(query, "attn") or d.attn).upper()
    phase = ui.first(query, "phase") or d.phase
    th = _get(query, "th") or d.th
    size = ui.first(query, "size") or d.size
    repeats = ui.first(query, "repeats") or d.repeats
    mtp = ui.as_int(ui.first(query, "mtp"), d.mtp)
    return Form(
        hardware=hw,
        model=ui.first(query, "model") or d.model,
        quant=ui.first(query, "quant") or d.quant,
        ws=max(1, ui.as_int(_get(query, "ws"), d.ws) or d.ws),
        attn=attn if attn in ("DP", "TP") else d.attn,
        phase=phase if phase in ("decode", "prefill") else d.phase,
        tokens=max(1, ui.as_int(_get(query, "tokens"), d.tokens) or d.tokens),
        th=th if th in THRESHOLDS else d.th,
        size=size if size in SIZES else d.size,
        conc=_pos(query, "conc", d.conc) or d.conc,
        mtp=mtp if mtp is not None and 0 <= mtp <= 64 else d.mtp,
        mbs=_pos(query, "mbs", None),
        mnt=_pos(query, "mnt", d.mnt) or d.mnt,
        isl=_pos(query, "isl", None),
        dispatch=ui.first(query, "dispatch") or None,
        repeats=repeats if repeats in REPEATS else d.repeats,
        check=ui.first(query, "check"),
    )


def form_from_controls(*values: Any) -> Form:
    """The controls' values in :data:`FIELDS` order (trailing ones may be left out:
    they take their defaults) -> Form."""
    query = dict(zip(FIELDS, [None if v is None else str(v) for v in values], strict=False))
    return parse_form({k: v for k, v in query.items() if v is not None and v != ""})


def load_values(form: Form) -> dict[str, Any]:
    """The form's workload as ``DeploymentRequest`` fields: num_tokens, or the serving
    load of its phase."""
    if form.size != "load":
        # MTP still shapes the exported worker (requests per rank, speculative_config)
        return {"num_tokens": form.tokens, "mtp": form.mtp}
    if form.phase == "decode":
        return {"concurrency": form.conc, "mtp": form.mtp, "max_batch_size": form.mbs}
    # MTP also shapes a prefill worker's document (its speculative_config)
    return {
        "max_num_tokens": form.mnt,
        "isl": form.isl,
        "max_batch_size": form.mbs,
        "mtp": form.mtp,
    }


def _number(cid: str, value: int | None, minimum: int = 1) -> dcc.Input:
    return number(cid, value, minimum)


def size_controls(form: Form) -> html.Div:
    """How the workload is given: num_tokens, or the serving load (shown by phase)."""
    return html.Div(
        [
            control(
                "workload from",
                dcc.RadioItems(
                    id="rec-size",
                    options=[
                        {"label": "num_tokens", "value": "tokens"},
                        {"label": "serving load (concurrency / max_num_tokens)", "value": "load"},
                    ],
                    value=form.size,
                    inline=True,
                ),
                wide=True,
            ),
            html.Div(
                control(
                    "num_tokens (tokens; global under DP, per rank under TP)",
                    _number("rec-tokens", form.tokens),
                    wide=True,
                ),
                id="rec-tokens-box",
            ),
            html.Div(
                [
                    control(
                        "concurrency (requests in flight, decode)", _number("rec-conc", form.conc)
                    ),
                    control("MTP draft tokens (decode)", _number("rec-mtp", form.mtp, minimum=0)),
                    control(
                        "max_batch_size (requests per rank; optional)", _number("rec-mbs", form.mbs)
                    ),
                    control(
                        "max_num_tokens (tokens per forward, prefill)", _number("rec-mnt", form.mnt)
                    ),
                    control("ISL (tokens, prefill; optional)", _number("rec-isl", form.isl)),
                ],
                id="rec-load-box",
                className="controls",
            ),
            html.Div(
                id="rec-size-note", className="status", **ui.attrs(data_testid="rec-size-note")
            ),
        ],
        className="controls",
    )


def controls(
    form: Form,
    models: list[str],
    hardware: list[str],
    quants: list[str],
    patterns: list[str] | None = None,
) -> html.Div:
    """The deployment controls, set to ``form`` (``form_from_controls`` reads them back).
    ``patterns``: the routing patterns the measured rows can be read under."""
    pattern_opts = [{"label": "default (balanced where measured)", "value": ""}] + ui.options(
        patterns or []
    )
    return html.Div(
        [
            control(
                "GPU / system",
                dcc.Dropdown(
                    id="rec-hardware",
                    options=ui.options(hardware),
                    value=form.hardware,
                    clearable=False,
                ),
            ),
            control(
                "model",
                dcc.Dropdown(
                    id="rec-model", options=ui.options(models), value=form.model, clearable=False
                ),
            ),
            control(
                "quantization",
                dcc.Dropdown(
                    id="rec-quant", options=ui.options(quants), value=form.quant, clearable=False
                ),
            ),
            control("world size (GPUs)", _number("rec-ws", form.ws)),
            control(
                "attention",
                dcc.RadioItems(id="rec-attn", options=["DP", "TP"], value=form.attn, inline=True),
            ),
            control(
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
            size_controls(form),
            control(
                "thresholds",
                dcc.RadioItems(
                    id="rec-th",
                    options=[
                        {"label": "published", "value": "published"},
                        {"label": "derived from this data", "value": "derived"},
                        {"label": "validated (derived where it generalises)", "value": "validated"},
                    ],
                    value=form.th,
                    inline=True,
                ),
                wide=True,
            ),
            control(
                "routing pattern of the measurements (dispatch)",
                dcc.Dropdown(
                    id="rec-dispatch",
                    options=pattern_opts,
                    value=form.dispatch or "",
                    clearable=False,
                ),
            ),
            control(
                "repeat runs",
                dcc.RadioItems(
                    id="rec-repeats",
                    options=[
                        {"label": "median over repeats", "value": "median"},
                        {"label": "latest run only", "value": "latest"},
                    ],
                    value=form.repeats,
                    inline=True,
                ),
                wide=True,
            ),
        ],
        className="controls",
    )
