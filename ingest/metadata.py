"""The one upload-metadata model: facts a report does not carry, given by whoever uploads it.

The HTTP API (query parameters and multipart fields of ``POST /api/v1/runs``), the CLI
(``moedash ingest``, ``moedash upload``) and the upload client all validate through
:class:`UploadMetadata`, so a value one of them accepts the others accept too, with the
same limits and the same messages. Validation only; nothing here knows about transport.
The parsers later normalise the accepted values (e.g. the hardware label) and check them
against the report (e.g. a commit that contradicts ``environment.trtllm_commit``).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections.abc import Mapping
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    field_validator,
)
from pydantic_core import ErrorDetails, PydanticCustomError

from ingest.errors import InputError
from ingest.records import UploadMeta

LABEL_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9 _.+\-]*$"
COMMIT_PATTERN = r"^[0-9a-fA-F]{4,40}$"
URL_PATTERN = r"^https?://\S+$"
MAX_HARDWARE_LENGTH = 32
MAX_LABEL_LENGTH = 64
MAX_URL_LENGTH = 2000
MAX_NOTES_LENGTH = 4000
MAX_FILENAME_LENGTH = 512

# What a well-formed value looks like, said in words for the "does not match" messages
# (a regular expression in an error message helps nobody at 2 a.m.).
_EXPECTED: dict[str, str] = {
    "hardware": "a system label such as GB300: letters, digits, spaces and _ . + -",
    "trtllm_version": "a version label such as v1.3.0rc26: letters, digits, spaces and _ . + -",
    "trtllm_commit": "a hexadecimal commit id of 4 to 40 digits",
    "ci_url": "an http(s) URL without spaces",
    "dispatch": "a short label: letters, digits, spaces and _ . + - (no ':' or ',')",
    "run_date": "an ISO date YYYY-MM-DD",
}

_ISO_SHAPE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _shown(value: Any) -> str:
    """A short printable form of a refused value (control characters escaped)."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _printable(text: str) -> bool:
    """No control characters but newline and tab (format codes such as U+200B count as
    control here, as ``str.isprintable`` says)."""
    return all(ch.isprintable() or ch in "\n\t" for ch in text)


def _readable(field: str, error: ErrorDetails) -> str:
    """One pydantic error said plainly, e.g. ``at most 4000 characters (got 5000)``."""
    kind, value, ctx = error["type"], error.get("input"), error.get("ctx") or {}
    if kind == "string_too_long":
        got = f" (got {len(value)})" if isinstance(value, str) else ""
        return f"at most {ctx.get('max_length')} characters{got}"
    if kind == "string_pattern_mismatch" or field == "run_date":
        if field == "run_date" and isinstance(value, str) and _ISO_SHAPE.match(value):
            return f"{value!r} is not a day of the calendar"
        if isinstance(value, str) and not value:
            return f"empty; expected {_EXPECTED.get(field, 'a value')}"
        return f"expected {_EXPECTED.get(field, 'another form')}, got {_shown(value)}"
    return str(error["msg"])


