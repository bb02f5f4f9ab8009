"""The installable package (what the Docker image gets from `pip install .`) carries
every module of the app, and the `moedash` console script points at the CLI."""

from __future__ import annotations

import tomllib
from pathlib import Path

from setuptools import find_packages

REPO = Path(__file__).resolve().parents[2]


def test_every_source_directory_is_a_packaged_package() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    include = config["tool"]["setuptools"]["packages"]["find"]["include"]
    packaged = set(find_packages(where=str(REPO), include=include))
    source_dirs = {
        ".".join(p.parent.relative_to(REPO).parts)
        for root in ("analysis", "db", "ingest", "dashboard")
        for p in (REPO / root).rglob("*.py")
    }
    assert source_dirs <= packaged, f"not packaged (missing __init__.py?): {source_dirs - packaged}"
    assert not any(name.startswith("tests") for name in packaged)


def test_console_script_targets_the_cli() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert config["project"]["scripts"]["moedash"] == "moedash.cli:main"
    from moedash.cli import main

    assert callable(main)
