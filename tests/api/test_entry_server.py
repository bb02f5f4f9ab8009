"""The entry layer against a real `moedash serve` over real sockets (loopback only,
every request bounded in size and time): oversized and slow bodies to the dashboard and
the API, the upload cap, and pages and API still answering while it all happens."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from db.store import open_store
from tests.factories.servers import running_server

# Small limits, so the test sends little: 64 KiB page bodies, 2 uploads at once,
# a 2 s body stall allowed, a 1 s grace before the minimum pace applies.
ENV = {
    "MOEDASH_MAX_PAGE_BODY_BYTES": str(64 * 1024),
    "MOEDASH_MAX_UPLOAD_BYTES": str(256 * 1024),
    "MOEDASH_MAX_CONCURRENT_UPLOADS": "2",
    "MOEDASH_MAX_UPLOADS_PER_TOKEN": "1",
    "MOEDASH_MAX_EXPENSIVE_REQUESTS": "1",
    "MOEDASH_BODY_IDLE_S": "2",
    "MOEDASH_BODY_GRACE_S": "1",
    "MOEDASH_WARM_CACHE": "false",
}
DASH = "/_dash-update-component"


TOKEN: dict[str, str] = {}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    url = f"duckdb:///{tmp_path_factory.mktemp('entry') / 'entry.duckdb'}"
    store = open_store(url)
    TOKEN["upload"] = store.tokens.create_token("ci", ["upload"])[1]
    TOKEN["other"] = store.tokens.create_token("ci-2", ["upload"])[1]
    store.close()
    with running_server(url, env=ENV) as base:
        yield base


def _connect(base: str) -> socket.socket:
    host, port = base.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=10)
    assert sock.getpeername()[0] == "127.0.0.1"  # loopback only
    return sock


def _head(method: str, path: str, length: int | None, extra: str = "") -> bytes:
    size = f"Content-Length: {length}\r\n" if length is not None else ""
    chunked = "Transfer-Encoding: chunked\r\n" if length is None else ""
    return (
        f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"{size}{chunked}{extra}\r\n"
    ).encode()


def _status(sock: socket.socket) -> tuple[int, str]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    # the body may arrive in later packets: read what content-length announces
    length = next(
        (
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")[1:]
            if line.lower().startswith(b"content-length:")
        ),
        0,
    )
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    return status, (head + b"\n" + rest).decode("latin-1")


def _still_answers(base: str) -> None:
    with httpx.Client(base_url=base, timeout=5) as client:
        assert client.get("/api/v1/health").status_code == 200
        page = client.get("/")
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]


def test_declared_oversize_dashboard_post_is_refused_before_reading(server: str) -> None:
    with _connect(server) as sock:
        sock.sendall(_head("POST", DASH, 1 << 30))  # claims 1 GiB, sends none of it
        status, text = _status(sock)
    assert status == 413 and "MOEDASH_MAX_PAGE_BODY_BYTES" in text
    _still_answers(server)


def test_chunked_oversize_bodies_are_cut_off(server: str) -> None:
    for path, limit in ((DASH, 64 * 1024), ("/static/nothing.css", 64 * 1024)):
        with _connect(server) as sock:
            sock.sendall(_head("POST", path, None))
            chunk = b"x" * 16384
            sent = 0
            try:
                while sent <= 4 * limit:  # bounded: 4x the limit at most
                    sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    sent += len(chunk)
            except OSError:
                pass  # the server closed after answering
            status, text = _status(sock)
        assert status == 413, text
        assert sent <= 4 * limit + len(chunk)
    _still_answers(server)


def test_slow_bodies_hold_no_worker_and_time_out(server: str) -> None:
    # 12 clients (more than a2wsgi's 10 threads) start a dashboard callback body and stall
    socks = [_connect(server) for _ in range(12)]
    try:
        for sock in socks:
            sock.sendall(_head("POST", DASH, 1000) + b"{")
        time.sleep(0.5)
        _still_answers(server)  # pages answer while every slow body is pending
        # each socket gives up after 10 s (_connect): an answer at all means the server
        # cut the stalled body itself (its 2 s stall limit) instead of leaving it open
        answers = [_status(sock) for sock in socks]
    finally:
        for sock in socks:
            sock.close()
    assert {status for status, _ in answers} == {408}
    assert "too slow" in answers[0][1]
    _still_answers(server)


def test_trickling_body_below_the_minimum_pace_is_cut(server: str) -> None:
    with _connect(server) as sock:
        sock.sendall(_head("POST", DASH, 10_000))
        status = 0
        for _ in range(40):  # one byte every 0.25 s: 4 B/s, well below 16 KiB/s
            try:
                sock.sendall(b" ")
            except OSError:
                break
            time.sleep(0.25)
            sock.setblocking(False)
            try:
                if sock.recv(1, socket.MSG_PEEK):
                    break
            except BlockingIOError:
                pass
            finally:
                sock.setblocking(True)
        status, text = _status(sock)
    assert status == 408 and "B/s" in text


def test_upload_cap_answers_429_with_retry_after(server: str) -> None:
    holders = [_connect(server) for _ in range(2)]
    try:
        for sock, name in zip(holders, ("upload", "other"), strict=True):
            # two uploads in flight (one per token), their bodies still arriving
            auth = f"Authorization: Bearer {TOKEN[name]}\r\n"
            sock.sendall(_head("POST", "/api/v1/runs", 1000, auth) + b"{")
        time.sleep(0.3)
        resp = httpx.post(f"{server}/api/v1/runs", content=b"{}", timeout=5)
        assert resp.status_code == 429, resp.text
        assert int(resp.headers["retry-after"]) >= 1
        assert resp.json()["detail"][0]["type"] == "too_many_uploads"
        # reads are not uploads: they still answer
        _still_answers(server)
    finally:
        for sock in holders:
            sock.close()
    time.sleep(0.5)
    # the slots are free again once those clients went away (401: no token, not 429)
    assert httpx.post(f"{server}/api/v1/runs", content=b"{}", timeout=5).status_code == 401


def test_oversized_upload_is_413_and_unknown_api_paths_are_json(server: str) -> None:
    resp = httpx.post(f"{server}/api/v1/runs", content=b" " * (300 * 1024), timeout=10)
    assert resp.status_code == 413 and "MOEDASH_MAX_UPLOAD_BYTES" in resp.text
    resp = httpx.get(f"{server}/api/v1/no-such-route", timeout=5)
    assert resp.status_code == 404 and resp.headers["content-type"] == "application/json"
    assert resp.json()["detail"][0]["loc"] == ["path"]
    resp = httpx.get(f"{server}/api/v2/runs", timeout=5)
    assert resp.status_code == 404 and "no API route" in resp.text
    resp = httpx.delete(f"{server}/api/v1/coverage", timeout=5)
    assert resp.status_code == 405 and resp.headers["allow"] == "GET"
    _still_answers(server)


def test_repository_static_files_pass_the_entry(server: str) -> None:
    static = Path(__file__).resolve().parents[2] / "static"
    files = sorted(p for p in static.rglob("*") if p.is_file())
    assert files, "the repository ships static/ (moedash.css)"
    rel = files[0].relative_to(static).as_posix()
    resp = httpx.get(f"{server}/static/{rel}", timeout=5)
    assert resp.status_code == 200 and resp.content == files[0].read_bytes()


def test_one_token_cannot_take_every_upload_slot(server: str) -> None:
    with _connect(server) as holder:  # one upload with this token, its body arriving
        auth = f"Authorization: Bearer {TOKEN['upload']}\r\n"
        holder.sendall(_head("POST", "/api/v1/runs", 1000, auth) + b"{")
        time.sleep(0.3)
        resp = httpx.post(
            f"{server}/api/v1/runs",
            content=b"{}",
            headers={"Authorization": f"Bearer {TOKEN['upload']}"},
            timeout=5,
        )
        assert resp.status_code == 429, resp.text
        assert "MOEDASH_MAX_UPLOADS_PER_TOKEN" in resp.json()["detail"][0]["msg"]
        # another token still gets a slot (400: an empty report, past the cap and auth)
        resp = httpx.post(
            f"{server}/api/v1/runs",
            content=b" ",
            headers={"Authorization": f"Bearer {TOKEN['other']}"},
            timeout=5,
        )
        assert resp.status_code == 400, resp.text


def test_expensive_reads_are_capped_and_cheap_ones_still_answer(server: str) -> None:
    with _connect(server) as holder:  # a planner request in progress, its body arriving
        holder.sendall(_head("POST", "/api/v1/planner/plan", 1000) + b"{")
        time.sleep(0.3)
        resp = httpx.get(f"{server}/api/v1/crossval/workloads", timeout=5)
        assert resp.status_code == 429, resp.text
        assert int(resp.headers["retry-after"]) >= 1
        assert resp.json()["detail"][0]["type"] == "too_many_expensive"
        assert httpx.get(f"{server}/api/v1/runs", timeout=5).status_code == 200
    time.sleep(0.5)  # the holder went away: its slot is free again
    assert httpx.get(f"{server}/api/v1/crossval/workloads", timeout=5).status_code == 200


def test_failure_limit_sees_clients_behind_a_trusted_proxy(server: str) -> None:
    # the served process trusts X-Forwarded-For from 127.0.0.1 (MOEDASH_FORWARDED_ALLOW_IPS'
    # default), as from the nginx in front of it: each client behind the proxy has its
    # own failure count
    def attempt(client_ip: str) -> int:
        headers = {"Authorization": "Bearer mdt_same_bad_guess", "X-Forwarded-For": client_ip}
        return httpx.post(
            f"{server}/api/v1/runs", content=b"{}", headers=headers, timeout=5
        ).status_code

    statuses = [attempt("198.51.100.7") for _ in range(31)]
    assert statuses[:30] == [401] * 30 and statuses[30] == 429
    assert attempt("198.51.100.8") == 401  # another client behind the same proxy
