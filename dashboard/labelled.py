"""Form controls that carry an accessible name: the visible label text names the input,
dropdown or radio group for a screen reader too (not only its current value).

Every control sits under a ``<label for=ID>`` (the convention ``static/a11y.js`` reads to
name what Dash 4 renders: a radio or checklist ``listbox`` becomes a named radiogroup,
a dropdown button is named "label, value"). Without that script:

- ``dcc.Input`` is named by ``<label for=id>`` natively;
- a single-choice ``dcc.Dropdown`` renders as ``<button id=… aria-labelledby=
  "<id>-value-count <id>-value">``, and ``<id>-value-count`` exists only while a *multi*
  dropdown holds two or more values, so for a single choice the label itself takes that
  id and the button is named "label value" (a click on the label opens it, too).
"""

from __future__ import annotations

from typing import Any

from dash import dcc, html

from dashboard.components import attrs

# A <legend> looks like the other controls' labels; a <fieldset> has no frame here and
# may shrink (its default min-width is min-content, which would overflow narrow screens).
_LEGEND_STYLE = {"fontSize": "12px", "color": "var(--muted)", "marginBottom": "2px", "padding": 0}
_FIELDSET_STYLE = {"border": 0, "padding": 0, "margin": 0, "minWidth": 0}


def _class(wide: bool) -> str:
    return "control wide" if wide else "control"


def control(text: str, comp: Any, wide: bool = False) -> html.Div | html.Fieldset:
    """``comp`` under its label ``text``, the label giving ``comp`` its accessible name
    (see the module docstring for how, per component type). A component without an id
    is named as a :func:`group`."""
    cid = getattr(comp, "id", None)
    if not isinstance(cid, str):
        return group(text, comp, wide=wide)
    single = isinstance(comp, dcc.Dropdown) and not getattr(comp, "multi", False)
    label_id = f"{cid}-value-count" if single else f"{cid}--label"
    return html.Div([html.Label(text, htmlFor=cid, id=label_id), comp], className=_class(wide))


def group(text: str, *children: Any, wide: bool = False) -> html.Div | html.Fieldset:
    """Controls named together by ``text``: one control with an id is a :func:`control`
    (a radio group named by its ``<label for>``); anything else a ``<fieldset>`` named
    by its ``<legend>``."""
    if len(children) == 1 and isinstance(getattr(children[0], "id", None), str):
        return control(text, children[0], wide=wide)
    return html.Fieldset(
        [html.Legend(text, style=_LEGEND_STYLE), *children],
        className=_class(wide),
        style=_FIELDSET_STYLE,
    )


def scroll_box(child: Any, name: str) -> html.Div:
    """``child`` (a wide table, a code block) scrolling sideways inside its own box, so
    a narrow window does not scroll the whole page. The box is a named, focusable region
    so keyboard users can scroll it too."""
    return html.Div(
        child, className="scroll-x", tabIndex="0", role="region", **attrs(aria_label=name)
    )


def action(comp: Any) -> html.Div:
    """A button placed in a row of controls, aligned with their inputs (it names itself:
    no label element)."""
    return html.Div(comp, className="control", style={"justifyContent": "flex-end"})


def number(
    cid: str,
    value: Any,
    minimum: float | None = 1,
    step: float | str = 1,
    **props: Any,
) -> dcc.Input:
    """A number input sent on blur / Enter (``debounce``)."""
    return dcc.Input(
        id=cid, type="number", min=minimum, step=step, value=value, debounce=True, **props
    )
