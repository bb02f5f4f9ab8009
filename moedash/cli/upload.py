"""``moedash upload``: the CI client on the command line.

The server and the token come from ``--url`` / ``MOEDASH_URL`` and ``--token`` /
``--token-file`` / ``MOEDASH_TOKEN`` (a flag wins over the environment), so the secret
need not appear in ``ps`` or in ``set -x`` logs. stdout carries the result (the summary
table, or with ``--json`` exactly one JSON document, whatever the outcome); stderr
carries progress, retries and errors as they happen.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from moedash.cli.console import Output
from moedash.cli.options import (
    FAILED,
    INTERRUPTED,
    OK,
    USAGE,
    CiUrl,
    Dispatch,
    Hardware,
    MetaOptions,
    Notes,
    RunDate,
    TrtllmCommit,
    TrtllmVersion,
)
from moedash.cli.upload_report import Report

if TYPE_CHECKING:
    from moedash.client import RetryNotice

Files = Annotated[list[str], typer.Argument(help="Report files (bench_moe JSON, data.js, CSV).")]
_CI = "Server, token and CI behaviour"


def _token(token: str | None, token_file: Path | None, report: Report) -> str | None:
    """The token: ``--token``, else ``--token-file``, else ``$MOEDASH_TOKEN``."""
    if token and token_file:
        report.usage("token: give --token or --token-file, not both")
        return None
    if token_file is not None:
        try:
            text = token_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            report.usage(f"token-file: cannot read {token_file}: {exc}")
            return None
        if not text:
            report.usage(f"token-file: {token_file} is empty")
            return None
        return text
    value = token or os.environ.get("MOEDASH_TOKEN", "").strip()
    if not value:
        report.usage("token: give --token, --token-file or set MOEDASH_TOKEN")
        return None
    return value


def _announce(ui: Output, name: str) -> Callable[[RetryNotice], None]:
    """Print a retry on stderr as it happens: ``x.json: retry 2/5 in 2 s: …``."""

    def note(notice: RetryNotice) -> None:
        ui.note(f"{name}: {notice}")

    return note


def upload(
    files: Files,
    url: Annotated[
        str | None,
        typer.Option(
            help="Server base URL, e.g. https://moedash.example (default: $MOEDASH_URL).",
            rich_help_panel=_CI,
        ),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            help="API token with the upload scope (default: --token-file, then "
            "$MOEDASH_TOKEN; prefer those: a flag shows in `ps`).",
            rich_help_panel=_CI,
        ),
    ] = None,
    token_file: Annotated[
        Path | None,
        typer.Option(help="File holding the API token.", rich_help_panel=_CI),
    ] = None,
    retries: Annotated[
        int,
        typer.Option(min=0, help="Retries on network errors, 5xx and 429.", rich_help_panel=_CI),
    ] = 5,
    retry_delay: Annotated[
        float,
        typer.Option(
            min=0.0,
            help="Seconds before the first retry; doubles each retry, capped at 30.",
            rich_help_panel=_CI,
        ),
    ] = 1.0,
    timeout: Annotated[
        float, typer.Option(help="Seconds per request.", rich_help_panel=_CI)
    ] = 300.0,
    json_output: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print one JSON document on stdout (run ids, already_existed, "
            "regressions, errors), whatever the outcome.",
            rich_help_panel=_CI,
        ),
    ] = False,
    fail_on_regression: Annotated[
        bool,
        typer.Option(
            help="Exit 3 when the server finds a conclusive regression against the latest "
            "earlier version (slower beyond the threshold and the noise band).",
            rich_help_panel=_CI,
        ),
    ] = False,
    fail_on_inconclusive: Annotated[
        bool,
        typer.Option(
            help="Exit 3 on any slower row beyond the threshold, also one inside the noise "
            "band (inconclusive: a re-run could give it). The strict gate.",
            rich_help_panel=_CI,
        ),
    ] = False,
    threshold: Annotated[
        float | None,
        typer.Option(
            min=0.0,
            max=1000.0,
            help="Regression threshold in percent (default: the server's).",
            rich_help_panel=_CI,
        ),
    ] = None,
    hardware: Hardware = None,
    trtllm_version: TrtllmVersion = None,
    trtllm_commit: TrtllmCommit = None,
    run_date: RunDate = None,
    ci_url: CiUrl = None,
    notes: Notes = None,
    dispatch: Dispatch = None,
) -> int:
    """Send files to a moedash server (the CI client).

    Network errors, 5xx and 429 are retried with back-off, each retry announced on
    stderr; any other refusal is final for that file. Sending stored bytes again (a
    retried job, with a new --ci-url) is success: the server records the new metadata as
    a sighting. Exit codes: 0 done, 1 a file failed, 2 usage (bad metadata, no URL or
    token: nothing sent), 3 a conclusive regression with --fail-on-regression (any
    slower row, inconclusive ones too, with --fail-on-inconclusive), 130 interrupted.
    """
    from moedash.client import RetryPolicy, UploadFailed, upload_file  # httpx: lazily

    ui = Output()
    report = Report(ui, json_output=json_output)
    base = (url or os.environ.get("MOEDASH_URL", "")).strip()
    if not base:
        report.usage("url: give --url or set MOEDASH_URL")
    secret = _token(token, token_file, report)
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
    checked = options.for_files([Path(name).name for name in files], report)
    if checked is None or report.usage_errors or secret is None:
        return report.finish(
            USAGE, fail_on_regression=fail_on_regression, fail_on_inconclusive=fail_on_inconclusive
        )
    policy = RetryPolicy(retries=retries, first_delay=retry_delay)
    try:
        with ui.progress("upload", len(files)) as steps:
            for i, (name, metadata) in enumerate(zip(files, checked, strict=True), 1):
                steps.start(name)
                ui.note(f"[{i}/{len(files)}] {name}: sending to {base}")
                try:
                    body = upload_file(
                        Path(name),
                        url=base,
                        token=secret,
                        meta=metadata,
                        timeout=timeout,
                        policy=policy,
                        on_retry=_announce(ui, name),
                        regression_threshold_pct=threshold,
                    )
                except UploadFailed as exc:
                    report.failed(name, str(exc), exc.status, exc.detail, exc.attempts)
                except Exception as exc:  # every failure is reported per file, then the code
                    report.failed(name, f"{type(exc).__name__}: {exc}", None, [], 1)
                else:
                    report.answered(name, body)
                steps.done()
    except KeyboardInterrupt:
        report.interrupted()
        return report.finish(
            INTERRUPTED,
            fail_on_regression=fail_on_regression,
            fail_on_inconclusive=fail_on_inconclusive,
        )
    code = FAILED if report.failures else OK
    return report.finish(
        code, fail_on_regression=fail_on_regression, fail_on_inconclusive=fail_on_inconclusive
    )


def usage_error_document(argv: list[str], message: str) -> bool:
    """For ``moedash upload … --json`` refused by the option parser itself (unknown
    option, a value of the wrong type): print the one JSON document anyway. True when
    printed."""
    if not argv or argv[0] != "upload" or "--json" not in argv:
        return False
    doc: dict[str, Any] = {
        "ok": False,
        "exit_code": USAGE,
        "files": [],
        "run_ids": [],
        "already_existed": False,
        "regressions": [],
        "inconclusive": [],
        "errors": [{"file": None, "message": message, "http_status": None, "detail": []}],
    }
    sys.stdout.write(json.dumps(doc) + "\n")
    sys.stdout.flush()
    return True
