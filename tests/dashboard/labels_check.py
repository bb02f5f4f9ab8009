"""What a page's controls are named, read from its Dash component tree the way the
browser computes it with ``static/a11y.js`` (``dashboard.labelled``): a ``<label for=id>``
names an input, a dropdown (a single-choice one also natively: the label carries its
``<id>-value-count`` id) and a radio group or checklist; controls inside a ``<fieldset>``
without a label of their own are named by its ``<legend>``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from dash import dcc, html

CONTROLS = (dcc.Input, dcc.Dropdown, dcc.RadioItems, dcc.Checklist)


def _walk(node: Any, legend: str | None = None) -> Iterator[tuple[Any, str | None]]:
    """(component, the legend of the innermost fieldset around it)."""
    if isinstance(node, html.Fieldset):
        kids = node.children if isinstance(node.children, list) else [node.children]
        legend = next((_text(k) for k in kids if isinstance(k, html.Legend)), legend)
    yield node, legend
    children = getattr(node, "children", None)
    for child in children if isinstance(children, list | tuple) else [children]:
        if child is not None and not isinstance(child, str | int | float):
            yield from _walk(child, legend)


def _text(node: Any) -> str:
    if isinstance(node, str):
        return node
    children = getattr(node, "children", None)
    if isinstance(children, list | tuple):
        return "".join(_text(c) for c in children)
    return "" if children is None else _text(children)


def control_names(tree: Any) -> dict[str, str | None]:
    """Control id -> its accessible name from a label or legend (None: unnamed)."""
    pairs = list(_walk(tree))
    labels = [c for c, _ in pairs if isinstance(c, html.Label)]
    names: dict[str, str | None] = {}
    for comp, legend in pairs:
        if not isinstance(comp, CONTROLS) or not isinstance(getattr(comp, "id", None), str):
            continue
        cid = comp.id
        found = [_text(lab) for lab in labels if getattr(lab, "htmlFor", None) == cid]
        names[cid] = found[0] if found else legend
    return names


def unnamed(tree: Any) -> list[str]:
    """Ids of the controls nothing names."""
    return sorted(cid for cid, name in control_names(tree).items() if not name)
