"""The `moedash` CLI end to end: real files, real database, real server for `upload`."""

from __future__ import annotations

from pathlib import Path

import pytest

from db.store import open_store
from moedash.cli import main
from tests.factories import EXAMPLE
from tests.factories.servers import running_server



def db(tmp_path: Path) -> str:
    return f"duckdb:///{tmp_path / 'cli.duckdb'}"


def counts(url: str) -> dict[str, int]:
    store = open_store(url)
    try:
        return store.table_counts()
    finally:
        store.close()


def test_token_lifecycle(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = db(tmp_path)
    assert main(["token", "create", "ci", "--scope", "upload", "--db", url]) == 0
    secret = capsys.readouterr().out.strip()
    assert secret.startswith("mdt_")
    assert main(["token", "list", "--db", url]) == 0
    listing = capsys.readouterr().out
    assert "ci" in listing and "upload" in listing and secret not in listing
    assert main(["token", "create", "ci", "--db", url]) == 1
    assert "already exists" in capsys.readouterr().err
    assert main(["token", "revoke", "ci", "--db", url]) == 0
    assert main(["token", "revoke", "nope", "--db", url]) == 1


def test_ingest_good_and_bad_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = db(tmp_path)
    bad = tmp_path / "broken.json"
    bad.write_text('{"benchmark": "bench_moe", "results": [')
    code = main(["ingest", str(EXAMPLE), str(bad), "--db", url, "--trtllm-version", "v1.3.0rc26"])
    out, err = capsys.readouterr()
    assert code == 1
    assert "broken.json" in err and "stored" in out
    assert counts(url)["candidates"] == 12
    assert main(["ingest", str(EXAMPLE), "--db", url, "--trtllm-version", "v1.3.0rc26"]) == 0
    assert "exists" in capsys.readouterr().out
    assert counts(url)["runs"] == 1


def test_ingest_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ingest", str(tmp_path / "nope.json"), "--db", db(tmp_path)]) == 1
    assert "nope.json" in capsys.readouterr().err


def test_upload_to_a_live_server(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = db(tmp_path)
    store = open_store(url)
    secret = store.create_token("ci", ["upload"])[1]
    store.close()  # DuckDB: one process per file, the server is the next one
    with running_server(url) as base:
        args = ["upload", str(EXAMPLE), "--url", base, "--token", secret, "--retries", "0"]
        assert main(args) == 0
        assert "stored as run" in capsys.readouterr().out
        assert main(args) == 0
        assert "already existed" in capsys.readouterr().out
        bad = ["upload", str(EXAMPLE), "--url", base, "--token", "mdt_bad", "--retries", "3"]
        assert main(bad) == 1  # 401 is final: no retries
        assert "HTTP 401" in capsys.readouterr().err
    assert counts(url)["runs"] == 1


def test_upload_gives_up_when_server_is_down(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.factories.servers import free_port

    args = ["upload", str(EXAMPLE), "--url", f"http://127.0.0.1:{free_port()}", "--token", "x"]
    assert main([*args, "--retries", "1", "--timeout", "2"]) == 1
    assert "gave up after 2 attempts" in capsys.readouterr().err
