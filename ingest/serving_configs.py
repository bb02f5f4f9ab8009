"""Import the serving configurations of a data directory: every serving point of the
NVIDIA masters (:mod:`ingest.serving_matrix`) with the srt-slurm recipe it names
(:mod:`ingest.serving_recipes`), as records and as frames for the cross-validation store.

Everything except :func:`import_directory` is a pure function over already-read data, so
the same code serves the CLI, the HTTP upload path and the tests.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from analysis import crossval_columns as cc
from ingest.serving_matrix import ServingPoint, WorkerLayout, digest, load_matrix, no_config_reason
from ingest.serving_recipes import IX_OLD, RecipeRoots, ResolvedRecipe, Unresolved, resolve_recipe


@dataclass(frozen=True)
class ImportResult:
    """The points of every master, each CONFIG_FILE resolved or not, and a hash of it all."""

    points: tuple[ServingPoint, ...]
    recipes: Mapping[str, ResolvedRecipe]  # key: config_file as written
    unresolved: Mapping[str, Unresolved]  # key: config_file as written
    content_hash: str = field(default="")

    def resolution(self, point: ServingPoint) -> ResolvedRecipe | Unresolved:
        """The recipe behind a point, or why there is none."""
        if point.config_file is None:
            return Unresolved(None, no_config_reason(point))
        found = self.recipes.get(point.config_file) or self.unresolved[point.config_file]
        if isinstance(found, ResolvedRecipe) and found.root == IX_OLD and point.is_current:
            # The clean-up commit deleted IX-old files at IX HEAD: the current launcher
            # cannot find them, so a current-master point naming one does not resolve.
            return Unresolved(
                point.config_file, f"only in {found.path}, deleted at InferenceX HEAD"
            )
        return found


def master_files(data_dir: Path) -> list[Path]:
    """The NVIDIA masters, current first, then deprecated in name order."""
    cfg = data_dir / "inferencex" / "configs"
    return [cfg / "nvidia-master.yaml", *sorted((cfg / "deprecated").glob("nvidia-*-master.yaml"))]


def import_directory(data_dir: Path) -> ImportResult:
    """Parse every NVIDIA master under ``data_dir`` and resolve every CONFIG_FILE.

    Idempotent: the same files give the same point ids, recipe hashes and
    ``content_hash`` (a hash over all of them, order-independent).
    """
    roots = RecipeRoots.under(data_dir)
    points: list[ServingPoint] = []
    for f in master_files(data_dir):
        if f.is_file():
            points += load_matrix(f.read_text(encoding="utf-8"), str(f.relative_to(data_dir)))
    recipes: dict[str, ResolvedRecipe] = {}
    unresolved: dict[str, Unresolved] = {}
    for cf in sorted({p.config_file for p in points if p.config_file}):
        r = resolve_recipe(cf, roots)
        if isinstance(r, ResolvedRecipe):
            recipes[cf] = r
        else:
            unresolved[cf] = r
    content_hash = digest(
        json.dumps(
            [sorted(p.point_id for p in points), sorted(r.content_hash for r in recipes.values())]
        )
    )
    return ImportResult(tuple(points), recipes, unresolved, content_hash)


def points_frame(result: ImportResult) -> pd.DataFrame:
    """One row per serving point, columns ``crossval_columns.POINT_COLUMNS``."""
    rows = []
    for p in result.points:
        res = result.resolution(p)
        rows.append(
            {
                cc.POINT_ID: p.point_id,
                cc.SOURCE: p.source,
                cc.ENTRY: p.entry,
                cc.HF_MODEL: p.model,
                cc.MODEL_PREFIX: p.model_prefix,
                cc.PRECISION: p.precision,
                cc.SERVING_HARDWARE: p.hardware,
                cc.FRAMEWORK: p.framework,
                cc.IMAGE: p.image,
                cc.MULTINODE: p.multinode,
                cc.DISAGG: p.disagg,
                cc.SCENARIO: p.scenario,
                cc.ISL: p.isl,
                cc.OSL: p.osl,
                cc.CONC: p.conc,
                cc.SPEC_DECODING: p.spec_decoding,
                **_layout_cols("prefill", p.prefill or p.single),
                **_layout_cols("decode", p.decode or p.single),
                cc.CONFIG_FILE: p.config_file,
                cc.RECIPE_ROOT: res.root if isinstance(res, ResolvedRecipe) else None,
                cc.RECIPE_PATH: res.path if isinstance(res, ResolvedRecipe) else None,
                cc.RECIPE_HASH: res.content_hash if isinstance(res, ResolvedRecipe) else None,
                cc.RECIPE_UNRESOLVED_REASON: res.reason if isinstance(res, Unresolved) else None,
            }
        )
    return pd.DataFrame(rows, columns=list(cc.POINT_COLUMNS))


def recipe_configs(result: ImportResult) -> dict[str, Mapping[str, Any]]:
    """``config_file -> resolved recipe dict``, the second input of ``map_workloads``."""
    return {k: r.config for k, r in result.recipes.items()}


def _layout_cols(role: str, layout: WorkerLayout | None) -> dict[str, Any]:
    names = cc.PREFILL_LAYOUT if role == "prefill" else cc.DECODE_LAYOUT
    if layout is None:
        return dict.fromkeys(names)
    values = (layout.num_workers, layout.tp, layout.ep, layout.dp_attn, layout.pp, layout.pcp_size)
    return dict(zip(names, values, strict=True))
