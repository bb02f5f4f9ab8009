"""The guide's decision tree in its own layout, with a threshold set's numbers in place.

:func:`guide_tree` builds STEP 1-3 of the guide ("Decision Tree") as nested
:class:`Node` s, each threshold-bearing question carrying the threshold's name and the
value of the given ``tree.Thresholds``; :func:`tree_text` renders them with the guide's
connectors (``├─``, ``└─``, ``│``, 7-column indentation, the pick after an aligned
``→``), :func:`tree_json` as nested dicts. With ``notes`` (one mapping per threshold
name: source, published, ci_lo, ci_hi, verdict) each threshold line also says where its
value came from and its interval. The walk itself is ``analysis.tree.recommend``; this
module only writes it down.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from analysis.tree import Thresholds

RULE = "═" * 17


@dataclass(frozen=True)
class Node:
    """One line of the tree: ``label`` (extra lines in ``more``), the ``pick`` of a leaf,
    the ``threshold`` name it asks about with its ``value``, ``children``; ``gap`` puts a
    lone ``│`` line between the label and the children and ``spaced`` one between the
    children, as the guide does in places."""

    label: str
    pick: str | None = None
    threshold: str | None = None
    value: float | None = None
    children: tuple[Node, ...] = field(default=())
    more: tuple[str, ...] = field(default=())
    gap: bool = False
    spaced: bool = False


def number(value: float | None) -> str:
    """A threshold as the tree shows it: integers plainly, values of 1000 and more
    rounded to an integer, else 4 significant digits; open ends as ∞, missing as —."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    if (float(value).is_integer() or abs(value) >= 1000) and abs(value) < 1e15:
        return str(round(value))
    return f"{value:.4g}"


def _q(
    label: str, name: str, value: float, children: tuple[Node, ...] = (), pick: str | None = None
) -> Node:
    return Node(label.format(v=number(value)), pick, name, float(value), children)


def guide_tree(th: Thresholds) -> list[tuple[str, Node]]:
    """The guide's STEP 1-3 as (section title, root) pairs with ``th``'s values."""
    step1 = Node("Parallelism", children=(Node("MoE Module", "EP"),), gap=True)
    if th.use_attention_tp_crossover:
        tp = Node(
            "attention TP",
            children=(
                _q(
                    "activated_tokens_per_rank <= {v}",
                    "attention_tp_cutedsl_tokens_per_rank",
                    th.attention_tp_cutedsl_tokens_per_rank,
                    pick="TRTLLM",
                ),
                Node("else", "CUTEDSL"),
            ),
        )
    else:
        tp = Node("attention TP", "TRTLLM")
    small = _q(
        "activated_tokens_per_rank <= {v}",
        "decode_megamoe_tokens_per_rank",
        th.decode_megamoe_tokens_per_rank,
        (
            _q("world_size <= {v}", "small_world_size", th.small_world_size, pick="TRTLLM"),
            Node("else", "CUTEDSL"),
        ),
    )
    nvfp4 = Node(
        "NVFP4",
        spaced=True,
        children=(
            Node("decode (CUDA graph on)", children=(small, Node("else", "MEGAMOE_CUTEDSL"))),
            Node(
                "prefill (CUDA graph off)",
                children=(
                    _q(
                        "activated_tokens_per_rank <= {v}",
                        "prefill_megamoe_tokens_per_rank",
                        th.prefill_megamoe_tokens_per_rank,
                        pick="TRTLLM",
                    ),
                    Node("else", "MEGAMOE_CUTEDSL"),
                ),
            ),
        ),
    )
    inside = Node(
        "GB300 with world_size <= 72, or B300 with world_size <= 8",
        more=("(EP within one NVLink domain)",),
        children=(nvfp4, Node("W4A8_MXFP4_MXFP8", "MEGAMOE_DEEPGEMM")),
        gap=True,
        spaced=True,
    )
    crossing = Node(
        "B300 with world_size > 8",
        more=("(EP crosses the NVLink domain)",),
        children=(Node("NVFP4", "CUTEDSL"), Node("W4A8_MXFP4_MXFP8", "TRTLLM")),
    )
    sm120 = _q(
        "NVFP4, tokens per rank < {v}, ep_size==1, no attention DP",
        "sm120_cutedsl_tokens_per_rank",
        th.sm120_cutedsl_tokens_per_rank,
        pick="CUTEDSL",
    )
    step2 = Node(
        "Backend",
        gap=True,
        spaced=True,
        children=(
            Node(
                "SM90  (Hopper: H100 / H200)",
                gap=True,
                children=(Node("gpt-oss", "CUTLASS/TRITON"), Node("else", "CUTLASS")),
            ),
            Node(
                "SM120 / SM121  (RTX PRO 6000 Blackwell / DGX Spark)",
                gap=True,
                children=(sm120, Node("else", "CUTLASS")),
            ),
            Node(
                "SM100 / SM103  (B300 / GB300)",
                gap=True,
                spaced=True,
                children=(
                    tp,
                    Node("attention DP", gap=True, spaced=True, children=(inside, crossing)),
                ),
            ),
        ),
    )
    kb = th.cross_domain_dispatch_kb
    dispatch = Node(
        f"dispatch_KB <= {number(kb)}  (~{number(round(kb / 1024, 2))} MB per rank)",
        threshold="cross_domain_dispatch_kb",
        value=float(kb),
        children=(
            Node("DEEPEPLOWLATENCY supported", "DEEPEPLOWLATENCY"),
            Node("else", "AUTO"),
        ),
    )
    step3 = Node(
        "Communication",
        gap=True,
        spaced=True,
        children=(
            Node(
                "EP crosses the NVLink domain",
                more=("(B300 with world_size > 8)",),
                gap=True,
                children=(dispatch, Node("else", "ALLGATHER")),
            ),
            Node("else", "AUTO"),
        ),
    )
    return [
        ("STEP1: Parallelism", step1),
        ("STEP2: Backend", step2),
        ("STEP3: Communication", step3),
    ]


