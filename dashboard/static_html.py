"""Read-only markup drawn as one component.

Dash renders every ``html.*`` component through its renderer (a React wrapper, a store
subscription and a layout path per component): about a millisecond each on a 2-core
machine, so a 500-cell table costs the browser the better part of a second before it
shows. Tables that only display text and links are built here instead, as a tree of
:class:`El` nodes rendered to escaped HTML on the server and drawn by one
``moedash.StaticHtml`` component (``static/moedash-components.js``).

Safety: every text and attribute value is escaped (:func:`html.escape`); tags and
attribute names come from this code, never from data; ``href`` must be a relative path
or an http(s) URL. Links marked ``nav=True`` navigate inside the app without a reload,
as ``dcc.Link`` does (the component's click handler).

Tests walk the tree (``static_tree``) like a Dash tree: an :class:`El` has
``children`` and answers attribute look-ups (``href``, ``className``, ``data-testid``).
"""

from __future__ import annotations

import html as _html
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from dash.development.base_component import Component

_TAG = re.compile(r"^[a-z][a-z0-9]*$")
_ATTR = re.compile(r"^[a-zA-Z][a-zA-Z0-9_-]*$")
_VOID = frozenset({"br", "col", "hr", "img", "wbr"})
# Python-side names of the attributes whose HTML name differs
_RENAME = {"className": "class", "colSpan": "colspan", "rowSpan": "rowspan", "htmlFor": "for"}


class El:
    """One element: ``El("td", "text", className="x")``; children are El, text or
    None (skipped); attributes with value None or False are left out."""

    __slots__ = ("attrs", "children", "tag")

    def __init__(self, tag: str, children: Any = None, **attrs: Any) -> None:
        if not _TAG.match(tag):
            raise ValueError(f"not a tag name: {tag!r}")
        for name in attrs:
            if not _ATTR.match(name.replace("_", "-")):
                raise ValueError(f"not an attribute name: {name!r}")
        self.tag = tag
        self.attrs = {
            k.replace("_", "-") if k.startswith(("data_", "aria_")) else k: v
            for k, v in attrs.items()
        }
        if children is None:
            self.children: list[Any] = []
        elif isinstance(children, list | tuple):
            self.children = [c for c in children if c is not None]
        else:
            self.children = [children]

    def __getattr__(self, name: str) -> Any:
        # attribute look-ups for tests (``el.href``, ``getattr(el, "data-testid")``)
        if name.startswith("__"):
            raise AttributeError(name)
        return self.attrs.get(name, self.attrs.get(name.replace("_", "-")))

    def render(self) -> str:
        parts: list[str] = []
        self._render(parts)
        return "".join(parts)

    def _render(self, out: list[str]) -> None:
        out.append("<" + self.tag)
        for name, value in self.attrs.items():
            if value is None or value is False:
                continue
            if name == "nav":
                out.append(' data-nav=""')
                continue
            if name == "href":
                _check_href(str(value))
            key = _RENAME.get(name, name)
            out.append(f' {key}=""' if value is True else f' {key}="{_html.escape(str(value))}"')
        out.append(">")
        if self.tag in _VOID:
            return
        for child in self.children:
            if isinstance(child, El):
                child._render(out)
            else:
                out.append(_html.escape(str(child), quote=False))
        out.append(f"</{self.tag}>")

    def texts(self) -> Iterator[str]:
        """Every text in the subtree, in document order."""
        for child in self.children:
            if isinstance(child, El):
                yield from child.texts()
            else:
                yield str(child)


def _check_href(href: str) -> None:
    if href.startswith(("/", "?", "#", "https://", "http://")) and not href.startswith("//"):
        return
    raise ValueError(f"href must be a relative path or an http(s) URL: {href!r}")


def link(text: Any, href: str, **attrs: Any) -> El:
    """A link that navigates inside the app without reloading the page."""
    return El("a", text, href=href, nav=True, **attrs)


