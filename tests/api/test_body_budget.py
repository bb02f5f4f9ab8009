"""One memory budget for every body, against a real `moedash serve` over real sockets,
without a token (what anyone on the network can send): every POST route refuses a
declared or streamed body over its limit, hostile bodies within it get a small JSON
answer that quotes nothing they sent, many bodies at once beyond the buffer budget get
429 with Retry-After, and the server's resident memory stays within :data:`RSS_BUDGET_KIB`
of where it started while all of it happens."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.factories.bodies import (
    DASH,
    connect,
    head,
    memory_kib,
    post_routes,
    read_answer,
    send_body,
    send_chunked,
    server_pid,
)
from tests.factories.servers import running_server

MIB = 1024 * 1024
UPLOAD_LIMIT = 4 * MIB
BUFFER_BUDGET = 16 * MIB
PAGE_LIMIT = 2 * MIB  # the default
JSON_LIMIT = 64 * 1024  # the default
OUTCOMES_LIMIT = MIB  # the default
ENV = {
    "MOEDASH_MAX_UPLOAD_BYTES": str(UPLOAD_LIMIT),
    "MOEDASH_MAX_BUFFERED_BODY_BYTES": str(BUFFER_BUDGET),
    "MOEDASH_BODY_IDLE_S": "10",
    "MOEDASH_WARM_CACHE": "false",
}
UPLOADS = {"/api/v1/runs", "/api/v1/serving-configs"}
LIMITS = {
    "/api/v1/runs": UPLOAD_LIMIT,
    "/api/v1/serving-configs": UPLOAD_LIMIT,
    "/api/v1/crossval/outcomes": OUTCOMES_LIMIT,
    DASH: PAGE_LIMIT,
}
# What the barrage may add to the server's resident memory (peak over the start): the
# buffer budget, a copy of each held body as its route parses it, and the allocator's
# slack. Before the budget existed, 30 x 8 MiB to the Dash route added 2.5 GB.
RSS_BUDGET_KIB = 160 * 1024
MARKER = "zq-hostile-marker-"


def limit_of(path: str) -> int:
    return LIMITS.get(path, JSON_LIMIT)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    url = f"duckdb:///{tmp_path_factory.mktemp('bodies') / 'bodies.duckdb'}"
    with running_server(url, env=ENV) as base:
        yield base


def _json_error(answer_status: int, headers: dict[str, str], body: bytes) -> dict[str, object]:
    assert headers.get("content-type", "").startswith("application/json"), (answer_status, body)
    parsed = json.loads(body)
    assert isinstance(parsed, dict) and parsed["detail"], body
    return parsed


def test_post_routes_are_known() -> None:
    assert set(post_routes()) >= {
        "/api/v1/runs",
        "/api/v1/serving-configs",
        "/api/v1/planner/plan",
        "/api/v1/crossval/outcomes",
        DASH,
    }


@pytest.mark.parametrize("path", post_routes())
def test_declared_oversize_is_refused_before_reading(server: str, path: str) -> None:
    with connect(server) as sock:
        sock.sendall(head(path, 1 << 30))  # claims 1 GiB, sends none of it
        answer = read_answer(sock)
    assert answer.status == 413, answer
    _json_error(answer.status, answer.headers, answer.body)
    assert b"MOEDASH_MAX_" in answer.body


@pytest.mark.parametrize("path", post_routes())
def test_streamed_oversize_is_cut_off(server: str, path: str) -> None:
    limit = limit_of(path)
    with connect(server) as sock:
        sock.sendall(head(path, None))
        sent = send_chunked(sock, 4 * limit)  # bounded: 4x the limit at most
        answer = read_answer(sock)
    # an upload without a token is refused before its body is read at all
    assert answer.status == (401 if path in UPLOADS else 413), answer
    _json_error(answer.status, answer.headers, answer.body)
    assert sent <= 4 * limit


@pytest.mark.parametrize("path", post_routes())
def test_hostile_body_within_the_limit_gets_small_json_quoting_nothing(
    server: str, path: str
) -> None:
    filler = MARKER * ((limit_of(path) // 2) // len(MARKER))
    bodies = [
        json.dumps({"model": filler, "workload": {"seq_len": 1e-320}}).encode(),
        json.dumps([{"workload_id": filler, filler: 1}]).encode(),
        b"\xff\xfe" + filler.encode(),  # not JSON, not UTF-8
        json.dumps({"output": filler, "inputs": [{"id": filler, "value": 1}]}).encode(),
    ]
    for body in bodies:
        resp = httpx.post(
            f"{server}{path}",
            content=body,
            headers={"content-type": "application/json"},
            timeout=30,
        )
        assert 400 <= resp.status_code < 500, (path, resp.status_code, resp.text[:300])
        _json_error(resp.status_code, dict(resp.headers), resp.content)
        assert MARKER not in resp.text and len(resp.content) < 8192, (path, resp.text[:300])


def _barrage(server: str, path: str, n: int, size: int) -> tuple[list[int], int]:
    """``n`` clients declare ``size``-byte bodies to ``path`` at once and send half; then
    each finishes. Returns the statuses and how many were held at once."""
    socks = [connect(server) for _ in range(n)]
    answers = {}
    try:
        held = []
        for i, sock in enumerate(socks):
            sock.sendall(head(path, size))
            if send_body(sock, b" " * (size // 2)):
                held.append(i)
        # those over the buffer budget are answered at once (429) without their bodies;
        # the pause only lets those answers arrive (a slow machine may show fewer held)
        time.sleep(0.5)
        for i in list(held):
            socks[i].setblocking(False)
            try:
                peeked = socks[i].recv(1, 2)  # MSG_PEEK
            except BlockingIOError:
                peeked = b""
            finally:
                socks[i].setblocking(True)
            if peeked:
                held.remove(i)
        at_once = len(held)
        for i in held:
            send_body(socks[i], b" " * (size - size // 2))
        for i, sock in enumerate(socks):
            answers[i] = read_answer(sock)
    finally:
        for sock in socks:
            sock.close()
    for answer in answers.values():
        if answer.status == 429:
            assert int(answer.headers["retry-after"]) >= 1
            # the buffer budget, or (planner) the cap on expensive requests
            assert (
                b"MOEDASH_MAX_BUFFERED_BODY_BYTES" in answer.body
                or b"MOEDASH_MAX_EXPENSIVE_REQUESTS" in answer.body
            ), answer.body
        if answer.status:
            _json_error(answer.status, answer.headers, answer.body)
    return [a.status for a in answers.values()], at_once


def test_many_bodies_at_once_stay_within_the_memory_budget(server: str) -> None:
    pid = server_pid(server)
    start = memory_kib(pid)["VmRSS"]
    statuses: list[int] = []
    for _ in range(3):
        for path, size in ((DASH, PAGE_LIMIT - 1024), ("/api/v1/planner/plan", JSON_LIMIT)):
            got, at_once = _barrage(server, path, 40, size)
            statuses += got
            # never more bodies held than the budget has room for
            assert at_once * size <= BUFFER_BUDGET + size, (path, at_once)
    assert 429 in statuses  # 40 x 2 MiB to the Dash route is over the 16 MiB budget
    assert all(0 < s < 500 for s in statuses), sorted(set(statuses))
    peak = memory_kib(pid)["VmHWM"]
    assert peak - start <= RSS_BUDGET_KIB, (start, peak)
    # and the server still answers
    assert httpx.get(f"{server}/api/v1/health", timeout=10).status_code == 200
