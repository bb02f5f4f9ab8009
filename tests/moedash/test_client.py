"""moedash.client: back-off, retry notices as they happen, final refusals, the answer;
against a real `moedash serve` process, a closed port and a real HTTP server that only
answers 503."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from db.store import open_store
from ingest.records import UploadMeta
from moedash.client import RetryNotice, RetryPolicy, UploadFailed, upload_file
from tests.factories import EXAMPLE
from tests.factories.servers import free_port, running_server


def test_backoff_doubles_and_is_capped() -> None:
    policy = RetryPolicy(retries=7, first_delay=1.0, max_delay=30.0)
    assert [policy.delay(n) for n in range(1, 8)] == [1, 2, 4, 8, 16, 30, 30]
    assert str(RetryNotice(2, 6, 4.0, "connection refused")) == (
        "retry 2/6 in 4 s: connection refused"
    )


def test_server_down_announces_each_retry_then_gives_up() -> None:
    notices: list[RetryNotice] = []
    slept: list[float] = []
    with pytest.raises(UploadFailed) as err:
        upload_file(
            EXAMPLE,
            url=f"http://127.0.0.1:{free_port()}",
            token="x",
            meta=UploadMeta(),
            policy=RetryPolicy(retries=3, first_delay=0.5),
            on_retry=notices.append,
            sleep=slept.append,
        )
    assert [str(n) for n in notices] == [
        "retry 1/3 in 0.5 s: connection refused",
        "retry 2/3 in 1 s: connection refused",
        "retry 3/3 in 2 s: connection refused",
    ]
    assert slept == [0.5, 1.0, 2.0]  # announced before waiting, waited as announced
    assert err.value.attempts == 4 and err.value.status is None
    assert "gave up after 4 attempts; last error: connection refused" in str(err.value)


class _Unavailable(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        length = int(self.headers.get("Content-Length", 0))
        self.rfile.read(length)
        body = b'{"detail": [{"loc": [], "msg": "maintenance", "type": "unavailable"}]}'
        self.send_response(503)
        self.send_header("Retry-After", "0.2")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture
def unavailable() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Unavailable)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_503_is_retried_honouring_retry_after(unavailable: str) -> None:
    notices: list[RetryNotice] = []
    with pytest.raises(UploadFailed) as err:
        upload_file(
            EXAMPLE,
            url=unavailable,
            token="x",
            meta=UploadMeta(),
            policy=RetryPolicy(retries=2, first_delay=0.01),
            on_retry=notices.append,
        )
    assert [n.delay for n in notices] == [0.2, 0.2]  # the server's Retry-After wins
    assert notices[0].reason == "HTTP 503: maintenance"
    assert err.value.status == 503 and err.value.attempts == 3


def test_live_server_answers_and_refuses(tmp_path: Path) -> None:
    url = f"duckdb:///{tmp_path / 'client.duckdb'}"
    store = open_store(url)
    secret = store.tokens.create_token("ci", ["upload"])[1]
    store.close()
    notices: list[RetryNotice] = []
    with running_server(url) as base:
        meta = UploadMeta(trtllm_version="v1.3.0rc26", ci_url="https://ci/job/1")
        body = upload_file(EXAMPLE, url=base, token=secret, meta=meta, on_retry=notices.append)
        assert body["http_status"] == 201 and body["run_ids"] == [1]
        again = upload_file(
            EXAMPLE,
            url=base,
            token=secret,
            meta=UploadMeta(trtllm_version="v1.3.0rc26", ci_url="https://ci/job/2"),
        )
        assert again["http_status"] == 200 and again["already_existed"] is True
        assert again["sighting"]["n_seen"] == 1
        with pytest.raises(UploadFailed) as err:
            upload_file(
                EXAMPLE,
                url=base,
                token="mdt_wrong",
                meta=meta,
                policy=RetryPolicy(retries=3, first_delay=0.01),
                on_retry=notices.append,
            )
        assert err.value.status == 401 and err.value.attempts == 1  # final: no retry
        assert err.value.detail[0]["loc"] == ["header", "Authorization"]
    assert notices == []
