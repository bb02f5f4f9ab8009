"""The guide's thresholds re-derived from the stored data, cached per store version.

One :class:`ThresholdReport` per (slice, store version): the re-derived thresholds with
intervals, verdicts and leave-one-model-out (``analysis.thresholds``), the tree with
published, derived and validated thresholds side by side (``analysis.threshold_agreement``)
and the re-derived tree as text or JSON (``analysis.tree_text``). The API's
``/thresholds*`` routes, the Thresholds page, the Recommend page's threshold table
(:func:`guide_check`) and ``thresholds=derived|validated`` tree walks all read it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

import pandas as pd

from analysis import columns as C
from analysis.noise import estimate_noise
from analysis.tables import plain_value
from analysis.threshold_agreement import TreeComparison, compare_trees
from analysis.threshold_checks import GUIDE_THRESHOLDS
from analysis.threshold_fit import DEFAULT_RESAMPLES, DEFAULT_SEED
from analysis.threshold_validation import VERDICT_RULE
from analysis.thresholds import BREAKDOWNS, GuideCheck, derive_guide_thresholds
from analysis.tree import Thresholds
from analysis.tree_text import number, tree_json, tree_text
from service.frames import DashData
from service.scope import provenance
from service.threshold_slice import ThresholdSlice, slice_frame

ThresholdSource = Literal["published", "derived", "validated"]
TreeFormat = Literal["text", "json"]
MIN_POINTS = 3
METHOD: dict[str, Any] = {
    "votes": "one per workload: is its rank-1 (fastest) candidate X (the tree's pick above "
    "the threshold) or not; exact ties do not vote",
    "fit": "one split along the tree's axis with the fewest misclassified votes",
    "interval": f"95 % bootstrap percentile interval over workloads, {DEFAULT_RESAMPLES} "
    f"resamples, seed {DEFAULT_SEED}; the interval of the bracket the threshold lies in",
    "validation": "leave one model out (one hardware when the slice holds one model): "
    "fit on the others, score the held-out votes against the published value",
    "resamples": DEFAULT_RESAMPLES,
    "seed": DEFAULT_SEED,
    "min_points": MIN_POINTS,
}
RULE_TEXT = VERDICT_RULE.format(resamples=DEFAULT_RESAMPLES, min_points=MIN_POINTS)


@dataclass(frozen=True)
class ThresholdReport:
    """Everything the threshold surfaces show for one slice."""

    slice: ThresholdSlice
    check: GuideCheck
    trees: TreeComparison
    provenance: dict[str, Any]


def threshold_report(data: DashData, s: ThresholdSlice | None = None) -> ThresholdReport:
    """Thresholds re-derived on the slice's candidates (all breakdowns), and the trees."""
    s = s or ThresholdSlice()

    def compute() -> ThresholdReport:
        df = slice_frame(data, s)
        # the one noise model: votes a re-run could reverse widen the intervals
        noise = estimate_noise(df)
        check = derive_guide_thresholds(df, min_points=MIN_POINTS, by=BREAKDOWNS, noise=noise)
        trees = compare_trees(df, check)
        # provenance reads three columns: of the successful rows only those (a cell of a
        # year is ~1M rows; a copy of all its columns would double the frame)
        cols = [C.RUN_ID, C.TRTLLM_VERSION, C.SYNTHETIC]
        ok = df.loc[(df[C.STATUS] == "success").to_numpy(dtype=bool), cols] if len(df) else df
        return ThresholdReport(s, check, trees, provenance(ok))

    return data.cached(("threshold_report", s.key()), compute, where=s.filters())


def guide_check(data: DashData) -> GuideCheck:
    """The five thresholds re-derived from every stored candidate (pooled)."""
    return threshold_report(data).check


def derived_thresholds(data: DashData) -> Thresholds:
    """Tree thresholds with every value the stored data locate in place of the published
    one (the published value stays where the data decide nothing)."""
    return threshold_report(data).trees.thresholds["derived"]


def validated_thresholds(data: DashData) -> Thresholds:
    """Derived values only where validation says they help, published elsewhere."""
    return threshold_report(data).trees.thresholds["validated"]


def tree_thresholds(data: DashData, source: ThresholdSource) -> Thresholds:
    """The thresholds a tree walk uses: published, derived or validated (whole store)."""
    return (
        Thresholds() if source == "published" else threshold_report(data).trees.thresholds[source]
    )


