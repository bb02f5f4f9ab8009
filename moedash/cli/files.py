"""Commands that move reports: ``ingest`` (local files → database), ``upload`` (files →
a moedash server) and ``demo`` (the published snapshot, or ``--synthetic`` data → database)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

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
                    result = store.ingest(parse_path(path, meta), raw, meta, uploaded_by="cli")
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


def upload(
    files: Files,
    url: Annotated[str, typer.Option(help="Server base URL, e.g. https://moedash.example.")],
    token: Annotated[str, typer.Option(help="API token with the upload scope.")],
    retries: Annotated[int, typer.Option(help="Retries on network errors, 5xx and 429.")] = 5,
    timeout: Annotated[float, typer.Option(help="Seconds per request.")] = 300.0,
    hardware: Hardware = None,
    trtllm_version: TrtllmVersion = None,
    trtllm_commit: TrtllmCommit = None,
    run_date: RunDate = None,
    ci_url: CiUrl = None,
    notes: Notes = None,
    dispatch: Dispatch = None,
) -> int:
    """Send files to a moedash server (the CI client).

    Network errors, 5xx and 429 are retried with back-off; any other refusal is final
    for that file. Each file is reported; exit code 1 if any failed. Bad metadata is
    refused before anything is sent (exit code 2).
    """
    from moedash.client import upload_file

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
    # the server keeps the file's name, not the local directory it came from
    checked = options.for_files([Path(name).name for name in files], ui)
    if checked is None:
        return USAGE
    failures = 0
    rows: list[tuple[str, str, str, str]] = []
    with ui.progress("upload", len(files)) as steps:
        for name, metadata in zip(files, checked, strict=True):
            steps.start(name)
            try:
                body = upload_file(
                    Path(name),
                    url=url,
                    token=token,
                    meta=metadata,
                    retries=retries,
                    timeout=timeout,
                )
            except Exception as exc:  # every failure is reported per file, then the exit code
                failures += 1
                ui.error(f"{name}: {exc}")
                rows.append((name, "FAILED", "-", "-"))
            else:
                rows.append(_upload_row(name, body))
            steps.done()
    ui.table(("file", "result", "run ids", "candidates"), rows)
    return FAILED if failures else OK


def _upload_row(name: str, body: dict[str, Any]) -> tuple[str, str, str, str]:
    state = "already existed" if body["already_existed"] else "stored"
    ids = ",".join(str(r["run_id"]) for r in body["runs"])
    return (name, state, ids, str(body["n_candidates"]))


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
