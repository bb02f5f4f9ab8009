"""The Overview shows upload file names without the server's directories."""

from __future__ import annotations

import pytest

from dashboard.pages import overview
from db.store import Store
from ingest.records import UploadMeta
from service.filenames import display_filename
from service.frames import DashData
from tests.factories import sweeps
from tests.factories.dashboard import by_testid, text


def test_recent_uploads_show_relative_file_names(store: Store) -> None:
    for i, name in enumerate(
        ["/srv/secret/ci/out/report.json", "C:\\Users\\me\\runs\\win.json", "../../up/rel.json"]
    ):
        sweep = sweeps.make_sweep(5, seed=i, hardware="GB300", world_size=4 + i)
        store.ingest([sweep], f"upload-{i}".encode(), UploadMeta(hardware="GB300", filename=name))
    shown = text(by_testid(overview.layout(DashData(store, version_ttl=0.0)), "recent"))
    for name in ("report.json", "win.json", "rel.json"):
        assert name in shown
    for secret in ("/srv", "secret", "Users", "..", "up/"):
        assert secret not in shown


@pytest.mark.parametrize(
    ("stored", "shown"),
    [
        (None, None),
        (float("nan"), None),
        ("", None),
        ("report.json", "report.json"),
        ("/abs/dir/report.json", "report.json"),
        ("./x/../y.json", "y.json"),
        ("/data/nvidia/glm_5/NVFP4/B300.csv", "glm_5/NVFP4/B300.csv"),
        ("D:\\csv\\kimi_k2\\NVFP4\\GB300.csv", "kimi_k2/NVFP4/GB300.csv"),
        ("/", None),
    ],
)
def test_display_filename(stored: object, shown: str | None) -> None:
    assert display_filename(stored) == shown
