"""srt-slurm recipes: where a ``CONFIG_FILE=...`` lives and the recipe it selects.

Looked up the way the InferenceX launchers do (``runners/launch_*.sh``): they clone
srt-slurm and then ``cp -rT`` the InferenceX ``benchmarks/multi_node/srt-slurm-recipes``
overlay on top, so the overlay wins over the clone (``shared/reference/serving_configs.md``).
Override files (``base`` + ``override_*`` / ``zip_override_*``) are specialised by the
selector after the ``:``. Only :meth:`RecipeRoots.read` touches the file system.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ingest.serving_matrix import digest

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
            content_hash=digest(text + "\0" + (selector or "")),
        )
    tried = ", ".join(f"{r}:{p}" for r, p in locations)
    return Unresolved(config_file, f"file not found in any source ({tried})")
