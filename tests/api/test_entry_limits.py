"""The parse budget (upload bytes parsed at once) and the entry layer's answers through
the ASGI app: sizes refused before reading, multipart and raw bodies spooled to disk."""

from __future__ import annotations

import asyncio

from fastapi.testclient import TestClient

from api.limits import ParseBudget
from tests.factories import EXAMPLE


def test_parse_budget_runs_what_fits_and_serves_in_arrival_order() -> None:
    async def scenario() -> list[str]:
        budget = ParseBudget(100)
        log: list[str] = []
        release = {name: asyncio.Event() for name in ("a", "b", "c", "d")}

        async def parse(name: str, size: int) -> None:
            async with budget.hold(size):
                log.append(f"start {name}")
                await release[name].wait()
            log.append(f"end {name}")

        tasks = [asyncio.create_task(parse(n, s)) for n, s in (("a", 60), ("b", 30), ("c", 50))]
        await asyncio.sleep(0)
        # a and b fit together (90); c (50) waits; d (10) would fit but queues behind c
        tasks.append(asyncio.create_task(parse("d", 10)))
        await asyncio.sleep(0)
        assert budget.in_use == 90
        assert log == ["start a", "start b"]  # d fits but waits behind c: no starvation
        release["a"].set()
        await asyncio.sleep(0.01)
        assert budget.in_use == 30 + 50 + 10  # a's room went to c, then d
        release["b"].set()
        release["c"].set()
        release["d"].set()
        await asyncio.gather(*tasks)
        assert budget.in_use == 0
        return log

    log = asyncio.run(scenario())
    starts = [entry for entry in log if entry.startswith("start")]
    assert starts == ["start a", "start b", "start c", "start d"]
    assert log.index("end a") < log.index("start c")


def test_parse_budget_lets_one_oversized_upload_run_alone() -> None:
    async def scenario() -> int:
        budget = ParseBudget(10)
        async with budget.hold(500):  # larger than the whole budget: runs when alone
            return budget.in_use

    assert asyncio.run(scenario()) == 500


def test_parse_budget_cancelled_waiter_frees_its_place() -> None:
    async def scenario() -> int:
        budget = ParseBudget(10)
        async with budget.hold(10):
            waiter = asyncio.create_task(budget.hold(5).__aenter__())
            await asyncio.sleep(0)
            waiter.cancel()
            await asyncio.gather(waiter, return_exceptions=True)
        return budget.in_use

    assert asyncio.run(scenario()) == 0


def test_declared_oversize_upload_is_413_before_auth(client: TestClient) -> None:
    resp = client.post("/api/v1/runs", content=b"{}", headers={"Content-Length": str(3_000_000)})
    assert resp.status_code == 413
    assert resp.json()["detail"][0]["loc"] == ["body"]


def test_raw_and_multipart_uploads_are_spooled_and_stored(
    client: TestClient, upload_token: str
) -> None:
    auth = {"Authorization": f"Bearer {upload_token}"}
    raw = client.post(
        "/api/v1/runs",
        content=EXAMPLE.read_bytes(),
        params={"trtllm_version": "v1.3.0rc26"},
        headers={**auth, "Content-Type": "application/json"},
    )
    assert raw.status_code == 201, raw.text
    again = client.post(
        "/api/v1/runs",
        files={"file": ("example.json", EXAMPLE.read_bytes(), "application/json")},
        data={"trtllm_version": "v1.3.0rc26"},
        headers=auth,
    )
    assert again.status_code == 200 and again.json()["already_existed"] is True
    whitespace = client.post(
        "/api/v1/runs", content=b" \n" * 1000, headers={**auth, "Content-Type": "text/plain"}
    )
    assert whitespace.status_code == 400 and whitespace.json()["detail"][0]["type"] == "empty"