def threshold_table(
    data: DashData, evidence: bool = False, s: ThresholdSlice | None = None, by: str | None = None
) -> pd.DataFrame:
    """One row per threshold over the slice; with ``by`` (model, hardware or quant) one
    row per threshold and group value; with ``evidence`` the votes behind each instead."""
    check = threshold_report(data, s).check
    if evidence:
        return check.evidence
    if by:
        return (
            check.groups[check.groups["by"] == by].reset_index(drop=True)
            if len(check.groups)
            else check.groups
        )
    return check.table


def _notes(report: ThresholdReport, source: ThresholdSource) -> dict[str, dict[str, Any]]:
    th = report.trees.thresholds[source]
    notes = {}
    for row in report.check.table.to_dict("records"):
        used = getattr(th, row["field"]) != row["published"]
        notes[row["name"]] = {
            "value": float(getattr(th, row["field"])),
            "source": "derived" if used else "published",
            "published": row["published"],
            "derived": row["derived"],
            "ci_lo": row["ci_lo"],
            "ci_hi": row["ci_hi"],
            "bracket_lo": row["bracket_lo"],
            "bracket_hi": row["bracket_hi"],
            "n_points": row["n_points"],
            "verdict": row["verdict"],
            "verdict_reason": row["verdict_reason"],
            "loo_helps": bool(row["loo_helps"]),
        }
    return notes


def _header(
    report: ThresholdReport, source: ThresholdSource, notes: dict[str, dict[str, Any]]
) -> str:
    prov = report.provenance
    ids = prov["run_ids"]
    runs = f"{len(ids)} runs" + (f" {ids}" if len(ids) <= 8 else f" (ids {ids[0]} … {ids[-1]})")
    lines = [
        f"# The TensorRT-LLM MoE guide's decision tree, {source} thresholds (moedash)",
        f"# slice: {report.slice.label}",
        f"# data: {prov['n_candidates']} successful candidates from {runs}, "
        f"TensorRT-LLM {', '.join(prov['trtllm_versions']) or 'unknown'}"
        + (" (includes synthetic demo data)" if prov["synthetic"] else ""),
        f"# interval: {METHOD['interval']}",
        "#",
        "# threshold                              value     source     published  "
        "95% CI            verdict",
    ]
    for name, n in notes.items():
        ci = f"[{number(n['ci_lo'])}, {number(n['ci_hi'])})"
        lines.append(
            f"# {name:<38} {number(n['value']):<9} {n['source']:<10} {number(n['published']):<10} "
            f"{ci:<17} {n['verdict']}"
        )
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class TreeDownload:
    """A re-derived tree ready to send or save."""

    content: str
    filename: str
    media_type: str


def tree_download(
    data: DashData, s: ThresholdSlice | None, source: ThresholdSource, fmt: TreeFormat
) -> TreeDownload:
    """The guide's tree with ``source`` thresholds for slice ``s``, as text (the guide's
    layout, a header table of the values, intervals and verdicts) or JSON (the same
    numbers plus the tree as nested nodes). The file is named for the slice and set."""
    report = threshold_report(data, s)
    th = report.trees.thresholds[source]
    notes = _notes(report, source)
    name = f"moedash-tree-{report.slice.stem}-{source}"
    if fmt == "json":
        body = {
            "slice": report.slice.as_dict(),
            "thresholds": source,
            "use_attention_tp_crossover": th.use_attention_tp_crossover,
            "values": notes,
            "method": METHOD,
            "verdict_rule": RULE_TEXT,
            "provenance": report.provenance,
            "tree": tree_json(th),
        }
        text = json.dumps(_clean(body), indent=2, allow_nan=False)
        return TreeDownload(text + "\n", name + ".json", "application/json")
    text = tree_text(th, None if source == "published" else notes, _header(report, source, notes))
    return TreeDownload(text, name + ".txt", "text/plain; charset=utf-8")


def _clean(value: Any) -> Any:
    """Strict-JSON form: numpy scalars as Python, NaN and +-inf as null."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return plain_value(value)


def names() -> list[str]:
    """The threshold names in the guide's order."""
    return [t.name for t in GUIDE_THRESHOLDS]
