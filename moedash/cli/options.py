"""Options shared by several commands: the database URL and the upload metadata."""

from __future__ import annotations

from typing import Annotated, Protocol

import typer

from ingest.metadata import MetadataError, UploadMetadata, validate_metadata
from moedash.settings import Settings

# Exit codes (documented in docs/cli.md and the root --help).
OK = 0
FAILED = 1  # some inputs failed, or the command could not do its job
USAGE = 2  # the command line itself is wrong: unknown option, bad metadata …
REGRESSION = 3  # `upload --fail-on-regression`: the server found a regression
INTERRUPTED = 130  # what a shell reports for a command stopped by Ctrl-C


class ErrorSink(Protocol):
    """Where refused options are reported (an :class:`Output`, or the upload report)."""

    def error(self, text: str) -> None: ...


Db = Annotated[
    str | None,
    typer.Option("--db", help="Database URL (default: $MOEDASH_DATABASE_URL or the DuckDB file)."),
]

_META = "Metadata the file lacks"
Hardware = Annotated[
    str | None,
    typer.Option(
        help="System label (GB300, B300, H200 …); inferred when possible.",
        rich_help_panel=_META,
    ),
]
TrtllmVersion = Annotated[
    str | None,
    typer.Option(help="TensorRT-LLM version, e.g. v1.3.0rc26.", rich_help_panel=_META),
]
TrtllmCommit = Annotated[
    str | None,
    typer.Option(help="Commit, when the report's trtllm_commit is null.", rich_help_panel=_META),
]
RunDate = Annotated[
    str | None, typer.Option(help="Date the sweep ran (YYYY-MM-DD).", rich_help_panel=_META)
]
CiUrl = Annotated[
    str | None,
    typer.Option(help="Link to the CI run that produced the file.", rich_help_panel=_META),
]
Notes = Annotated[str | None, typer.Option(help="Free text.", rich_help_panel=_META)]
Dispatch = Annotated[
    str | None,
    typer.Option(help="Dispatch/routing label (default: from the report).", rich_help_panel=_META),
]


def settings_for(db: str | None) -> Settings:
    """The settings from the environment, with ``--db`` winning over it."""
    return Settings(database_url=db) if db else Settings()


class MetaOptions:
    """The metadata options of ``ingest``/``upload`` as given on the command line."""

    def __init__(
        self,
        *,
        hardware: str | None,
        trtllm_version: str | None,
        trtllm_commit: str | None,
        run_date: str | None,
        ci_url: str | None,
        notes: str | None,
        dispatch: str | None,
    ) -> None:
        # An empty option (e.g. `--notes "$NOTES"` with NOTES unset) means "not given",
        # as an empty form field does for the API.
        given = {
            "hardware": hardware,
            "trtllm_version": trtllm_version,
            "trtllm_commit": trtllm_commit,
            "run_date": run_date,
            "ci_url": ci_url,
            "notes": notes,
            "dispatch": dispatch,
        }
        self.values = {name: value for name, value in given.items() if value}

    def for_files(self, names: list[str], ui: ErrorSink) -> list[UploadMetadata] | None:
        """The options plus each file name, checked by the upload-metadata model.

        Every refused field is printed as ``field: problem`` (prefixed by the file when
        the file name is the problem) and None returned: the caller exits with
        :data:`USAGE` before touching a database or the network.
        """
        try:
            validate_metadata(self.values)
        except MetadataError as exc:
            for field, problem in exc.problems:
                ui.error(f"{field}: {problem}")
            return None
        checked: list[UploadMetadata] = []
        for name in names:
            try:
                checked.append(validate_metadata({**self.values, "filename": name}))
            except MetadataError as exc:
                for field, problem in exc.problems:
                    ui.error(f"{name}: {field}: {problem}")
        return checked if len(checked) == len(names) else None