def table(head: Iterable[Any], rows: Iterable[Iterable[Any]], **attrs: Any) -> El:
    """``<table>`` with one header row and body rows; a cell is an El (``td``/``th``
    kept as given) or content wrapped in a ``td``."""
    head_row = El("tr", [c if _is_cell(c) else El("th", c, scope="col") for c in head])
    body = [El("tr", [c if _is_cell(c) else El("td", c) for c in row]) for row in rows]
    return El("table", [El("thead", head_row), El("tbody", body)], **attrs)


def _is_cell(value: Any) -> bool:
    return isinstance(value, El) and value.tag in ("td", "th")


class StaticHtml(Component):
    """Server-rendered, read-only markup (see the module docstring). ``content`` is an
    :class:`El` or a list of them; ``id``, ``className`` and ``data-testid`` go on the
    wrapping ``<div>``."""

    _children_props: list[str] = []
    _base_nodes: list[str] = []
    _namespace = "moedash"
    _type = "StaticHtml"

    def __init__(
        self,
        content: El | list[El],
        id: str | None = None,  # noqa: A002 - Dash's name for it
        className: str | None = None,  # noqa: N803 - Dash's name for it
        **wildcards: Any,
    ) -> None:
        self._prop_names = ["id", "html", "className"]
        self._valid_wildcard_attributes = ["data-", "aria-"]
        self.available_properties = list(self._prop_names)
        self.available_wildcard_properties = ["data-", "aria-"]
        nodes = content if isinstance(content, list) else [content]
        args: dict[str, Any] = {"html": "".join(n.render() for n in nodes)}
        if id is not None:
            args["id"] = id
        if className is not None:
            args["className"] = className
        # Dash's Component.__init__ is unannotated
        init: Callable[..., None] = super().__init__
        init(**args, **wildcards)
        object.__setattr__(self, "static_tree", nodes)


def cell_text(value: Any, col: str) -> str:
    """A table cell's text: booleans as on/off (CUDA graph) or yes/no, floats with 4
    significant digits, missing as empty."""
    if value is None or (isinstance(value, float) and value != value):
        return ""
    if isinstance(value, bool):
        on, off = (
            ("on", "off") if col.endswith("cuda_graph") or col == "attention_dp" else ("yes", "no")
        )
        return on if value else off
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _cell(value: Any, field: str, wrap: bool) -> El:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    cls = " ".join(c for c in ("wrap" if wrap else "", "num" if number else "") if c)
    return El("td", cell_text(value, field), data_col=field, className=cls or None)


def data_table(
    table_id: str,
    rows: list[dict[str, Any]],
    fields: Sequence[str],
    headers: Mapping[str, str],
    tips: Mapping[str, str] | None = None,
    wrap: Iterable[str] = (),
    widths: Mapping[str, int] | None = None,
    caption: str | None = None,
) -> StaticHtml:
    """A read-only table of ``rows`` (dicts keyed by field) in a horizontally scrolling,
    keyboard-focusable box: headers from ``headers`` (tooltips from ``tips``), cells of
    ``wrap`` columns wrap (never clipped), ``widths`` are minimum pixel widths. The
    component keeps ``records`` (the rows shown) and ``fields`` for tests."""
    wrapped = set(wrap)
    mins = widths or {}
    head = El(
        "tr",
        [
            El(
                "th",
                headers.get(f, f),
                scope="col",
                title=(tips or {}).get(f),
                style=f"min-width:{int(mins[f])}px" if f in mins else None,
                data_col=f,
            )
            for f in fields
        ],
    )
    body = [El("tr", [_cell(r.get(f), f, f in wrapped) for f in fields]) for r in rows]
    parts: list[Any] = [El("caption", caption)] if caption else []
    markup = El("table", [*parts, El("thead", head), El("tbody", body)], className="data-table")
    comp = StaticHtml(El("div", markup, className="scroll-x", tabindex="0"), id=table_id)
    object.__setattr__(comp, "records", rows)
    object.__setattr__(comp, "fields", list(fields))
    return comp
