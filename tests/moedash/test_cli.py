"""The `moedash` CLI end to end: real files, real DuckDB files, a real server for `upload`."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

import pytest

from db.store import open_store
from moedash.cli import main
from moedash.cli.root import package_version, pyproject_version
from tests.factories import EXAMPLE
from tests.factories.hostile import BAD_UPLOAD_META, GOOD_UPLOAD_META, encode, minimal_report
from tests.factories.servers import free_port, running_server

REPO = Path(__file__).resolve().parents[2]
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def db(tmp_path: Path) -> str:
    return f"duckdb:///{tmp_path / 'cli.duckdb'}"


def counts(url: str) -> dict[str, int]:
    store = open_store(url)
    try:
        return store.table_counts()
    finally:
        store.close()


def flags(values: dict[str, str]) -> list[str]:
    """Upload metadata (API field names) as CLI options."""
    return [arg for k, v in values.items() for arg in (f"--{k.replace('_', '-')}", v)]


def broken_file(tmp_path: Path) -> Path:
    bad = tmp_path / "broken.json"
    bad.write_text('{"benchmark": "bench_moe", "results": [')
    return bad


def table_rows(out: str) -> dict[str, list[str]]:
    """The summary table's rows, keyed by their first cell."""
    return {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.strip()}


# --------------------------------------------------------------------------- tokens
def test_token_lifecycle(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = db(tmp_path)
    assert main(["token", "create", "ci", "--scope", "upload", "--db", url]) == 0
    out, err = capsys.readouterr()
    secret = out.strip()
    assert secret.startswith("mdt_") and "\n" not in secret  # stdout holds the secret only
    assert "shown only once" in err
    ops = ["token", "create", "ops", "--scope", "upload", "--scope", "admin", "--db", url]
    assert main(ops) == 0
    assert main(["token", "list", "--db", url]) == 0
    rows = table_rows(capsys.readouterr().out)
    assert rows["1"][:2] == ["ci", "upload"] and rows["1"][3] == "active"
    assert rows["2"][:2] == ["ops", "admin,upload"]
    assert not any(secret in " ".join(r) for r in rows.values())
    assert main(["token", "create", "ci", "--db", url]) == 1
    assert "already exists" in capsys.readouterr().err
    assert main(["token", "revoke", "ci", "--db", url]) == 0
    assert main(["token", "revoke", "nope", "--db", url]) == 1
    assert main(["token", "create", "x", "--scope", "root", "--db", url]) == 2


# --------------------------------------------------------------------------- ingest
def test_ingest_good_and_bad_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = db(tmp_path)
    other = tmp_path / "tiny.json"
    other.write_bytes(encode(minimal_report()))
    bad = broken_file(tmp_path)
    files = [str(EXAMPLE), str(bad), str(other)]
    code = main(["ingest", *files, "--db", url, "--trtllm-version", "v1.3.0rc26"])
    out, err = capsys.readouterr()
    assert code == 1
    assert f"error: {bad}: invalid JSON" in err
    rows = table_rows(out)
    assert rows[str(EXAMPLE)] == ["stored", "1", "12"]
    assert rows[str(bad)] == ["FAILED", "-", "-"]
    assert rows[str(other)][0] == "stored"
    assert counts(url)["runs"] == 2
    assert main(["ingest", str(EXAMPLE), "--db", url, "--trtllm-version", "v1.3.0rc26"]) == 0
    assert table_rows(capsys.readouterr().out)[str(EXAMPLE)][0] == "exists"
    assert counts(url)["runs"] == 2


def test_ingest_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ingest", str(tmp_path / "nope.json"), "--db", db(tmp_path)]) == 1
    assert "nope.json" in capsys.readouterr().err


def test_conflicting_metadata_for_stored_bytes_fails_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = db(tmp_path)
    assert main(["ingest", str(EXAMPLE), "--db", url]) == 0
    capsys.readouterr()
    assert main(["ingest", str(EXAMPLE), "--db", url, "--hardware", "GB300"]) == 1
    assert "hardware" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("values", "field"), [pytest.param(v, f, id=i) for i, v, f in BAD_UPLOAD_META]
)
def test_bad_metadata_exits_2_before_the_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], values: dict[str, str], field: str
) -> None:
    # the same list tests/api/test_api.py sends to POST /api/v1/runs (422 there)
    code = main(["ingest", str(EXAMPLE), "--db", db(tmp_path), *flags(values)])
    out, err = capsys.readouterr()
    assert code == 2
    assert err.startswith(f"error: {field}: ") and "should match pattern" not in err
    assert not (tmp_path / "cli.duckdb").exists()  # refused before the database opened
    assert out == ""


