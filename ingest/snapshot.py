"""The published-data snapshot the repository carries (``data/published/``).

Made by ``scripts/make_snapshot.py`` (``make snapshot``) from ``../shared/data``; read at
first start so an empty database shows real, published numbers:

* ``nvidia/<model>/<precision>/<hardware>.csv``: NVIDIA's MoE Perf Dashboard rows, only
  the 14 columns our dashboard-CSV parser reads (:data:`ingest.nvidia_dashboard.CSV_COLUMNS`),
  in that order, rows as published (top-3 successful bench_moe candidates per group);
* ``serving_points.parquet`` / ``serving_workloads.parquet``: the InferenceX matrix and
  srt-slurm recipe points (``ingest.serving_configs.points_frame``) and the workloads
  ``analysis.serving_map.map_workloads`` maps them to — the two frames
  ``Store.crossval.import_serving`` stores;
* ``snapshot.json``: the serving import's content hash and the sources' commits;
* ``NOTICE``: sources, commits and the Apache-2.0 attribution.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.serving_map import map_workloads
from ingest.nvidia_dashboard import CSV_COLUMNS, dashboard_csv_identity
from ingest.serving_configs import import_directory, points_frame, recipe_configs

# A source checkout keeps data/published beside the packages; an installed package (the
# Docker image) finds it in the working directory instead, like static/.
_CANDIDATES = (
    Path(__file__).resolve().parents[1] / "data" / "published",
    Path.cwd() / "data" / "published",
)
SNAPSHOT_DIR = next((d for d in _CANDIDATES if d.is_dir()), _CANDIDATES[0])
NVIDIA_DIR = "nvidia"
POINTS_FILE = "serving_points.parquet"
WORKLOADS_FILE = "serving_workloads.parquet"
MANIFEST_FILE = "snapshot.json"
NOTICE_FILE = "NOTICE"
PUBLISHED_NOTE = "published (NVIDIA): TensorRT-LLM MoE Perf Dashboard, via the moedash snapshot"
# Where each source came from (shared/data/README.md and nvidia_moe_dashboard/README.md).
SOURCES: tuple[dict[str, str], ...] = (
    {
        "what": "bench_moe sweeps (MoE Perf Dashboard data, top-3 candidates per group)",
        "repository": "NVIDIA/TensorRT-LLM",
        "path": "docs/source/_static/moe-perf-dashboard/data.js",
        "commit": "f7d80acb34d27229dc0d84d745daabf5eb4046bf",
        "copyright": "Copyright (c) 2026 NVIDIA CORPORATION & AFFILIATES",
    },
    {
        "what": "serving matrix (configs/*master.yaml) and InferenceX srt-slurm recipes",
        "repository": "SemiAnalysisAI/InferenceX",
        "path": "configs/, benchmarks/multi_node/",
        "commit": "843c6254ff69b567f772f6a5fd97675af3d04431",
        "copyright": "Copyright the InferenceX authors",
    },
    {
        "what": "recipes deleted from InferenceX HEAD, restored from the deletion's parent",
        "repository": "SemiAnalysisAI/InferenceX",
        "path": "benchmarks/multi_node/srt-slurm-recipes/",
        "commit": "1e53c97e0a3d6df8454abf31868f1701af5edea3",
        "copyright": "Copyright the InferenceX authors",
    },
    {
        "what": "srt-slurm recipes, branch sa-submission-q2-2026",
        "repository": "NVIDIA/srt-slurm",
        "path": "recipes/, configs/",
        "commit": "deb1dfd9934398664f92d194169c183e009da83b",
        "copyright": "Copyright (c) NVIDIA CORPORATION & AFFILIATES",
    },
    {
        "what": "srt-slurm recipes, branch main",
        "repository": "NVIDIA/srt-slurm",
        "path": "recipes/, configs/",
        "commit": "c88ef731636890ff6385a783e152c1790e15b194",
        "copyright": "Copyright (c) NVIDIA CORPORATION & AFFILIATES",
    },
)


@dataclass(frozen=True)
class ServingSnapshot:
    """The serving import as stored in the snapshot: both frames and the content hash."""

    points: pd.DataFrame
    workloads: pd.DataFrame
    content_hash: str
    source: str


def nvidia_csv_files(snapshot: Path = SNAPSHOT_DIR) -> list[Path]:
    """The snapshot's NVIDIA CSVs, sorted by path (empty if there is no snapshot)."""
    return sorted((snapshot / NVIDIA_DIR).glob("*/*/*.csv"))


