"""The installable package (what the Docker image gets from `pip install .`) carries
every module of the app, the `moedash` console script points at the CLI, and the
Dockerfile / docker-compose.yml build and run that package."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import yaml
from setuptools import find_packages

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("analysis", "db", "ingest", "service", "api", "dashboard", "moedash")


def pyproject() -> dict[str, Any]:
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def test_every_source_directory_is_a_packaged_package() -> None:
    include = pyproject()["tool"]["setuptools"]["packages"]["find"]["include"]
    packaged = set(find_packages(where=str(REPO), include=include))
    source_dirs = {
        ".".join(p.parent.relative_to(REPO).parts)
        for root in PACKAGES
        for p in (REPO / root).rglob("*.py")
        if "__pycache__" not in p.parts
    }
    assert set(PACKAGES) <= source_dirs
    assert source_dirs <= packaged, f"not packaged (missing __init__.py?): {source_dirs - packaged}"
    assert not any(name.startswith("tests") for name in packaged)


def test_non_python_files_in_packages_are_package_data() -> None:
    """A wheel carries only .py files unless [tool.setuptools.package-data] names the rest."""
    declared = pyproject()["tool"].get("setuptools", {}).get("package-data", {})
    missing = []
    for root in PACKAGES:
        for path in (REPO / root).rglob("*"):
            if not path.is_file() or path.suffix in (".py", ".pyc") or "__pycache__" in path.parts:
                continue
            package = ".".join(path.parent.relative_to(REPO).parts)
            patterns = declared.get(package, []) + declared.get("*", [])
            if not any(path.match(pattern) for pattern in patterns):
                missing.append(str(path.relative_to(REPO)))
    assert not missing, f"not in package-data: {missing}"


def test_console_script_targets_the_cli() -> None:
    assert pyproject()["project"]["scripts"]["moedash"] == "moedash.cli:main"
    from moedash.cli import main

    assert callable(main)


def test_dockerfile_copies_every_package_and_the_static_files() -> None:
    text = (REPO / "Dockerfile").read_text()
    copied = {m.group(1) for m in re.finditer(r"^COPY\s+(\S+)\s+\1\s*$", text, re.M)}
    assert copied >= {*PACKAGES, "static"}, f"not copied: {set(PACKAGES) - copied}"
    assert re.search(r"^RUN pip install --no-cache-dir \.$", text, re.M)
    # the app finds static/ in the working directory when installed (moedash.app)
    assert re.search(r"^WORKDIR /app$", text, re.M)
    assert 'CMD ["moedash", "serve", "--no-demo"]' in text


def test_compose_commands_exist_in_the_cli() -> None:
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    commands = [s["command"] for s in compose["services"].values() if "command" in s]
    assert ["moedash", "migrate"] in commands
    for command in commands:
        assert command[0] == "moedash"
        help_text = subprocess.run(
            [sys.executable, "-m", "moedash.cli", *command[1:2], "--help"],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert help_text.returncode == 0, help_text.stderr
        for option in command[2:]:
            assert option in help_text.stdout, (command, option)


def test_compose_environment_names_real_settings() -> None:
    from moedash.settings import Settings

    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    names = {
        key
        for service in compose["services"].values()
        for key in (service.get("environment") or {})
        if key.startswith("MOEDASH_")
    }
    assert names, "the app services are configured through MOEDASH_* settings"
    fields = {f"MOEDASH_{name.upper()}" for name in Settings.model_fields}
    assert names <= fields, f"unknown settings: {names - fields}"
