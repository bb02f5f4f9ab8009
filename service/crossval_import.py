"""Serving-config import: InferenceX masters and srt-slurm recipes -> stored workloads.

``moedash import-serving DIR`` imports a directory laid out like ``shared/data``;
``POST /api/v1/serving-configs`` sends the same tree as files named by their path under
the data root, which :func:`import_serving_files` checks, lays out in a temporary
directory and imports the same way. Problems with the files raise
:class:`ServingFilesError` naming the file.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import yaml

from analysis.serving_map import map_workloads
from db.crossval_records import ServingImportResult
from db.store import Store
from ingest.serving_configs import (
    ImportResult,
    import_directory,
    master_files,
    points_frame,
    recipe_configs,
)
from service.crossval import full_ledger

NO_MASTER = (
    "no NVIDIA master among the files: send inferencex/configs/nvidia-master.yaml "
    "and/or inferencex/configs/deprecated/nvidia-*-master.yaml (paths relative to "
    "the data root)"
)


@dataclass(frozen=True)
class ServingImport:
    """A parsed serving-config tree and what the store did with it."""

    parsed: ImportResult
    stored: ServingImportResult


class ServingFilesError(ValueError):
    """Sent files that cannot be imported. ``loc`` is the path below the list of files
    (``[index]`` or ``[filename]``, empty for the set as a whole), ``kind`` one of
    ``missing``, ``invalid_path``, ``invalid_yaml``, ``invalid_config``."""

    def __init__(self, loc: list[str | int], msg: str, kind: str) -> None:
        super().__init__(msg)
        self.loc = loc
        self.msg = msg
        self.kind = kind


def import_serving_directory(store: Store, data_dir: Path, source: str | None) -> ServingImport:
    """Parse the masters and recipes under ``data_dir`` (laid out like ``shared/data``),
        map them to workloads and store them (idempotent, see ``Store.import_serving``), then
    compute and store the ledger of every workload (``service.crossval.full_ledger``).

        Raises ``ValueError`` (or ``yaml.YAMLError``) for a master that cannot be parsed.
    """
    parsed = import_directory(data_dir)
    points = points_frame(parsed)
    workloads = map_workloads(points, recipe_configs(parsed))
    stored = store.crossval.import_serving(points, workloads, parsed.content_hash, source)
    # The ledger is computed here, at import, and stored: page views only read it.
    full_ledger(store)
    return ServingImport(parsed, stored)


def relative_path(name: str | None, index: int) -> str:
    """``name`` as a safe ``.yaml``/``.yml`` path relative to the data root (no absolute
    path, no empty, ``.`` or ``..`` part, no backslash or NUL). Raises
    :class:`ServingFilesError` (loc ``[index]`` without a name, else ``[name]``)."""
    if not name:
        raise ServingFilesError(
            [index], "each part needs a filename (its path under the data root)", "missing"
        )
    p = PurePosixPath(name)
    bad = (
        "\\" in name
        or "\0" in name
        or p.is_absolute()
        or any(part in ("", ".", "..") for part in name.split("/"))
    )
    if bad:
        raise ServingFilesError(
            [name], "filename must be a relative path without '..'", "invalid_path"
        )
    if p.suffix.lower() not in (".yaml", ".yml"):
        raise ServingFilesError([name], "only .yaml/.yml files are imported", "invalid_path")
    return str(p)


def check_yaml(files: Mapping[str, bytes]) -> None:
    """Every file is UTF-8 YAML, else :class:`ServingFilesError` naming the first bad one."""
    for name, raw in files.items():
        try:
            yaml.safe_load(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise ServingFilesError(
                [name], f"{name}: not UTF-8 text ({exc.reason})", "invalid_yaml"
            ) from exc
        except yaml.YAMLError as exc:
            problem = " ".join(str(exc).split())
            raise ServingFilesError(
                [name], f"{name}: invalid YAML: {problem}", "invalid_yaml"
            ) from exc


def import_serving_files(store: Store, files: Mapping[str, bytes], source: str) -> ServingImport:
    """Import files named by their relative path under the data root (already checked by
    :func:`relative_path`): each must be YAML, at least one must be an NVIDIA master, and
    a master that does not parse is named in the error."""
    check_yaml(files)
    with tempfile.TemporaryDirectory(prefix="moedash-serving-") as tmp:
        root = Path(tmp)
        for name, raw in files.items():
            target = root / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(raw)
        if not any(f.is_file() for f in master_files(root)):
            raise ServingFilesError([], NO_MASTER, "missing")
        try:
            return import_serving_directory(store, root, source)
        except ValueError as exc:
            # load_matrix names the master file and entry in the message.
            name = str(exc).split(":", 1)[0]
            loc: list[str | int] = [name] if name in files else []
            raise ServingFilesError(loc, str(exc), "invalid_config") from exc
