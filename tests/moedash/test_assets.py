"""moedash.assets: a pinned npm tarball is downloaded over HTTP, checked against its
sha512 integrity, and the one file extracted; a mismatch is refused. A local HTTP server
stands in for the registry (``MOEDASH_NPM_REGISTRY``)."""

from __future__ import annotations

import functools
import http.server
import io
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from moedash import assets
from moedash.assets import Asset, fetch, integrity_of

BODY = b"/* fake axe */ window.axe = {};\n"


def _tarball(member: str, body: bytes) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo(member)
        info.size = len(body)
        tar.addfile(info, io.BytesIO(body))
    return buf.getvalue()


@pytest.fixture
def registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A directory served over HTTP on 127.0.0.1, named by MOEDASH_NPM_REGISTRY."""
    root = tmp_path / "registry"
    root.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a: None  # type: ignore[method-assign,assignment]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("MOEDASH_NPM_REGISTRY", f"http://127.0.0.1:{server.server_address[1]}/")
    try:
        yield root
    finally:
        server.shutdown()
        server.server_close()


def _publish(root: Path, package: str, version: str, data: bytes) -> None:
    folder = root / package / "-"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{package}-{version}.tgz").write_bytes(data)


def test_fetch_checks_integrity_extracts_and_caches(registry: Path, tmp_path: Path) -> None:
    data = _tarball("package/axe.min.js", BODY)
    asset = Asset("fake-axe", "1.0.0", integrity_of(data), "package/axe.min.js", "axe.min.js")
    _publish(registry, "fake-axe", "1.0.0", data)
    dest = tmp_path / "out"
    path = fetch(asset, dest)
    assert path == dest / "axe.min.js" and path.read_bytes() == BODY
    # cached: the registry may disappear, the stamped file is used
    (registry / "fake-axe" / "-" / "fake-axe-1.0.0.tgz").unlink()
    assert fetch(asset, dest).read_bytes() == BODY
    assert not list(dest.glob("*.part"))


def test_fetch_refuses_a_tarball_that_does_not_match_the_pin(
    registry: Path, tmp_path: Path
) -> None:
    pinned = integrity_of(_tarball("package/axe.min.js", BODY))
    _publish(registry, "fake-axe", "1.0.0", _tarball("package/axe.min.js", b"evil()"))
    asset = Asset("fake-axe", "1.0.0", pinned, "package/axe.min.js", "axe.min.js")
    with pytest.raises(ValueError, match="integrity"):
        fetch(asset, tmp_path / "out")
    assert not (tmp_path / "out" / "axe.min.js").exists()


def test_fetch_names_a_missing_member_and_a_missing_package(registry: Path, tmp_path: Path) -> None:
    data = _tarball("package/other.js", BODY)
    _publish(registry, "fake-axe", "1.0.0", data)
    asset = Asset("fake-axe", "1.0.0", integrity_of(data), "package/axe.min.js", "axe.min.js")
    with pytest.raises(ValueError, match="no package/axe.min.js"):
        fetch(asset, tmp_path / "out")
    gone = Asset("nope", "9.9.9", integrity_of(data), "package/x.js", "x.js")
    with pytest.raises(OSError):
        fetch(gone, tmp_path / "out")


def test_cli_refuses_an_unknown_asset(capsys: pytest.CaptureFixture[str]) -> None:
    assert assets.main(["no-such-asset"]) == 2
    err = capsys.readouterr().err
    assert "unknown asset 'no-such-asset'" in err and "plotly-basic" in err


def test_pins_are_sha512_integrities() -> None:
    for asset in assets.ASSETS.values():
        assert asset.integrity.startswith("sha512-") and len(asset.integrity) == 95
        assert asset.tarball_url("https://r.example").startswith(
            f"https://r.example/{asset.package}/-/{asset.package}-{asset.version}.tgz"
        )
