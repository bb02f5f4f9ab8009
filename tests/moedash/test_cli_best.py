"""``moedash best``: the API's Best answer on the command line, through the same code
path (``service.best.best_table``), confidence verdict included; bad options exit 2 with
the option named, an unknown cell exits 1 naming the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from db.store import Store, open_store
from moedash.app import create_app
from moedash.cli import main
from moedash.settings import Settings
from tests.service.stores import PARITY_CELL, seed_tie_sweep

CELL = ["--model", PARITY_CELL.model, "--hardware", PARITY_CELL.hardware]
CELL += ["--quant", PARITY_CELL.quant]


@pytest.fixture
def db(tmp_path: Path) -> str:
    url = f"duckdb:///{tmp_path / 'best.duckdb'}"
    store: Store = open_store(url)
    try:
        seed_tie_sweep(store)
    finally:
        store.close()
    return url


def test_json_is_the_apis_answer(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["best", *CELL, "--format", "json", "--db", db]) == 0
    cli = json.loads(capsys.readouterr().out)
    settings = Settings(database_url=db, enable_dashboard=False, warm_cache=False)
    with TestClient(create_app(settings)) as client:
        api = client.get(
            "/api/v1/best",
            params={"model": PARITY_CELL.model, "hardware": PARITY_CELL.hardware,
                    "quant": PARITY_CELL.quant},
        ).json()  # fmt: skip
    assert cli["items"] == api["items"] and len(cli["items"]) == 2
    assert {i["confidence"] for i in cli["items"]} <= {"deploy", "tie: either", "measure first"}
    assert all(i["measured"] is True and i["confidence_note"] for i in cli["items"])


def test_table_shows_winners_and_verdicts(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["best", *CELL, "--db", db]) == 0
    out = capsys.readouterr().out
    assert "TRTLLM" in out and "MEGAMOE_CUTEDSL" in out and "confidence" in out
    assert "deploy" in out or "tie: either" in out


def test_bad_options_and_unknown_cells(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["best", *CELL, "--phase", "warmup", "--db", db]) == 2
    assert "--phase" in capsys.readouterr().err
    assert main(["best", *CELL, "--format", "xml", "--db", db]) == 2
    assert "--format" in capsys.readouterr().err
    code = main(["best", *CELL, "--dispatch", "nope", "--db", db])
    err = capsys.readouterr().err
    assert code == 1 and "--dispatch" in err and "balanced" in err
