"""Bounded planner work: the budget stops a search and says so; a served app keeps
answering health checks while the largest allowed plan runs (real ``moedash serve``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from analysis.planner import GPUS, MODELS, Budget, SearchOptions, Workload, search_heterogeneous
from db.store import Store
from moedash.app import create_app
from moedash.settings import Settings
from tests.api.test_api_planner import URL
from tests.factories.servers import running_server


@pytest.fixture
def client(db_url: str, store: Store) -> Iterator[TestClient]:
    app = create_app(Settings(database_url=db_url, enable_dashboard=False), store=store)
    with TestClient(app) as c:
        yield c


# ------------------------------------------------------------------ bounded work, served
LARGEST = {"model": "kimi_k3", "gpus": ["GB300", "B200", "B300", "H200"], "mode": "heterogeneous"}


def test_health_answers_while_a_plan_at_the_cap_runs(tmp_path: Path) -> None:
    """A real `moedash serve`: the largest allowed plan runs in the thread pool while
    /api/v1/health keeps answering; the plan itself answers within its budget. (One
    served database is enough: the planner reads no store rows here.)"""
    db_url = f"duckdb:///{tmp_path / 'plan.duckdb'}"
    result: dict[str, object] = {}
    with running_server(db_url) as base:

        def plan() -> None:
            resp = httpx.post(f"{base}{URL}/plan", json={**LARGEST, "top": 3}, timeout=120)
            result["status"] = resp.status_code
            result["body"] = resp.json()

        worker = threading.Thread(target=plan)
        worker.start()
        time.sleep(0.5)  # the plan is under way
        answered_while_running = 0
        for _ in range(5):
            health = httpx.get(f"{base}/api/v1/health", timeout=5)
            assert health.status_code == 200
            answered_while_running += worker.is_alive()
            time.sleep(0.2)
        worker.join(timeout=120)
    assert answered_while_running >= 3, "the plan finished before health was checked"
    assert result["status"] == 200
    body = result["body"]
    # an answer: the best plan, or (no plan meets the pipeline constraints on these
    # GPUs) the plans that fit listed apart with the binding reason
    assert isinstance(body, dict) and (body["best"] is not None or body["n_broken_plans"] > 0)
    assert body["evaluations"] <= body["limits"]["max_evaluations"] + 1


def test_truncated_search_answers_with_the_best_so_far(client: TestClient) -> None:
    body = client.post(f"{URL}/plan", json={**LARGEST, "top": 3}).json()
    assert body["evaluations"] <= body["limits"]["max_evaluations"] + 1
    if body["truncated"]:
        assert body["best"] is not None or body["n_broken_plans"] > 0
        assert body["truncated_reason"]
        assert any("work budget" in w for w in body["warnings"])


def test_budget_stops_a_search_and_flags_it() -> None:
    gpus = [GPUS[g] for g in LARGEST["gpus"]]  # type: ignore[union-attr]
    budget = Budget(max_evaluations=500)
    r = search_heterogeneous(
        MODELS["kimi_k3"], Workload(), gpus, options=SearchOptions(), budget=budget
    )
    assert r.truncated and r.evaluations == 501 and budget.reason.startswith("plan evaluations")
    assert any("stopped early" in n for n in r.notes)
    cancelled = Budget(cancelled=lambda: True)
    r2 = search_heterogeneous(MODELS["kimi_k3"], Workload(), gpus, budget=cancelled)
    assert r2.truncated and cancelled.reason == "cancelled" and r2.evaluations == 1