def read_serving(snapshot: Path = SNAPSHOT_DIR) -> ServingSnapshot | None:
    """The snapshot's serving points and workloads, or None when the snapshot has none."""
    manifest_path = snapshot / MANIFEST_FILE
    if not (manifest_path.is_file() and (snapshot / WORKLOADS_FILE).is_file()):
        return None
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    return ServingSnapshot(
        points=pd.read_parquet(snapshot / POINTS_FILE),
        workloads=pd.read_parquet(snapshot / WORKLOADS_FILE),
        content_hash=str(manifest["serving_content_hash"]),
        source=str(manifest["serving_source"]),
    )


def nvidia_csv_text(raw: bytes) -> str:
    """One NVIDIA dashboard CSV rewritten with only :data:`CSV_COLUMNS`, in that order,
    rows in file order, values as published (no rounding); ``\\n`` line ends."""
    reader = csv.DictReader(io.StringIO(raw.decode("utf-8"), newline=""))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in reader:
        writer.writerow([(row.get(c) or "").strip() for c in CSV_COLUMNS])
    return out.getvalue()


def build_snapshot(shared: Path) -> dict[str, bytes]:
    """Every snapshot file (relative path → bytes) computed from a ``shared/data`` tree.

    Deterministic: the same tree gives the same bytes with the same pandas/pyarrow.
    """
    files: dict[str, bytes] = {}
    csv_root = shared / "nvidia_moe_dashboard" / "csv"
    for path in sorted(csv_root.glob("*/*/*.csv")):
        model, precision, hardware = dashboard_csv_identity(path)
        name = f"{NVIDIA_DIR}/{model}/{precision}/{hardware}.csv"
        files[name] = nvidia_csv_text(path.read_bytes()).encode()
    parsed = import_directory(shared)
    points = points_frame(parsed)
    workloads = map_workloads(points, recipe_configs(parsed))
    files[POINTS_FILE] = _parquet(points)
    files[WORKLOADS_FILE] = _parquet(workloads)
    manifest: dict[str, Any] = {
        "serving_content_hash": parsed.content_hash,
        "serving_source": "published snapshot (data/published): InferenceX @843c6254, "
        "srt-slurm @deb1dfd9 / @c88ef731",
        "nvidia_files": sum(1 for k in files if k.startswith(NVIDIA_DIR + "/")),
        "serving_points": len(points),
        "serving_workloads": len(workloads),
        "sources": list(SOURCES),
    }
    files[MANIFEST_FILE] = (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()
    files[NOTICE_FILE] = notice_text().encode()
    return files


def notice_text() -> str:
    """The NOTICE: what the snapshot holds, each source's repository and commit, and the
    Apache-2.0 terms it is redistributed under."""
    lines = [
        "moedash published-data snapshot (data/published/)",
        "",
        "These files hold facts extracted from the public repositories below, rewritten in",
        "moedash's own format by scripts/make_snapshot.py (`make snapshot`). Only the fields",
        "moedash uses are kept. Each source is licensed under the Apache License, Version 2.0",
        "(http://www.apache.org/licenses/LICENSE-2.0); the data is redistributed under the",
        'same license, "AS IS", WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND. Modification:',
        "reformatted and subset (see ingest/snapshot.py).",
        "",
    ]
    for s in SOURCES:
        lines += [
            f"- {s['what']}",
            f"  https://github.com/{s['repository']} at commit {s['commit']}",
            f"  path: {s['path']}",
            f"  {s['copyright']}. Licensed under the Apache License, Version 2.0.",
            "",
        ]
    lines.append(
        "NVIDIA/srt-slurm ships its own NOTICE and THIRD_PARTY_LICENSES.md; see that repository."
    )
    return "\n".join(lines) + "\n"


def _parquet(frame: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    frame.reset_index(drop=True).to_parquet(buf, index=False, compression="zstd")
    return buf.getvalue()
