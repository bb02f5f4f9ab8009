"""The one upload-metadata model (ingest/metadata.py) on its own, without HTTP or CLI.

tests/api/test_api.py and tests/moedash/test_cli.py run the same BAD/GOOD lists through
the API and the CLI; here the model's own rules: limits, messages, the record it builds.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ingest.detect import parse_upload
from ingest.errors import InputError
from ingest.metadata import (
    MAX_NOTES_LENGTH,
    MetadataError,
    UploadMetadata,
    metadata_of,
    validate_metadata,
)
from ingest.records import UploadMeta
from tests.factories.hostile import BAD_UPLOAD_META, GOOD_UPLOAD_META, encode, minimal_report


@pytest.mark.parametrize(
    ("values", "field"), [pytest.param(v, f, id=i) for i, v, f in BAD_UPLOAD_META]
)
def test_bad_values_are_refused_naming_the_field(values: dict[str, str], field: str) -> None:
    with pytest.raises(MetadataError) as info:
        validate_metadata(values)
    assert isinstance(info.value, InputError) and info.value.status == 422
    assert info.value.field == field
    assert info.value.problems == [(field, info.value.problem)]
    # said in words, not as pydantic's regular expression
    assert "pattern" not in info.value.problem and "^" not in info.value.problem


@pytest.mark.parametrize(
    ("values", "stored"), [pytest.param(v, s, id=i) for i, v, s in GOOD_UPLOAD_META]
)
def test_good_values_reach_the_parsed_run(values: dict[str, str], stored: dict[str, str]) -> None:
    meta = validate_metadata(values).to_meta("tiny.json")
    (sweep,) = parse_upload(encode(minimal_report()), meta, meta.filename)
    assert {k: sweep.run[k] for k in stored} == stored


@pytest.mark.parametrize(
    ("values", "problem"),
    [
        ({"notes": "n" * 5000}, "at most 4000 characters (got 5000)"),
        ({"dispatch": "EP:8"}, "got 'EP:8'"),
        ({"run_date": "2026-02-30"}, "'2026-02-30' is not a day of the calendar"),
        ({"run_date": "13/09/2026"}, "expected an ISO date YYYY-MM-DD, got '13/09/2026'"),
        ({"hardware": ""}, "empty; expected a system label"),
        ({"trtllm_commit": "xyz"}, "hexadecimal commit id of 4 to 40 digits"),
        ({"hardware": "GB300\x1b[2J"}, "got 'GB300\\x1b[2J'"),  # shown escaped
    ],
)
def test_messages_say_what_is_expected(values: dict[str, str], problem: str) -> None:
    with pytest.raises(MetadataError) as info:
        validate_metadata(values)
    assert problem in info.value.problem


def test_every_refused_field_is_listed() -> None:
    with pytest.raises(MetadataError) as info:
        validate_metadata({"dispatch": "EP:8", "notes": "n" * 5000, "hardwre": "GB300"})
    assert [field for field, _ in info.value.problems] == ["notes", "dispatch", "hardwre"]
    assert dict(info.value.problems)["hardwre"] == "unknown metadata field"


def test_limits_are_inclusive() -> None:
    assert validate_metadata({"notes": "n" * MAX_NOTES_LENGTH}).notes == "n" * MAX_NOTES_LENGTH
    assert validate_metadata({"hardware": "G" * 32}).hardware == "G" * 32
    assert validate_metadata({"trtllm_commit": "abcd"}).trtllm_commit == "abcd"
    assert validate_metadata({"trtllm_commit": "a" * 40}).trtllm_commit == "a" * 40


def test_to_meta_normalises_and_falls_back_to_the_given_filename() -> None:
    model = validate_metadata({"hardware": "  gb300 ", "run_date": "2026-09-13"})
    assert model.run_date == dt.date(2026, 9, 13)
    meta = model.to_meta("upload.json", synthetic=True)
    assert meta == UploadMeta(
        hardware="GB300", run_date="2026-09-13", filename="upload.json", synthetic=True
    )
    assert validate_metadata({"filename": "own.json"}).to_meta("part.json").filename == "own.json"


def test_query_params_validate_back_to_the_same_model() -> None:
    values = {k: v for _, given_values, _ in GOOD_UPLOAD_META for k, v in given_values.items()}
    model = validate_metadata(values)
    params = model.query_params()
    assert all(isinstance(v, str) for v in params.values())
    assert params["run_date"] == "2026-02-28" and params["hardware"] == "b200 nvl72"
    assert validate_metadata(params) == model
    assert UploadMetadata().query_params() == {}


def test_records_built_elsewhere_are_checked_by_the_same_model() -> None:
    ok = metadata_of(UploadMeta(hardware="GB300", notes="", synthetic=True))
    assert ok.query_params() == {"hardware": "GB300"}  # synthetic is not upload metadata
    with pytest.raises(MetadataError) as info:
        metadata_of(UploadMeta(dispatch="EP:8"))
    assert info.value.field == "dispatch"
    with pytest.raises(MetadataError):
        metadata_of(UploadMeta(run_date=12345))  # type: ignore[arg-type]


def test_the_model_is_frozen() -> None:
    model = validate_metadata({"hardware": "GB300"})
    with pytest.raises(ValueError):
        model.hardware = "B300"  # type: ignore[misc]


def test_json_schema_keeps_the_limits() -> None:
    # FastAPI builds the OpenAPI document from this; the readable messages must not hide it
    props: dict[str, Any] = UploadMetadata.model_json_schema()["properties"]
    string = {
        name: next(s for s in spec["anyOf"] if s.get("type") == "string")
        for name, spec in props.items()
        if name != "run_date"
    }
    assert string["notes"]["maxLength"] == 4000
    assert string["ci_url"]["maxLength"] == 2000
    assert string["hardware"]["maxLength"] == 32 and "pattern" in string["hardware"]
    assert string["filename"]["maxLength"] == 512


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=200))
def test_notes_are_accepted_exactly_when_printable(body: str) -> None:
    text = f"<{body}>"  # no surrounding whitespace: stripping (every field's) plays no part
    printable = all(ch.isprintable() or ch in "\n\t" for ch in text)
    try:
        model = validate_metadata({"notes": text})
    except MetadataError as exc:
        assert not printable and exc.field == "notes"
    else:
        assert printable and model.notes == text
