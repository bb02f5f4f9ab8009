"""Parse the InferenceX serving matrix and resolve the srt-slurm recipes it names.

Sources (see ``shared/reference/serving_configs.md``):

* the matrix: ``inferencex/configs/nvidia-master.yaml`` and
  ``inferencex/configs/deprecated/nvidia-*-master.yaml`` (AMD masters carry no
  TensorRT-LLM lane and no ``CONFIG_FILE``, so they are not read);
* the recipes a ``CONFIG_FILE=...`` setting names, looked up the way the InferenceX
  launchers do (``runners/launch_*.sh``): they clone srt-slurm and then ``cp -rT`` the
  InferenceX ``benchmarks/multi_node/srt-slurm-recipes`` overlay on top, so the overlay
  wins over the clone.

Everything except :func:`import_directory` (and :meth:`RecipeRoots.read`) is a pure
function over already-read text or dicts, so the same code serves the CLI, the HTTP
upload path and the tests.

A *serving point* is one dashboard dot: (master entry, scenario, ISL/OSL, search-space
row, one concurrency). Points of every framework are parsed; only TensorRT-LLM lanes
(``dynamo-trt`` / ``trt``) map to ``bench_moe`` (``analysis.serving_map``).
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from analysis import crossval_columns as cc

TRTLLM_FRAMEWORKS = frozenset({"dynamo-trt", "trt"})

# Root names, in the vocabulary of serving_configs.md.
IX = "IX"  # inferencex/ (current InferenceX, overlays + llm-d recipes)
IX_OLD = "IX-old"  # inferencex-1e53c97e/ (overlays deleted at HEAD, used by deprecated masters)
SS = "SS"  # srt-slurm/sa-submission-q2-2026/ (the ref the launchers clone)
SS_MAIN = "SS-main"  # srt-slurm/main/ (fallback: files added after the branch was cut)

_OVERLAY = "benchmarks/multi_node/srt-slurm-recipes/"
_LLMD = "benchmarks/multi_node/llm-d-recipes/"
# runners/launch_b200-dgxc.sh copies this IX directory under another name.
_KIMI_B200_FROM = "recipes/trtllm/kimi-k25-nvfp4/b200-fp4/"
_KIMI_B200_TO = _OVERLAY + "trtllm/kimi-k2.5/disagg/trtllm_dynamo/b200-fp4/"

_SELECTOR_RE = re.compile(r"^(?P<path>.+?\.ya?ml):(?P<sel>.+)$")
_ZIP_SEL_RE = re.compile(r"^(?P<key>zip_override_[\w.\-]+)\[(?P<idx>\d+)\]$")


# --------------------------------------------------------------------------- records
@dataclass(frozen=True)
class WorkerLayout:
    """One worker pool of a search-space row (``prefill`` / ``decode``, or single-node)."""

    num_workers: int
    tp: int
    ep: int
    dp_attn: bool
    pp: int = 1
    dcp_size: int = 1
    pcp_size: int = 1


@dataclass(frozen=True)
class ServingPoint:
    """One (entry, scenario, ISL/OSL, search-space row, concurrency) of the matrix."""

    source: str  # master file, relative to the data dir
    entry: str
    model: str  # HF id or alias as the master writes it
    model_prefix: str
    precision: str
    hardware: str  # GB200, GB300, B200, B300, H100, H200, ... (from `runner`)
    runner: str
    framework: str
    image: str
    multinode: bool
    disagg: bool
    scenario: str  # fixed-seq-len | agentic-coding
    isl: int | None  # None for agentic-coding
    osl: int | None
    conc: int
    spec_decoding: str  # "mtp" | "none"
    row_index: int  # index of the search-space row inside its scenario block
    prefill: WorkerLayout | None
    decode: WorkerLayout | None
    single: WorkerLayout | None  # single-node lanes: tp/ep/dp-attn of the one engine
    config_file: str | None
    settings: tuple[tuple[str, str], ...] = ()  # additional-settings other than CONFIG_FILE

    @property
    def point_id(self) -> str:
        """Stable id: hash of every parsed field (re-import gives the same id)."""
        return _hash(json.dumps(asdict(self), sort_keys=True, default=str))[:16]

    @property
    def is_trtllm(self) -> bool:
        return self.framework in TRTLLM_FRAMEWORKS

    @property
    def is_current(self) -> bool:
        """From the current master (not ``configs/deprecated/``)."""
        return "/deprecated/" not in f"/{self.source}"


@dataclass(frozen=True)
class ResolvedRecipe:
    config_file: str  # exactly as the master writes it (selector included)
    root: str  # IX | IX-old | SS | SS-main
    path: str  # file actually read, "<root>:<path relative to that root>"
    selector: str | None
    config: Mapping[str, Any]  # recipe after override resolution
    content_hash: str  # sha256 of (file text, selector)


@dataclass(frozen=True)
class Unresolved:
    config_file: str | None
    reason: str


@dataclass(frozen=True)
class RecipeRoots:
    """Where each source tree lives. ``None`` means not available."""

    ix: Path | None = None
    ix_old: Path | None = None
    ss: Path | None = None
    ss_main: Path | None = None

    @classmethod
    def under(cls, data_dir: Path) -> RecipeRoots:
        """The layout of ``shared/data`` (see its README)."""
        return cls(
            ix=data_dir / "inferencex",
            ix_old=data_dir / "inferencex-1e53c97e",
            ss=data_dir / "srt-slurm" / "sa-submission-q2-2026",
            ss_main=data_dir / "srt-slurm" / "main",
        )

    def base(self, root: str) -> Path | None:
        return {IX: self.ix, IX_OLD: self.ix_old, SS: self.ss, SS_MAIN: self.ss_main}[root]

    def read(self, root: str, rel: str) -> tuple[str, str] | None:
        """(text, ``"<root>:<rel>"``) or None when the root or the file is missing."""
        base = self.base(root)
        if base is None:
            return None
        p = base / rel
        if not p.is_file():
            return None
        return p.read_text(encoding="utf-8"), f"{root}:{rel}"


@dataclass(frozen=True)
class ImportResult:
    points: tuple[ServingPoint, ...]
    recipes: Mapping[str, ResolvedRecipe]  # key: config_file as written
    unresolved: Mapping[str, Unresolved]  # key: config_file as written
    content_hash: str = field(default="")

    def resolution(self, point: ServingPoint) -> ResolvedRecipe | Unresolved:
        """The recipe behind a point, or why there is none."""
        if point.config_file is None:
            return Unresolved(None, _no_config_reason(point))
        found = self.recipes.get(point.config_file) or self.unresolved[point.config_file]
        if isinstance(found, ResolvedRecipe) and found.root == IX_OLD and point.is_current:
            # The clean-up commit deleted IX-old files at IX HEAD: the current launcher
            # cannot find them, so a current-master point naming one does not resolve.
            return Unresolved(
                point.config_file, f"only in {found.path}, deleted at InferenceX HEAD"
            )
        return found


# --------------------------------------------------------------------------- matrix
def hardware_from_runner(runner: str) -> str:
    """``cluster:gb300-nv`` -> ``GB300``; ``h200-multinode`` -> ``H200``."""
    return runner.split(":")[-1].split("-")[0].upper()


def expand_concurrency(row: Mapping[str, Any]) -> list[int]:
    """``conc-list`` as given, or ``conc-start`` doubling up to ``conc-end`` (CONFIGS.md)."""
    if "conc-list" in row:
        return [int(c) for c in row["conc-list"]]
    start, end = int(row["conc-start"]), int(row["conc-end"])
    if start <= 0 or end < start:
        raise ValueError(f"conc-start/conc-end: bad range {start}..{end}")
    out, c = [], start
    while c <= end:
        out.append(c)
        c *= 2
    return out


def _layout(block: Mapping[str, Any]) -> WorkerLayout:
    return WorkerLayout(
        num_workers=int(block.get("num-worker", 1)),
        tp=int(block["tp"]),
        ep=int(block.get("ep", 1)),
        dp_attn=bool(block.get("dp-attn", False)),
        pp=int(block.get("pp", 1)),
        dcp_size=int(block.get("dcp-size", 1)),
        pcp_size=int(block.get("pcp-size", 1)),
    )


def _settings(row: Mapping[str, Any]) -> tuple[str | None, tuple[tuple[str, str], ...]]:
    config_file: str | None = None
    other: list[tuple[str, str]] = []
    for role in ("prefill", "decode"):
        block = row.get(role) or {}
        for item in block.get("additional-settings") or []:
            key, _, value = str(item).partition("=")
            if key == "CONFIG_FILE":
                config_file = value
            else:
                other.append((f"{role}.{key}", value))
    return config_file, tuple(other)


def load_matrix(text: str, source: str) -> list[ServingPoint]:
    """Every serving point of one master YAML, in file order.

    ``source`` is recorded on each point (the master's path relative to the data dir).
    Raises ``ValueError`` naming the entry when a required key is missing.
    """
    doc = yaml.safe_load(text) or {}
    points: list[ServingPoint] = []
    for entry, e in doc.items():
        try:
            points.extend(_entry_points(entry, e, source))
        except (KeyError, TypeError) as exc:
            raise ValueError(f"{source}: entry {entry!r}: missing or bad key {exc}") from exc
    return points


def _entry_points(entry: str, e: Mapping[str, Any], source: str) -> Iterable[ServingPoint]:
    common = dict(
        source=source,
        entry=entry,
        model=str(e["model"]),
        model_prefix=str(e["model-prefix"]),
        precision=str(e["precision"]),
        hardware=hardware_from_runner(str(e["runner"])),
        runner=str(e["runner"]),
        framework=str(e["framework"]),
        image=str(e.get("image", "")),
        multinode=bool(e.get("multinode", False)),
        disagg=bool(e.get("disagg", False)),
    )
    for scenario, blocks in (e.get("scenarios") or {}).items():
        for block in blocks:
            isl = block.get("isl")
            osl = block.get("osl")
            for i, row in enumerate(block["search-space"]):
                config_file, settings = _settings(row)
                is_pd = "prefill" in row and "decode" in row
                for conc in expand_concurrency(row):
                    yield ServingPoint(
                        **common,  # type: ignore[arg-type]
                        scenario=str(scenario),
                        isl=None if isl is None else int(isl),
                        osl=None if osl is None else int(osl),
                        conc=conc,
                        spec_decoding=str(row.get("spec-decoding", "none")),
                        row_index=i,
                        prefill=_layout(row["prefill"]) if is_pd else None,
                        decode=_layout(row["decode"]) if is_pd else None,
                        single=None if is_pd else _layout(row),
                        config_file=config_file,
                        settings=settings,
                    )


def _no_config_reason(point: ServingPoint) -> str:
    if not point.multinode:
        return (
            "single-node lane: launched by benchmarks/single_node/*.sh, whose max-batch and "
            "CUDA-graph settings are not in the shared data"
        )
    if point.settings:
        return (
            "no CONFIG_FILE: legacy env settings (" + ", ".join(k for k, _ in point.settings) + ")"
        )
    return "no CONFIG_FILE in prefill.additional-settings"


# --------------------------------------------------------------------------- overrides
def split_selector(config_file: str) -> tuple[str, str | None]:
    """``recipes/a.yaml:override_x`` -> (``recipes/a.yaml``, ``override_x``)."""
    m = _SELECTOR_RE.match(config_file)
    return (m["path"], m["sel"]) if m else (config_file, None)


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """srt-slurm merge: dicts merge recursively, lists and scalars replace, None deletes."""
    out: dict[str, Any] = copy.deepcopy(dict(base))
    for key, value in over.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _zip_lengths(node: Any, acc: set[int]) -> None:
    if isinstance(node, Mapping):
        for v in node.values():
            _zip_lengths(v, acc)
    elif isinstance(node, list) and len(node) != 1:
        acc.add(len(node))


def _zip_pick(node: Any, i: int) -> Any:
    if isinstance(node, Mapping):
        return {k: _zip_pick(v, i) for k, v in node.items()}
    if isinstance(node, list):
        return copy.deepcopy(node[0] if len(node) == 1 else node[i])
    return copy.deepcopy(node)


def zip_variant(section: Mapping[str, Any], index: int) -> dict[str, Any]:
    """Variant ``index`` of a ``zip_override_*`` section (srt-slurm ``docs/overrides.md``).

    Every list leaf is a zip dimension; length-1 lists and scalars broadcast; a list of
    lists yields a literal list per variant. Unequal lengths or an index out of range
    raise ``ValueError``.
    """
    lengths: set[int] = set()
    _zip_lengths(section, lengths)
    if len(lengths) > 1:
        raise ValueError(f"zip_override: incompatible list lengths {sorted(lengths)}")
    n = lengths.pop() if lengths else 1
    if not 0 <= index < n:
        raise ValueError(f"zip_override: index {index} out of range (0..{n - 1})")
    return {k: _zip_pick(v, index) for k, v in section.items()}


def apply_override(doc: Mapping[str, Any], selector: str | None) -> dict[str, Any]:
    """The recipe a selector picks from a (possibly base+override) recipe document.

    * plain recipe (no ``base`` key): returned as is; a selector is an error;
    * ``base``: the base; ``override_<n>``: base deep-merged with that section;
    * ``zip_override_<n>[i]``: base deep-merged with variant *i* of the zip section.

    A base+override file without a selector is ambiguous (srtctl would run every variant)
    and raises ``ValueError``, as does a selector naming a missing section.
    """
    if "base" not in doc:
        if selector is not None:
            raise ValueError(f"selector {selector!r} given but the file has no 'base' key")
        return copy.deepcopy(dict(doc))
    if selector is None:
        raise ValueError("base+override file needs a selector (':base', ':override_<n>', …)")
    base = doc["base"] or {}
    if selector == "base":
        return copy.deepcopy(dict(base))
    m = _ZIP_SEL_RE.match(selector)
    if m:
        section = doc.get(m["key"])
        if not isinstance(section, Mapping):
            raise ValueError(f"selector {selector!r}: no section {m['key']!r}")
        return deep_merge(base, zip_variant(section, int(m["idx"])))
    if selector.startswith("override_") and isinstance(doc.get(selector), Mapping):
        return deep_merge(base, doc[selector])
    raise ValueError(f"selector {selector!r}: no such section (or glob, unsupported)")


# --------------------------------------------------------------------------- resolution
def candidate_locations(config_file: str) -> list[tuple[str, str]]:
    """(root, relative path) in the order the launchers make them win.

    ``recipes/<x>``: the kimi-b200 rename, then the IX overlay (``cp -rT`` over the clone),
    then the SS clone, then SS-main (files added after the branch), then the IX-old
    overlay (deleted at IX HEAD; deprecated masters point at them). No path exists in
    both IX and SS, so overlay-first vs clone-first only matters for IX-old (0 overlaps
    with SS in the copied data, asserted in the real-data tests).
    """
    path, _ = split_selector(config_file)
    if path.startswith("recipes/"):
        x = path[len("recipes/") :]
        out: list[tuple[str, str]] = []
        if path.startswith(_KIMI_B200_FROM):
            out.append((IX, _KIMI_B200_TO + path[len(_KIMI_B200_FROM) :]))
        out += [(IX, _OVERLAY + x), (SS, path), (SS_MAIN, path), (IX_OLD, _OVERLAY + x)]
        return out
    if path.startswith("benchmarks/"):
        return [(IX, path), (IX_OLD, path)]
    if "/" not in path:
        return [(IX, _LLMD + path)]
    return []


def resolve_recipe(config_file: str, roots: RecipeRoots) -> ResolvedRecipe | Unresolved:
    """Find, read and (for override files) specialise the recipe ``config_file`` names."""
    _, selector = split_selector(config_file)
    locations = candidate_locations(config_file)
    if not locations:
        return Unresolved(config_file, "unrecognised CONFIG_FILE form")
    for root, rel in locations:
        found = roots.read(root, rel)
        if found is None:
            continue
        text, shown = found
        try:
            doc = yaml.safe_load(text)
            if not isinstance(doc, Mapping):
                return Unresolved(config_file, f"{shown}: not a YAML mapping")
            config = apply_override(doc, selector)
        except (yaml.YAMLError, ValueError) as exc:
            return Unresolved(config_file, f"{shown}: {exc}")
        return ResolvedRecipe(
            config_file=config_file,
            root=root,
            path=shown,
            selector=selector,
            config=config,
            content_hash=_hash(text + "\0" + (selector or "")),
        )
    tried = ", ".join(f"{r}:{p}" for r, p in locations)
    return Unresolved(config_file, f"file not found in any source ({tried})")


# --------------------------------------------------------------------------- directory
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
    digest = _hash(
        json.dumps(
            [sorted(p.point_id for p in points), sorted(r.content_hash for r in recipes.values())]
        )
    )
    return ImportResult(tuple(points), recipes, unresolved, digest)


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


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
