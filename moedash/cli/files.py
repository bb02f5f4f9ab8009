"""Commands that move reports: ``ingest`` (local files → database), ``upload`` (files →
a moedash server; in :mod:`moedash.cli.upload`) and ``demo`` (the published snapshot, or
``--synthetic`` data → database)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from db.errors import Conflict, StoreError
from db.store import Store, open_store
from ingest.errors import InputError
from ingest.metadata import validate_metadata
from moedash.cli.console import Output
from moedash.cli.options import (
    FAILED,
    OK,
    USAGE,
    CiUrl,
    Db,
    Dispatch,
    Hardware,
    MetaOptions,
    Notes,
    RunDate,
    TrtllmCommit,
    TrtllmVersion,
    settings_for,
)
from moedash.cli.upload import upload as upload  # the CI client's command lives there
from service.crossval import refresh_ledger

Files = Annotated[list[str], typer.Argument(help="Report files (bench_moe JSON, data.js, CSV).")]


def ingest(
    files: Files,
    db: Db = None,
    hardware: Hardware = None,
    trtllm_version: TrtllmVersion = None,
    trtllm_commit: TrtllmCommit = None,
    run_date: RunDate = None,
    ci_url: CiUrl = None,
    notes: Notes = None,
    dispatch: Dispatch = None,
) -> int:
    """Parse and store local files.

    Each file is stored on its own: a bad file is reported and the others are still
    stored (exit code 1). Bad metadata is refused before the database is opened (exit
    code 2). Storing the same bytes again is a no-op ("exists").
    """
    from ingest.detect import parse_path

    ui = Output()
    options = MetaOptions(
        hardware=hardware,
        trtllm_version=trtllm_version,
        trtllm_commit=trtllm_commit,
        run_date=run_date,
        ci_url=ci_url,
        notes=notes,
        dispatch=dispatch,
    )
    checked = options.for_files(files, ui)
    if checked is None:
        return USAGE
    store = open_store(settings_for(db).database_url)
    failures = 0
    rows: list[tuple[str, str, str, str]] = []
    try:
        with ui.progress("ingest", len(files)) as steps:
            for name, metadata in zip(files, checked, strict=True):
                steps.start(name)
                path = Path(name)
                try:
                    raw = path.read_bytes()
                    meta = metadata.to_meta()
                    # stored bytes: recorded as a sighting without parsing them again
                    result = store.runs.ingest_known(raw, meta, uploaded_by="cli")
                    if result is None:
                        sweeps = parse_path(path, meta)
                        result = store.ingest(sweeps, raw, meta, uploaded_by="cli")
                except (OSError, InputError, Conflict, StoreError) as exc:
                    failures += 1
                    ui.error(f"{name}: {exc}")
                    rows.append((name, "FAILED", "-", "-"))
                else:
                    state = "exists" if result.already_existed else "stored"
                    ids = ",".join(str(r.run_id) for r in result.runs)
                    rows.append((name, state, ids, str(result.n_candidates)))
                steps.done()
        if any(row[1] == "stored" for row in rows) and len(store.crossval.serving_imports()):
            refresh_ledger(store)  # new sweeps: the stored cross-validation ledger follows
    finally:
        store.close()
    ui.table(("file", "result", "run ids", "candidates"), rows)
    return FAILED if failures else OK


def load_demo(store: Store, ui: Output | None = None) -> int:
    """Load the deterministic synthetic demo dataset; returns candidates stored.

    The demo's metadata goes through the same upload-metadata model as any upload.
    """
    from ingest.demo.generate import demo_reports, dump_report
    from ingest.detect import parse_upload

    ui = ui or Output()
    total = 0
    reports = demo_reports()
    with ui.progress("demo", len(reports)) as steps:
        for i, (report, dmeta) in enumerate(reports, 1):
            filename = f"demo-{i:03d}.json"
            steps.start(filename)
            raw = dump_report(report)
            metadata = validate_metadata(
                {
                    "hardware": dmeta.hardware,
                    "trtllm_version": dmeta.trtllm_version,
                    "run_date": dmeta.run_date,
                    "notes": dmeta.notes,
                    "filename": filename,
                }
            )
            meta = metadata.to_meta(synthetic=True)
            result = store.ingest(parse_upload(raw, meta, filename), raw, meta, uploaded_by="demo")
            total += result.n_candidates
            steps.done()
    return total


def demo(
    db: Db = None,
    synthetic: Annotated[
        bool,
        typer.Option(
            "--synthetic", help="Load the generated synthetic dataset instead (scale tests)."
        ),
    ] = False,
) -> int:
    """Load the published snapshot (NVIDIA sweeps + serving points), or with --synthetic
    the synthetic demo dataset (idempotent: loading either twice stores it once)."""
    from moedash.published import load_published

    ui = Output()
    store = open_store(settings_for(db).database_url)
    try:
        t0 = time.perf_counter()
        if synthetic:
            n = load_demo(store, ui)
            ui.line(f"demo dataset: {n} synthetic candidates in {time.perf_counter() - t0:.1f} s")
        else:
            loaded = load_published(store)
            ui.line(
                f"published snapshot: {loaded.n_candidates} candidates in {loaded.n_runs} runs, "
                f"{loaded.n_workloads} serving workloads in {time.perf_counter() - t0:.1f} s"
            )
    finally:
        store.close()
    return OK