@pytest.mark.parametrize(
    ("values", "field"), [pytest.param(v, f, id=i) for i, v, f in BAD_UPLOAD_META]
)
def test_bad_metadata_exits_2_before_the_network(
    capsys: pytest.CaptureFixture[str], values: dict[str, str], field: str
) -> None:
    # nothing listens on the port: an attempted request would end "gave up", exit 1
    url = f"http://127.0.0.1:{free_port()}"
    args = ["upload", str(EXAMPLE), "--url", url, "--token", "x", "--retries", "0"]
    assert main([*args, *flags(values)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {field}: ") and "gave up" not in err


@pytest.mark.parametrize(
    ("values", "stored"), [pytest.param(v, s, id=i) for i, v, s in GOOD_UPLOAD_META]
)
def test_good_metadata_is_stored(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    values: dict[str, str],
    stored: dict[str, str],
) -> None:
    url = db(tmp_path)
    assert main(["ingest", str(EXAMPLE), "--db", url, *flags(values)]) == 0, capsys.readouterr()
    store = open_store(url)
    try:
        run = store.get_run(1)
    finally:
        store.close()
    assert {k: run[k] for k in stored} == stored


def test_empty_metadata_option_means_not_given(tmp_path: Path) -> None:
    url = db(tmp_path)  # CI scripts pass `--notes "$NOTES"` with NOTES unset
    assert main(["ingest", str(EXAMPLE), "--db", url, "--notes", "", "--hardware", ""]) == 0
    store = open_store(url)
    try:
        run = store.get_run(1)
    finally:
        store.close()
    assert run["notes"] is None and run["hardware"] == "B200"  # inferred from the report


def test_progress_bar_does_not_swallow_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # rich draws its live bar only on a terminal; these tell it stderr is one
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    monkeypatch.setenv("TTY_INTERACTIVE", "1")
    monkeypatch.setenv("COLUMNS", "120")
    bad = broken_file(tmp_path)
    missing = tmp_path / "nope.json"
    code = main(["ingest", str(bad), str(EXAMPLE), str(missing), "--db", db(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 1
    # every redraw starts with a carriage return; an error drawn into the bar would be
    # cut by one
    segments = [ANSI.sub("", s).strip() for s in re.split(r"[\r\n]", err)]
    assert any(s.startswith(f"error: {bad}: invalid JSON") for s in segments), segments
    assert any(s.startswith(f"error: {missing}: ") and "No such file" in s for s in segments)
    assert any("ingest" in s and "3/3" in s for s in segments)  # the bar ran to its end
    final = segments.index(next(s for s in segments if "3/3" in s))
    assert all(not s.startswith("error:") for s in segments[final:])  # errors came first
    assert "3/3" not in out and "error" not in out  # stdout keeps the table only
    assert table_rows(ANSI.sub("", out))[str(EXAMPLE)][0] == "stored"


def test_no_progress_bar_off_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("TTY_COMPATIBLE", "TTY_INTERACTIVE", "FORCE_COLOR"):
        monkeypatch.delenv(name, raising=False)
    assert main(["ingest", str(EXAMPLE), "--db", db(tmp_path)]) == 0
    assert capsys.readouterr().err == ""  # logs and pipes get results, not bar frames


# --------------------------------------------------------------------------- upload
def test_upload_to_a_live_server(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = db(tmp_path)
    store = open_store(url)
    secret = store.tokens.create_token("ci", ["upload"])[1]
    store.close()  # DuckDB: one process per file, the server is the next one
    other = tmp_path / "tiny.json"
    other.write_bytes(encode(minimal_report()))
    bad = broken_file(tmp_path)
    good = {k: v for _, values, _ in GOOD_UPLOAD_META for k, v in values.items()}
    with running_server(url) as base:
        args = ["upload", "--url", base, "--token", secret, "--retries", "0", *flags(good)]
        assert main([*args, str(EXAMPLE), str(bad), str(other)]) == 1
        out, err = capsys.readouterr()
        rows = table_rows(out)
        assert rows[str(EXAMPLE)] == ["stored", "1", "12"]
        assert rows[str(bad)][0] == "FAILED" and rows[str(other)][0] == "stored"
        assert f"error: {bad}: HTTP 422" in err  # final: no retries
        assert main([*args, str(EXAMPLE)]) == 0
        assert table_rows(capsys.readouterr().out)[str(EXAMPLE)][:2] == ["already", "existed"]
        wrong = ["upload", str(EXAMPLE), "--url", base, "--token", "mdt_bad", "--retries", "3"]
        assert main(wrong) == 1  # 401 is final: no retries
        assert "HTTP 401" in capsys.readouterr().err
    store = open_store(url)
    try:
        assert store.table_counts()["runs"] == 2
        run = store.get_run(1)
    finally:
        store.close()
    expected = {k: v for _, _, stored in GOOD_UPLOAD_META for k, v in stored.items()}
    assert {k: run[k] for k in expected} == expected
    assert run["filename"] == EXAMPLE.name  # the server keeps the name, not the directory


def test_upload_gives_up_when_server_is_down(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["upload", str(EXAMPLE), "--url", f"http://127.0.0.1:{free_port()}", "--token", "x"]
    assert main([*args, "--retries", "1", "--timeout", "2"]) == 1
    assert "gave up after 2 attempts" in capsys.readouterr().err


# --------------------------------------------------------------------------- the app itself
def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"moedash {importlib.metadata.version('moedash')}\n"
    assert package_version() == importlib.metadata.version("moedash")


def test_version_falls_back_to_pyproject(tmp_path: Path) -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert pyproject_version() == project["version"]
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "9.8.7"\n')
    assert pyproject_version(tmp_path / "pyproject.toml") == "9.8.7"
    assert pyproject_version(tmp_path / "missing.toml") is None


COMMANDS = [
    [],
    ["serve"],
    ["migrate"],
    ["demo"],
    ["ingest"],
    ["upload"],
    ["token"],
    ["token", "create"],
    ["token", "list"],
    ["token", "revoke"],
    ["import-serving"],
    ["outcomes"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "moedash")
def test_every_command_has_help(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*command, "--help"]) == 0
    out = capsys.readouterr().out
    assert f"Usage: {' '.join(['moedash', *command])}" in " ".join(out.split())


def test_ingest_help_lists_every_metadata_option(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ingest", "--help"]) == 0
    out = capsys.readouterr().out
    for option in ("hardware", "trtllm-version", "trtllm-commit", "run-date", "ci-url"):
        assert f"--{option}" in out
    assert "--notes" in out and "--dispatch" in out


@pytest.mark.parametrize(
    "args",
    [
        ["bogus"],
        ["ingest"],
        ["ingest", "x.json", "--bogus"],
        ["serve", "--port", "abc"],
        ["upload", "x.json", "--url", "http://x", "--token", "t", "--retries", "many"],
    ],
)
def test_usage_errors_exit_2(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(args) == 2
    assert "Error:" in capsys.readouterr().err


def test_no_command_shows_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "Usage: moedash" in capsys.readouterr().out


def test_migrate_reports_the_schema_version(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["migrate", "--db", db(tmp_path)]) == 0
    assert re.fullmatch(r"schema at version \S+\n", capsys.readouterr().out)
    assert counts(db(tmp_path))["runs"] == 0


def test_unreachable_database_is_one_line_not_a_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    port = free_port()  # nothing listens there
    assert main(["migrate", "--db", f"postgresql://nobody@127.0.0.1:{port}/x"]) == 1
    err = capsys.readouterr().err
    assert "database: upgrade failed" in err and "Traceback" not in err