FOOTER: tuple[str, ...] = (
    "AUTO is the default: leave TRTLLM_FORCE_COMM_METHOD unset and TensorRT-LLM selects "
    "the strategy itself.",
    "DEEPEPLOWLATENCY supported: hidden_size in {2048, 2560, 3584, 4096, 5120, 6144, 7168} "
    "and top_k <= 16.",
)


def _note(name: str, notes: Mapping[str, Mapping[str, Any]] | None) -> str:
    if not notes or name not in notes:
        return ""
    n = notes[name]
    parts = [str(n.get("source", ""))]
    lo, hi = n.get("ci_lo"), n.get("ci_hi")
    if lo is not None and hi is not None and not (math.isnan(lo) or math.isnan(hi)):
        parts.append(f"95% CI [{number(lo)}, {number(hi)})")
    if n.get("published") is not None:
        parts.append(f"published {number(n['published'])}")
    if n.get("verdict"):
        parts.append(str(n["verdict"]))
    return "  [" + "; ".join(p for p in parts if p) + "]"


Line = tuple[str, str | None, str]  # text before the arrow, pick, note after it


def _children(node: Node, inner: str, notes: Mapping[str, Mapping[str, Any]] | None) -> list[Line]:
    out: list[Line] = []
    if node.children and node.gap:
        out.append((inner + "│", None, ""))
    for i, child in enumerate(node.children):
        if i and node.spaced:
            out.append((inner + "│", None, ""))
        out += _lines(child, inner, i == len(node.children) - 1, notes)
    return out


def _lines(
    node: Node, prefix: str, last: bool, notes: Mapping[str, Mapping[str, Any]] | None
) -> list[Line]:
    """The lines of ``node`` (and its subtree) under ``prefix``."""
    note = _note(node.threshold, notes) if node.threshold else ""
    head = f"{prefix}{'└─' if last else '├─'} {node.label}"
    out: list[Line] = [(head, node.pick, note)]
    cont = prefix + ("   " if last else "│  ")
    out += [(cont + m, None, "") for m in node.more]
    return out + _children(node, prefix + ("       " if last else "│      "), notes)


def tree_text(
    th: Thresholds, notes: Mapping[str, Mapping[str, Any]] | None = None, header: str = ""
) -> str:
    """The tree as text in the guide's layout (``header`` lines first, FOOTER last); a
    threshold's note (see module docstring) follows its line in square brackets."""
    blocks = [header.rstrip("\n")] if header else []
    for title, root in guide_tree(th):
        rows: list[Line] = [(root.label, None, "")]
        rows += _children(root, "", notes)
        col = max(len(t) for t, p, _ in rows if p is not None) + 2
        body = [(f"{t.ljust(col)}→ {p}" if p is not None else t) + note for t, p, note in rows]
        blocks.append("\n".join([f"{RULE} {title} {RULE}", "", *body]))
    blocks.append("\n".join(FOOTER))
    return "\n\n".join(blocks) + "\n"


def node_json(node: Node) -> dict[str, Any]:
    """One node as a dict: label (with ``more`` lines joined by a space), pick,
    threshold, value, children."""
    return {
        "label": " ".join((node.label, *node.more)),
        "pick": node.pick,
        "threshold": node.threshold,
        "value": node.value,
        "children": [node_json(c) for c in node.children],
    }


def tree_json(th: Thresholds) -> list[dict[str, Any]]:
    """The tree as ``[{"step": title, "tree": node_json(root)}, ...]``."""
    return [{"step": title, "tree": node_json(root)} for title, root in guide_tree(th)]
