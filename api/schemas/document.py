"""The OpenAPI document with the models' examples as written.

FastAPI drops every null from the document it generates (it encodes it with
``exclude_none``), examples included: an example answer then lacks the keys whose value
is null and no longer matches its own schema (``"requested": null`` of a dispatch block
vanishes). :func:`with_examples` puts each answer model's examples back whole, and
:func:`optional_read_token` says that reads need no token unless reads are closed."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from fastapi import FastAPI
from fastapi.encoders import jsonable_encoder
from pydantic import BaseModel

from api import schemas
from api.auth import READ_SCHEME


def _answer_models() -> dict[str, type[BaseModel]]:
    """Every model of this package that declares examples, by name."""
    found: dict[str, type[BaseModel]] = {}
    for info in pkgutil.iter_modules(schemas.__path__):
        module = importlib.import_module(f"{schemas.__name__}.{info.name}")
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, BaseModel):
                extra = value.model_config.get("json_schema_extra")
                if isinstance(extra, dict) and "examples" in extra:
                    found[value.__name__] = value
    return found


def with_examples(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` (an app's generated OpenAPI) with each answer model's
    ``examples`` restored as the model declares them (nulls kept)."""
    models = _answer_models()
    for schema in document.get("components", {}).get("schemas", {}).values():
        model = models.get(str(schema.get("title")))
        extra = model.model_config.get("json_schema_extra") if model else None
        if isinstance(extra, dict) and "examples" in extra:
            schema["examples"] = jsonable_encoder(extra["examples"])
    return document


def optional_read_token(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with the read token marked optional: an operation secured by the
    read scheme alone also lists the empty requirement (OpenAPI's "no credentials
    needed"), since reads are open unless MOEDASH_READ_REQUIRES_TOKEN is set."""
    for ops in document.get("paths", {}).values():
        for op in ops.values():
            security = op.get("security")
            if security == [{READ_SCHEME: []}]:
                op["security"] = [{READ_SCHEME: []}, {}]
    return document


def install(app: FastAPI) -> None:
    """Make ``app.openapi()`` (and so /api/v1/openapi.json) return the document with
    the examples restored (FastAPI's own method builds and caches the document)."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        return optional_read_token(with_examples(generate()))

    app.openapi = openapi  # type: ignore[method-assign]
