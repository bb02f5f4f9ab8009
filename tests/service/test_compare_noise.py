"""service.compare (GET /api/v1/compare, the Compare page) judges with the noise model of
the slice's history up to the base version, never the head's own runs."""

from __future__ import annotations

from analysis import compare as K
from analysis import noise as N
from db.store import Store
from ingest.records import UploadMeta
from service import compare as S
from service.frames import DashData
from service.scope import Scope
from tests.factories import repeat_sweeps as R


def test_compare_versions_with_the_slices_history(store: Store) -> None:
    t = R.truth(4)
    slow, hit = R.head_run(t, 4, slowdown=1.25, backend="TRTLLM", tokens=(64, 4096))
    for frame in [*R.history_runs(t, 4), slow]:
        raw = f"cmp-noise-{int(frame['run_id'].iat[0])}".encode()
        store.ingest([R.as_sweep(frame)], raw, UploadMeta(hardware=R.HARDWARE))
    scope = Scope(model=R.MODEL, hardware=R.HARDWARE, quant=R.QUANT, world_size=R.WORLD_SIZE)
    ans = S.compare(DashData(store), R.BASE, R.HEAD, scope)
    rows = ans.rows
    assert set(rows[K.NOISE_SOURCE].astype(str)) == {N.BOTH}
    regressed = rows[rows[K.VERDICT].astype(str) == K.REGRESSION]
    assert set(regressed["backend"]) == {"TRTLLM"} and set(regressed["num_tokens"]) == {64, 4096}
    assert len(regressed) == int(hit.sum())
    # the baseline is the runs since the last level change: more than rc27's two
    assert (rows[K.BASELINE_N] > R.BASE_RUNS).mean() > 0.5