class UploadMetadata(BaseModel):
    """Facts a bench_moe file does not carry, supplied with the upload.

    Every field is optional. Strings are stripped of surrounding whitespace. Unknown
    fields are refused (a typo such as ``hardwre=`` must not be silently dropped).
    """

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True, frozen=True)

    hardware: str | None = Field(
        None,
        max_length=MAX_HARDWARE_LENGTH,
        pattern=LABEL_PATTERN,
        description="System label: GB200, GB300, B200, B300, H100, H200 … "
        "(inferred from environment.device_name when unambiguous)",
    )
    trtllm_version: str | None = Field(
        None,
        max_length=MAX_LABEL_LENGTH,
        pattern=LABEL_PATTERN,
        description="TensorRT-LLM version, e.g. v1.3.0rc26",
    )
    trtllm_commit: str | None = Field(
        None,
        max_length=MAX_LABEL_LENGTH,
        pattern=COMMIT_PATTERN,
        description="TensorRT-LLM commit, when the report's trtllm_commit is null",
    )
    run_date: dt.date | None = Field(None, description="Date the sweep ran (YYYY-MM-DD)")
    ci_url: str | None = Field(
        None,
        max_length=MAX_URL_LENGTH,
        pattern=URL_PATTERN,
        description="Link to the CI run that produced the file",
    )
    notes: str | None = Field(
        None,
        max_length=MAX_NOTES_LENGTH,
        description="Free text; newlines and tabs allowed, other control characters not",
    )
    dispatch: str | None = Field(
        None,
        max_length=MAX_LABEL_LENGTH,
        pattern=LABEL_PATTERN,
        description="Dispatch/routing label (default: from the report)",
    )
    filename: str | None = Field(
        None, max_length=MAX_FILENAME_LENGTH, description="Name of the uploaded file"
    )

    @field_validator("*", mode="wrap")
    @classmethod
    def _explain(
        cls, value: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo
    ) -> Any:
        # Same error type as pydantic's, plainer words; the API and the CLI both show it.
        field = info.field_name or ""
        try:
            result = handler(value)
        except ValidationError as exc:
            first = exc.errors()[0]
            raise PydanticCustomError(first["type"], _readable(field, first)) from None
        if field == "notes" and isinstance(result, str) and not _printable(result):
            raise PydanticCustomError(
                "control_characters", "contains control characters (only \\n and \\t)"
            )
        return result

    def to_meta(self, filename: str | None = None, *, synthetic: bool = False) -> UploadMeta:
        """The record the parsers and the store take.

        ``hardware`` is upper-cased; ``filename`` is used when the model has none (e.g.
        the name of the multipart file part); ``run_date`` becomes ISO text.
        """
        return UploadMeta(
            hardware=self.hardware.upper() if self.hardware else None,
            trtllm_version=self.trtllm_version,
            trtllm_commit=self.trtllm_commit,
            run_date=self.run_date.isoformat() if self.run_date else None,
            ci_url=self.ci_url,
            notes=self.notes,
            dispatch=self.dispatch,
            filename=self.filename or filename,
            synthetic=synthetic,
        )

    def query_params(self) -> dict[str, str]:
        """The fields that are set, as the text the API takes as query parameters."""
        return {
            name: value.isoformat() if isinstance(value, dt.date) else str(value)
            for name, value in self.model_dump(exclude_none=True).items()
        }


class MetadataError(InputError):
    """Upload metadata refused by :class:`UploadMetadata` (HTTP 422).

    ``field`` and ``problem`` describe the first problem; ``problems`` lists them all
    as ``(field, problem)`` pairs in field order.
    """

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        field, problem = problems[0]
        super().__init__(field, problem)
        self.problems = problems


def metadata_problems(exc: ValidationError) -> list[tuple[str, str]]:
    """``(field, problem)`` for each error of an :class:`UploadMetadata` validation."""
    problems = []
    for error in exc.errors():
        field = ".".join(str(part) for part in error["loc"]) or "metadata"
        if error["type"] == "extra_forbidden":
            problems.append((field, "unknown metadata field"))
        else:
            problems.append((field, str(error["msg"])))
    return problems


def validate_metadata(values: Mapping[str, Any]) -> UploadMetadata:
    """``values`` (field name → value) checked by :class:`UploadMetadata`.

    Raises :class:`MetadataError` naming every refused field. ``None`` means "not
    given"; empty strings are checked like any other value.
    """
    try:
        return UploadMetadata.model_validate(dict(values))
    except ValidationError as exc:
        raise MetadataError(metadata_problems(exc)) from None


def metadata_of(meta: UploadMeta) -> UploadMetadata:
    """A record built elsewhere (e.g. by a script calling the upload client) checked by
    the same model. Unset (None or empty) fields are left out; ``synthetic`` is not
    upload metadata and is ignored."""
    values = {
        f.name: getattr(meta, f.name)
        for f in dataclasses.fields(meta)
        if f.name != "synthetic" and getattr(meta, f.name) not in (None, "")
    }
    return validate_metadata(values)
