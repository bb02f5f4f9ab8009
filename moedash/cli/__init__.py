"""The ``moedash`` command line (typer + rich): serve, migrate, demo, ingest, upload,
token, import-serving, outcomes. Every command and exit code is described in docs/cli.md."""

from moedash.cli.root import app, main

__all__ = ["app", "main"]
