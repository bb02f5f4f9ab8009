"""Page URLs in the API's own terms: one query language for permalinks and API calls.

A page's URL names its scope the way the analysis routes do (``service.scope.Scope``:
``model``, ``hardware``, ``quant``, ``world_size``, ``phase``, ``attention`` = dp | tp,
``dispatch``), so a page's query string can be sent to ``/api/v1/pareto`` or
``/api/v1/best`` as it is. :func:`scope_values` reads those fields -- each validated by
the API's model, a value the API would refuse dropped (the page falls back to its
default) -- and still reads the names older permalinks used (``ws``, ``attn`` = D | T).
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from dashboard import components as ui
from service.scope import Scope

# (API name, the name older permalinks used)
_LEGACY = {"world_size": "ws", "attention": "attn"}
_ATTN_LETTER = {"D": "dp", "T": "tp", "DP": "dp", "TP": "tp"}
SCOPE_FIELDS = ("model", "hardware", "quant", "world_size", "phase", "attention", "dispatch")


def scope_values(query: dict[str, Any]) -> dict[str, Any]:
    """The :data:`SCOPE_FIELDS` a query string holds, as the API's ``Scope`` parses
    them; absent or invalid values are left out."""
    out: dict[str, Any] = {}
    for name in SCOPE_FIELDS:
        value = ui.first(query, name)
        if value in (None, "") and name in _LEGACY:
            value = ui.first(query, _LEGACY[name])
            if name == "attention" and value is not None:
                value = _ATTN_LETTER.get(str(value).upper(), value)
        if value in (None, ""):
            continue
        try:
            out[name] = getattr(Scope.model_validate({name: value}), name)
        except ValidationError:
            continue
    return out


def attention_param(attn: str | None) -> str | None:
    """The page's attention family (D, T, anything else = all) in the API's words."""
    return _ATTN_LETTER.get(str(attn).upper()) if attn else None


def attention_letter(attention: str | None) -> str:
    """The API's attention (dp / tp) as the frames' ``attn`` letter; "all" otherwise."""
    return {"dp": "D", "tp": "T"}.get(str(attention), "all")
