"""The ``moedash`` command: the typer app, ``--version`` and :func:`main`.

:func:`main` runs the app without letting click call ``sys.exit`` (tests call
``main([...])`` and check the returned code) and maps click's outcomes to the exit
codes of docs/cli.md: 0 success, 1 some inputs failed, 2 usage error (unknown command
or option, missing argument, bad metadata), 130 interrupted.
"""

from __future__ import annotations

import importlib.metadata
import sys
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer

from db.errors import StoreError
from moedash.cli import admin, answers, files, upload
from moedash.cli.console import Output
from moedash.cli.options import FAILED, OK

INTERRUPTED = 130  # what a shell reports for a command stopped by Ctrl-C

_PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def pyproject_version(path: Path = _PYPROJECT) -> str | None:
    """``project.version`` of the source tree's pyproject.toml, or None without one."""
    try:
        version = tomllib.loads(path.read_text(encoding="utf-8"))["project"]["version"]
    except (OSError, KeyError, TypeError, tomllib.TOMLDecodeError):
        return None
    return str(version)


def package_version() -> str:
    """The installed distribution's version; a source checkout that was never
    installed falls back to its pyproject.toml ("unknown" when neither exists)."""
    try:
        return importlib.metadata.version("moedash")
    except importlib.metadata.PackageNotFoundError:
        return pyproject_version() or "unknown"


def _show_version(value: bool) -> None:
    if value:
        Output().line(f"moedash {package_version()}")
        raise typer.Exit(OK)


app = typer.Typer(
    name="moedash",
    help="Browse, cross-validate and act on TensorRT-LLM bench_moe MoE sweeps.\n\n"
    "Exit codes: 0 success, 1 some inputs failed, 2 usage error, 3 regression found "
    "(upload --fail-on-regression, or --fail-on-inconclusive), 130 interrupted.",
    no_args_is_help=True,
    add_completion=False,
    # docstrings are wrapped at 100 columns in the source; markdown reflows them
    rich_markup_mode="markdown",
    pretty_exceptions_enable=False,
)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_show_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Browse, cross-validate and act on TensorRT-LLM bench_moe MoE sweeps."""


app.command("serve")(admin.serve)
app.command("best")(answers.best)
app.command("migrate")(admin.migrate)
app.command("demo")(files.demo)
app.command("ingest")(files.ingest)
app.command("upload")(files.upload)
app.add_typer(admin.token_app, name="token")
app.command("import-serving")(admin.import_serving)
app.command("outcomes")(admin.outcomes)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``moedash`` with ``argv`` (default: the process arguments); the exit code."""
    command = typer.main.get_command(app)
    args = list(argv) if argv is not None else sys.argv[1:]
    try:
        result = command.main(
            args=args,
            prog_name="moedash",
            standalone_mode=False,
        )
    except typer.TyperException as exc:  # click's usage errors (exit_code 2) and kin
        show = getattr(exc, "show", None)
        if callable(show):
            show()
        else:
            Output().error(exc.format_message())
        upload.usage_error_document(args, exc.format_message())  # `upload --json`: still JSON
        return int(exc.exit_code)
    except typer.Abort:
        Output().error("aborted")
        return INTERRUPTED
    except StoreError as exc:  # the database is unreachable or refused: one line, no traceback
        Output().error(f"database: {exc}")
        return FAILED
    if isinstance(result, int):  # a command's return, or click's code for --help/--version
        return result
    return OK if result is None else FAILED
