"""Answers on the command line: ``moedash best``.

The same code path as ``GET /api/v1/best`` and the Best page (``service.best.best_table``
over one read path, ``service.frames.DashData``), so a CI job or a terminal gets the very
table the dashboard shows -- winners, margins, noise bands and the confidence verdict
(deploy / tie: either / measure first) with its one-line note; ``--format json`` is the
API's JSON body, ``csv`` its CSV.
"""

from __future__ import annotations

import io
import json
from typing import Annotated, Any, Literal

import typer

from analysis.tables import plain_value
from db.errors import StoreError
from db.store import open_store
from moedash.cli.console import Output
from moedash.cli.options import FAILED, OK, USAGE, Db, settings_for

Fmt = Literal["table", "json", "csv"]
# the columns the terminal table shows (the JSON and CSV have every column)
TABLE_COLUMNS = (
    "world_size",
    "num_tokens",
    "attn",
    "cuda_graph",
    "best_backend",
    "best_comm",
    "best_parallel_mode",
    "best_score_ms",
    "runner_up_backend",
    "margin_pct",
    "noise_band_pct",
    "confidence",
)


def _records(items: Any) -> list[dict[str, Any]]:
    return [
        {k: plain_value(v) for k, v in row.items()}
        for row in items.astype(object).where(items.notna(), None).to_dict("records")
    ]


def _cell(value: Any) -> object:
    v = plain_value(value)
    return "" if v is None else (f"{v:.4g}" if isinstance(v, float) else v)


def best(
    model: Annotated[str, typer.Option(help="bench_moe model name.")],
    hardware: Annotated[str, typer.Option(help="GPU / system label, e.g. GB300.")],
    quant: Annotated[str, typer.Option(help="Quantization, e.g. NVFP4.")],
    world_size: Annotated[int | None, typer.Option(help="Only this world size.")] = None,
    phase: Annotated[str | None, typer.Option(help="decode or prefill.")] = None,
    attention: Annotated[str | None, typer.Option(help="dp or tp.")] = None,
    dispatch: Annotated[
        str | None, typer.Option(help="Routing pattern (default: balanced where measured).")
    ] = None,
    grouping: Annotated[str, typer.Option(help="dashboard or bench_moe.")] = "dashboard",
    repeats: Annotated[str, typer.Option(help="median or latest.")] = "median",
    fmt: Annotated[str, typer.Option("--format", help="table, json or csv.")] = "table",
    db: Db = None,
) -> int:
    """Best configuration per workload of one cell, with its confidence verdict."""
    from pydantic import ValidationError

    from service.best import best_table
    from service.errors import ServiceError
    from service.frames import DashData
    from service.scope import Scope

    ui = Output()
    if fmt not in ("table", "json", "csv"):
        ui.error(f"--format: {fmt!r} is not one of table, json, csv")
        return USAGE
    if grouping not in ("dashboard", "bench_moe") or repeats not in ("median", "latest"):
        ui.error("--grouping takes dashboard or bench_moe; --repeats median or latest")
        return USAGE
    try:
        scope = Scope(
            model=model,
            hardware=hardware,
            quant=quant,
            world_size=world_size,
            phase=phase,
            attention=attention,
            dispatch=dispatch,
        )
    except ValidationError as exc:
        err = exc.errors()[0]
        ui.error(f"--{str(err['loc'][0]).replace('_', '-')}: {err['msg']}")
        return USAGE
    store = open_store(settings_for(db).database_url, upgrade=False)
    try:
        answer = best_table(DashData(store), scope, grouping, repeats)  # type: ignore[arg-type]
    except ServiceError as err:
        ui.error(f"--{err.field.replace('_', '-')}: {err.msg}")
        return FAILED
    except StoreError as exc:
        ui.error(str(exc))
        return FAILED
    finally:
        store.close()
    items = answer.items
    if fmt == "json":
        body = {
            "grouping": grouping,
            "provenance": answer.provenance,
            "repeats": "per_run" if grouping == "bench_moe" else answer.repeats,
            "items": _records(items),
        }
        ui.line(json.dumps(body, default=str))
        return OK
    if fmt == "csv":
        out = io.StringIO()
        items.to_csv(out, index=False)
        ui.line(out.getvalue().rstrip("\n"))
        return OK
    if items.empty:
        ui.note(f"{scope.model} · {scope.hardware} · {scope.quant}: no successful candidates")
        return OK
    cols = [c for c in TABLE_COLUMNS if c in items]
    rows = [[_cell(r[c]) for c in cols] for _, r in items.iterrows()]
    ui.table(cols, rows)
    ui.note(
        "confidence: deploy = margin beyond what a re-run could give; tie: either = inside "
        "it; measure first = too little evidence (`--format json` has each row's note)"
    )
    return OK
