"""The OpenAPI document as FastAPI generates it, completed in three ways.

- Examples whole: FastAPI drops every null from the document (it encodes it with
  ``exclude_none``), examples included, so an example answer lacks the keys whose value
  is null and no longer matches its own schema (``"requested": null`` of a dispatch
  block vanishes). :func:`with_examples` puts each model's examples back as written.
- Fields described: :func:`described` gives every field of an answer that has no
  description of its own the one :data:`~api.schemas.glossary.GLOSSARY` has for its name.
- Reads open: :func:`optional_read_token` says reads need no token unless reads are
  closed."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.encoders import jsonable_encoder
from pydantic import BaseModel

from api.auth import READ_SCHEME
from api.schemas.glossary import GLOSSARY


def _api_models() -> dict[str, type[BaseModel]]:
    """The pydantic models defined under ``api`` (answers, wherever a route module
    declares them), by class name."""
    found: dict[str, type[BaseModel]] = {}
    todo: list[type[BaseModel]] = [BaseModel]
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.__module__.startswith("api.") and "[" not in cls.__name__:
            found[cls.__name__] = cls
    return found


def with_examples(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with each model's ``examples`` restored as the model declares them
    (nulls kept). A component is matched to its model by title."""
    models = _api_models()
    for schema in document.get("components", {}).get("schemas", {}).values():
        model = models.get(str(schema.get("title")))
        extra = model.model_config.get("json_schema_extra") if model else None
        if isinstance(extra, dict) and "examples" in extra:
            schema["examples"] = jsonable_encoder(extra["examples"])
    return document


def answer_schemas(document: dict[str, Any]) -> set[str]:
    """Names of the component schemas an answer (any response) can hold."""
    components = document.get("components", {}).get("schemas", {})
    found: set[str] = set()
    todo: list[Any] = [op["responses"] for ops in document["paths"].values() for op in ops.values()]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            name = ref.rsplit("/", 1)[1] if isinstance(ref, str) else None
            if name is not None and name not in found and name in components:
                found.add(name)
                todo.append(components[name])
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
    return found


def described(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with every answer field that has no description of its own
    described from :data:`~api.schemas.glossary.GLOSSARY` (by field name)."""
    components = document.get("components", {}).get("schemas", {})
    for name in answer_schemas(document):
        for field, prop in components[name].get("properties", {}).items():
            if "description" not in prop and field in GLOSSARY:
                prop["description"] = GLOSSARY[field]
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
    """Make ``app.openapi()`` (and so /api/v1/openapi.json) return the completed
    document (FastAPI's own method builds and caches the generated one)."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        return optional_read_token(described(with_examples(generate())))

    app.openapi = openapi  # type: ignore[method-assign]
