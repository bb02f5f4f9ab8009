"""`moedash upload` as a CI job runs it: against one real `moedash serve` process (a
DuckDB file) for the module, a closed port, and as a subprocess for the environment."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from db.store import open_store
from moedash.cli.root import main
from tests.factories import EXAMPLE
from tests.factories import upload_reports as R
from tests.factories.servers import REPO, free_port, running_server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """(base URL, upload token) of a server on a fresh DuckDB file."""
    url = f"duckdb:///{tmp_path_factory.mktemp('upload') / 'cli.duckdb'}"
    store = open_store(url)
    secret = store.tokens.create_token("ci", ["upload"])[1]
    store.close()  # DuckDB: one process per file, the server is the next one
    with running_server(url) as base:
        yield base, secret


@pytest.fixture(autouse=True)
def no_ambient_server(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MOEDASH_URL", "MOEDASH_TOKEN"):
        monkeypatch.delenv(name, raising=False)


def write(tmp_path: Path, name: str, body: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(body)
    return str(path)


def one_json(out: str) -> dict[str, Any]:
    """stdout must be exactly one JSON document."""
    doc: dict[str, Any] = json.loads(out)
    assert out.count("\n") == 1 and out.endswith("\n")
    return doc


def test_retried_job_with_a_new_ci_url_succeeds_and_is_a_sighting(
    server: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, secret = server
    report = write(tmp_path, "retry.json", R.slower(1.07))
    args = ["upload", report, "--url", base, "--token", secret, "--trtllm-version", "v0.1.0"]
    assert main([*args, "--ci-url", "https://ci/job/1", "--json"]) == 0
    first = one_json(capsys.readouterr().out)
    assert first["ok"] and first["files"][0]["status"] == "stored"
    assert main([*args, "--ci-url", "https://ci/job/2"]) == 0  # the retry: not a red build
    out = capsys.readouterr().out
    assert "already existed" in out
    run = httpx.get(f"{base}/api/v1/runs/{first['run_ids'][0]}").json()
    assert [s["ci_url"] for s in run["sightings"]] == ["https://ci/job/2"]


def test_url_and_token_from_the_environment_not_argv(
    server: tuple[str, str], tmp_path: Path
) -> None:
    base, secret = server
    report = write(tmp_path, "env.json", R.slower(1.11))
    env = {**os.environ, "MOEDASH_URL": base, "MOEDASH_TOKEN": secret}
    argv = [sys.executable, "-m", "moedash.cli", "upload", report, "--json"]
    argv += ["--trtllm-version", "v0.2.0"]
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert secret not in " ".join(argv)
    assert secret not in done.stdout and secret not in done.stderr  # never echoed
    doc = one_json(done.stdout)
    assert doc["ok"] and doc["files"][0]["status"] == "stored" and doc["run_ids"]
    assert f"{report}: sending to {base}" in done.stderr  # progress on stderr


def test_token_file(
    server: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, secret = server
    token_file = tmp_path / "token"
    token_file.write_text(secret + "\n")
    report = write(tmp_path, "file.json", R.slower(1.13))
    args = ["upload", report, "--url", base, "--token-file", str(token_file)]
    assert main([*args, "--trtllm-version", "v0.3.0", "--json"]) == 0
    assert one_json(capsys.readouterr().out)["files"][0]["status"] == "stored"
    assert main([*args, "--token", "also", "--json"]) == 2  # one or the other
    doc = one_json(capsys.readouterr().out)
    assert doc["exit_code"] == 2 and "not both" in doc["errors"][0]["message"]


def test_json_when_the_server_is_down(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    args = ["upload", str(EXAMPLE), "--url", url, "--token", "x", "--json"]
    assert main([*args, "--retries", "2", "--retry-delay", "0.05"]) == 1
    out, err = capsys.readouterr()
    # bounded: the two announced retries, then it gives up
    assert err.count("retry ") == 2 and "retry 2/2" in err
    doc = one_json(out)
    assert doc["ok"] is False and doc["exit_code"] == 1 and doc["run_ids"] == []
    (problem,) = doc["errors"]
    assert problem["file"] == str(EXAMPLE) and problem["http_status"] is None
    assert "gave up after 3 attempts" in problem["message"]
    assert f"{EXAMPLE}: retry 1/2 in 0.05 s: connection refused" in err
    assert f"{EXAMPLE}: retry 2/2 in 0.1 s: connection refused" in err


def test_json_on_a_final_refusal(
    server: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    base, _ = server
    args = ["upload", str(EXAMPLE), "--url", base, "--token", "mdt_wrong", "--json"]
    assert main([*args, "--retries", "3", "--retry-delay", "0.01"]) == 1
    out, err = capsys.readouterr()
    doc = one_json(out)
    assert doc["files"][0]["http_status"] == 401 and doc["files"][0]["attempts"] == 1
    assert doc["errors"][0]["detail"][0]["loc"] == ["header", "Authorization"]
    assert "retry" not in err  # 401 is final


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--url", "http://127.0.0.1:9"], "token: give --token, --token-file or set MOEDASH_TOKEN"),
        (["--token", "x"], "url: give --url or set MOEDASH_URL"),
        (["--url", "http://x", "--token", "x", "--run-date", "2026-02-30"], "run_date: "),
        (["--url", "http://x", "--token", "x", "--retries", "many"], "--retries"),
    ],
)
def test_usage_errors_are_exit_2_with_one_json_document(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["upload", str(EXAMPLE), "--json", *args]) == 2
    out, err = capsys.readouterr()
    doc = one_json(out)
    assert doc["exit_code"] == 2 and doc["ok"] is False and doc["files"] == []
    assert message in doc["errors"][0]["message"] and "error" in err.lower()


def test_fail_on_regression_exits_3_with_a_table(
    server: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, secret = server
    # a slice of its own: the noise model learns from the earlier versions of the slice
    common = ["--url", base, "--token", secret, "--hardware", "H200"]
    old = write(tmp_path, "old.json", R.slower(2.0))
    assert main(["upload", old, *common, "--trtllm-version", "v0.9.0"]) == 0
    capsys.readouterr()
    slow = write(tmp_path, "slow.json", R.slower(3.0, num_tokens=4096))  # +50 % at 4096
    args = ["upload", slow, *common, "--trtllm-version", "v0.9.1", "--fail-on-regression"]
    assert main([*args, "--json"]) == 3
    out, err = capsys.readouterr()
    doc = one_json(out)
    assert doc["exit_code"] == 3 and doc["ok"] is False and doc["errors"] == []
    assert doc["regressions"] and {r["num_tokens"] for r in doc["regressions"]} == {4096}
    assert all(r["file"] == slow and r["base_version"] == "v0.9.0" for r in doc["regressions"])
    assert "regression(s) against the latest earlier version" in err  # the table: stderr
    assert "+50.0" in err
    # the same bytes again: nothing new, so nothing to fail on
    assert main(args) == 0
    assert "against the latest earlier version" not in capsys.readouterr().out


def test_regressions_are_shown_and_the_threshold_is_the_clients(
    server: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, secret = server
    common = ["--url", base, "--token", secret, "--hardware", "B300"]
    old = write(tmp_path, "t-old.json", R.slower(4.0))
    assert main(["upload", old, *common, "--trtllm-version", "v0.8.0"]) == 0
    mild = write(tmp_path, "t-mild.json", R.slower(5.0))  # +25 %
    strict = ["--trtllm-version", "v0.8.1", "--fail-on-regression", "--threshold", "40"]
    assert main(["upload", mild, *common, *strict]) == 0  # 25 % < 40 %
    capsys.readouterr()
    worse = write(tmp_path, "t-worse.json", R.slower(7.5))  # +50 % against v0.8.1
    assert main(["upload", worse, *common, "--trtllm-version", "v0.8.2"]) == 0  # no flag: 0
    out = capsys.readouterr().out
    assert "regression(s) against the latest earlier version" in out and "+50.0" in out


def test_a_slowdown_inside_the_noise_band_fails_only_the_strict_gate(
    server: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, secret = server
    common = ["--url", base, "--token", secret, "--hardware", "B200", "--json"]
    # two runs of v0.5.0 that differ by 50 %: a re-run moves every score that much
    for name, factor in (("n-a.json", 1.0), ("n-b.json", 1.5)):
        path = write(tmp_path, name, R.slower(factor))
        assert main(["upload", path, *common, "--trtllm-version", "v0.5.0"]) == 0
    capsys.readouterr()
    slow = write(tmp_path, "n-slow.json", R.slower(1.5, num_tokens=4096))
    head = ["upload", slow, *common, "--trtllm-version", "v0.5.1", "--fail-on-regression"]
    assert main(head) == 0
    doc = one_json(capsys.readouterr().out)
    assert doc["regressions"] == [] and doc["inconclusive"]
    assert {r["num_tokens"] for r in doc["inconclusive"]} == {4096}
    item = doc["inconclusive"][0]
    assert item["verdict"] == "inconclusive" and "repeats" in item["noise_source"]
    assert item["noise_pct"] > item["baseline_change_pct"] > 5.0
    # another +50 % at 4096 (against v0.5.1) under the strict gate fails
    again = write(tmp_path, "n-slow2.json", R.slower(2.25, num_tokens=4096))
    strict = ["upload", again, *common, "--trtllm-version", "v0.5.2", "--fail-on-inconclusive"]
    assert main(strict) == 3
    assert one_json(capsys.readouterr().out)["exit_code"] == 3


def test_interrupt_while_waiting_to_retry_is_130_with_one_json_document() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    argv = [sys.executable, "-m", "moedash.cli", "upload", str(EXAMPLE), "--json"]
    argv += ["--url", url, "--token", "x", "--retry-delay", "30"]
    # A job started in the background by a non-interactive shell (as CI may start this
    # suite) inherits SIGINT ignored, and Python then installs no KeyboardInterrupt
    # handler; a person's Ctrl-C reaches a foreground client, so restore the default.
    with subprocess.Popen(
        argv,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # noqa: PLW1509
    ) as proc:
        try:
            assert proc.stderr is not None
            for line in proc.stderr:  # the retry is announced before the client waits
                if "retry 1/5 in 30 s: connection refused" in line:
                    break
            proc.send_signal(signal.SIGINT)
            out, _ = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 130
    doc = one_json(out)
    assert doc["exit_code"] == 130 and doc["errors"][-1]["message"] == "interrupted"


@pytest.mark.postgres
def test_retry_and_regression_on_postgresql(
    pg_schema_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = open_store(pg_schema_url)
    secret = store.tokens.create_token("ci", ["upload"])[1]
    store.close()
    base_file = write(tmp_path, "pg-base.json", EXAMPLE.read_bytes())
    slow = write(tmp_path, "pg-slow.json", R.slower(1.5, num_tokens=4096))
    with running_server(pg_schema_url) as base:
        common = ["--url", base, "--token", secret, "--json"]
        v26 = ["--trtllm-version", "v1.3.0rc26"]
        assert main(["upload", base_file, *common, *v26, "--ci-url", "https://ci/job/1"]) == 0
        capsys.readouterr()
        assert main(["upload", base_file, *common, *v26, "--ci-url", "https://ci/job/2"]) == 0
        retried = one_json(capsys.readouterr().out)
        assert retried["already_existed"] and retried["files"][0]["sighting"]["n_seen"] == 1
        v27 = ["--trtllm-version", "v1.3.0rc27", "--fail-on-regression"]
        assert main(["upload", slow, *common, *v27]) == 3
        doc = one_json(capsys.readouterr().out)
        assert {r["num_tokens"] for r in doc["regressions"]} == {4096}
