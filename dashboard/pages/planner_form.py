"""The /planner form: its URL (the permalink), its controls and the plan request it
stands for.

URL keys: ``model seq slo gpu(repeated) mode nm xpn fq cap near ff sens`` (cap: GPU cap
per plan, near: % band of "nearly as good" plans, ff=1: use the Te fit even below the R²
bar, sens=1: ±20 % price and sequence-length sensitivity, ca/cb: the ranks of the two
plans compared side by side), model figures
``E K h hff L g dense pa pe`` (pa/pe in GB) and GPU figures ``<GPU>.<field>`` (e.g.
``H20.price=1.9``);
only values that differ from the catalogue are kept. Controls are read back through the
URL parser, so the page and its URL always agree. The request is validated by
``service.planner_request.PlanRequest``, exactly as the API validates it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from analysis.planner import GPUS, MODELS
from dashboard import components as ui
from service.planner_request import GPU_FIELDS, PlanRequest

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
INT_KEYS = {"E", "K", "h", "hff", "L", "dense"}
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


# ------------------------------------------------------------------ form <-> URL
@dataclass(frozen=True)
class Form:
    """The form's state: catalogue names, the workload, search knobs and the edits
    (``model_over`` by URL key, ``gpu_over`` by GPU and field) that differ from the
    catalogue."""

    model: str = DEFAULT_MODEL
    seq: float = 650.0  # the paper's workload (571 in + 159/2 out)
    slo: float = 150.0
    gpus: tuple[str, ...] = DEFAULT_GPUS
    mode: str = "homogeneous"
    nm: int = 4
    xpn: int | None = None
    fq: str | None = None
    cap: int | None = None  # max GPUs per plan
    near: float = 2.0  # % of the best tokens/s per cost
    ff: bool = False  # force the Te fit
    sens: bool = False  # re-plan at ±20 % prices and sequence length
    ca: int = 1  # plans compared side by side: ranks in the alternatives (1 = best)
    cb: int = 2
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
            "cap": self.cap,
            "near": None if self.near == 2.0 else _txt(self.near),
            "ff": "1" if self.ff else None,
            "sens": "1" if self.sens else None,
            "ca": None if self.ca == 1 else self.ca,
            "cb": None if self.cb == 2 else self.cb,
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
    """The catalogue's figure for a model input (pa/pe in GB); None for an unknown model."""
    spec = MODELS.get(model)
    if spec is None:
        return None
    value = float(getattr(spec, MODEL_KEYS[key]))
    return value / GB if key in ("pa", "pe") else value


def _differs(a: float, b: float | None) -> bool:
    return b is None or abs(a - b) > 1e-9 * max(1.0, abs(b))


def parse_form(query: dict[str, Any], start: tuple[str, str] | None = None) -> Form:
    """Query (strings or lists of strings) -> Form; bad values fall back to defaults.
    ``start`` (model, GPU) replaces the catalogue's default model and GPU when the query
    names neither (the page passes the store's: ``service.planner_defaults``)."""
    d = Form()
    if start is not None and "model" not in query and "gpu" not in query:
        d = Form(model=start[0], gpus=(start[1],))
    model = ui.first(query, "model") or d.model
    model = model if model in MODELS else d.model
    raw_gpus = query.get("gpu", list(d.gpus))
    names = raw_gpus if isinstance(raw_gpus, list) else [raw_gpus]
    gpus = tuple(dict.fromkeys(str(n).upper() for n in names if str(n).upper() in GPUS))
    mode = ui.first(query, "mode") or d.mode
    seq = _num(ui.first(query, "seq"))
    slo = _num(ui.first(query, "slo"))
    nm = ui.as_int(ui.first(query, "nm"), d.nm) or d.nm
    cap = ui.as_int(ui.first(query, "cap"))
    near = _num(ui.first(query, "near"))
    model_over = {}
    for key in MODEL_KEYS:
        value = _num(ui.first(query, key))
        if value is not None and value > 0 and _differs(value, catalog_model_value(model, key)):
            model_over[key] = float(int(value)) if key in INT_KEYS else value
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
        nm=min(8, max(3, nm)),
        xpn=ui.as_int(ui.first(query, "xpn")),
        fq=ui.first(query, "fq") or None,
        cap=cap if cap is not None and cap >= 2 else None,
        near=near if near is not None and 0 <= near <= 100 else d.near,
        ff=str(ui.first(query, "ff") or "") in ("1", "true", "True"),
        sens=str(ui.first(query, "sens") or "") in ("1", "true", "True"),
        ca=_rank(ui.first(query, "ca"), d.ca),
        cb=_rank(ui.first(query, "cb"), d.cb),
        model_over=model_over,
        gpu_over=gpu_over,
    )


def _rank(value: Any, default: int) -> int:
    """A compared plan's rank, 1..TOP_ALTERNATIVES (bad values: the default)."""
    n = ui.as_int(value)
    return n if n is not None and 1 <= n <= TOP_ALTERNATIVES else default


def plan_request(form: Form) -> PlanRequest:
    """The API request this form stands for (pydantic ValidationError if out of range):
    pa/pe from GB to bytes, integer fields as integers, the top alternatives only."""
    over: dict[str, Any] = {}
    for key, value in form.model_over.items():
        name = MODEL_KEYS[key]
        over[name] = (
            value * GB if key in ("pa", "pe") else (int(value) if key in INT_KEYS else value)
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
            "max_gpus": form.cap,
            "near_best_pct": form.near,
        },
        "fit": {"quant": form.fq, "force": form.ff},
        "top": TOP_ALTERNATIVES,
        "sensitivity": form.sens,
    }
    if over:
        body["model_overrides"] = over
    return PlanRequest.model_validate(body)


# ------------------------------------------------------------------ controls
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
    """Experts-per-node choices: auto, then the powers of two that divide the experts."""
    e = ui.as_int(num_experts) or 0
    choices = [x for x in (2**i for i in range(13)) if e and x <= e and e % x == 0]
    return [{"label": "auto (powers of two)", "value": 0}] + [
        {"label": f"{x} per node", "value": x} for x in choices
    ]


def model_value(form: Form, key: str) -> float | None:
    """The model input's value: the form's edit, else the catalogue's (pa/pe in GB)."""
    value = form.model_over.get(key, catalog_model_value(form.model, key))
    if value is None:
        return None
    return int(value) if key in INT_KEYS else round(value, 4)


def form_from_controls(
    model: Any,
    seq: Any,
    slo: Any,
    gpus: Any,
    mode: Any,
    nm: Any,
    xpn: Any,
    fq: Any,
    cap: Any,
    near: Any,
    ff: Any,
    sens: Any,
    ca: Any,
    cb: Any,
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
        "cap": cap,
        "near": near,
        "ff": "1" if ff else None,
        "sens": "1" if sens else None,
        "ca": ca,
        "cb": cb,
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
