"""Front-end assets taken from the npm registry at install / test-setup time, never at
run time: a plotly.js partial bundle for the dashboard (optional: without it the
dashboard uses the full plotly.js Dash ships) and axe-core for the accessibility tests.

Each asset is pinned to a version and the registry's ``sha512`` integrity of its
tarball; a download that does not match is refused. ``python -m moedash.assets`` (``make
assets``) fetches them: the plotly.js bundle into :data:`VENDOR_DIR` (git-ignored,
served at ``/static/vendor/``), axe-core into :data:`TEST_ASSET_DIR` (inside the
virtualenv: a test tool is never served); ``MOEDASH_NPM_REGISTRY`` names a mirror.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import sys
import tarfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VENDOR_DIR = REPO / "static" / "vendor"
TEST_ASSET_DIR = Path(sys.prefix) / "share" / "moedash-assets"
DEFAULT_REGISTRY = "https://registry.npmjs.org"


@dataclass(frozen=True)
class Asset:
    """One file out of an npm package tarball."""

    package: str
    version: str
    integrity: str  # the registry's dist.integrity of the tarball
    member: str  # path inside the tarball
    filename: str  # name under ``dest``
    dest: Path = VENDOR_DIR

    def tarball_url(self, registry: str | None = None) -> str:
        base = (registry or os.environ.get("MOEDASH_NPM_REGISTRY") or DEFAULT_REGISTRY).rstrip("/")
        return f"{base}/{self.package}/-/{self.package}-{self.version}.tgz"


# The plotly.js partial bundle must be the version plotly.py was built for (plotly 7.1 ->
# plotly.js 4.1.1); the app checks the header before using it (moedash.app). "basic" has
# scatter and bar, the only trace types our figures draw; a "scattergl" trace falls back
# to SVG "scatter" in it (plotly.js coerces an unregistered type to its default).
PLOTLY_BASIC = Asset(
    package="plotly.js-basic-dist-min",
    version="4.1.1",
    integrity="sha512-1oNF8PeQx2hv/y7tqEVWKD3JGwn/MGEMQ8mL9HUwsaqG9FGy/OU5FHUHvzqbqxN4mnwZGI9abTiE775C4kkjMQ==",
    member="package/plotly-basic.min.js",
    filename="plotly-basic.min.js",
)
# Dash's components call ``regeneratorRuntime`` (transpiled async functions), the one
# thing of the @babel/polyfill Dash links that a current browser lacks: with this file
# the page shell links it instead of the whole polyfill (dashboard/shell.py).
REGENERATOR = Asset(
    package="regenerator-runtime",
    version="0.14.1",
    integrity="sha512-dYnhHh0nJoMfnkZs6GmmhFknAGRrLznOu5nc9ML+EJxGvrx6H7teuevqVqCuPcPK//3eDrrjQhehXVx9cnkGdw==",
    member="package/runtime.js",
    filename="regenerator-runtime.js",
)
AXE_CORE = Asset(
    package="axe-core",
    version="4.14.1",
    integrity="sha512-FHfa+lmNjQZfJz1q8wKqIDwC6DExcHt/pkjNQb09a3NPjCKg2rhu5qb2S4r76ASyFNNtuFooJpZe37OgudVGtQ==",
    member="package/axe.min.js",
    filename="axe.min.js",
    dest=TEST_ASSET_DIR,
)
ASSETS: dict[str, Asset] = {
    "plotly-basic": PLOTLY_BASIC,
    "regenerator-runtime": REGENERATOR,
    "axe-core": AXE_CORE,
}


def integrity_of(data: bytes) -> str:
    """``sha512-<base64>``, the form npm's ``dist.integrity`` uses."""
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def fetch(asset: Asset, dest: Path | None = None, timeout_s: float = 60.0) -> Path:
    """``dest / asset.filename`` (``dest`` defaults to ``asset.dest``), downloading and
    checking the tarball unless a file stamped with the same integrity is already there.
    Raises ``ValueError`` when the download's integrity differs from the pin, ``OSError``
    on network errors."""
    dest = dest or asset.dest
    target = dest / asset.filename
    stamp = dest / f"{asset.filename}.integrity"
    if target.is_file() and stamp.is_file() and stamp.read_text().strip() == asset.integrity:
        return target
    with urllib.request.urlopen(asset.tarball_url(), timeout=timeout_s) as response:  # noqa: S310 - https registry URL
        data = response.read()
    got = integrity_of(data)
    if got != asset.integrity:
        raise ValueError(
            f"{asset.package}@{asset.version}: tarball integrity {got} != pinned {asset.integrity}"
        )
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        try:
            member = tar.extractfile(asset.member)
        except KeyError:
            member = None
        if member is None:
            raise ValueError(f"{asset.package}@{asset.version}: no {asset.member} in the tarball")
        body = member.read()
    dest.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(target.suffix + ".part")
    tmp.write_bytes(body)
    tmp.replace(target)  # atomic: a server never reads half a bundle
    stamp.write_text(asset.integrity + "\n")
    return target


def plotly_bundle(static_dir: Path | None, plotlyjs_version: str) -> str | None:
    """The URL (under /static) of the vendored plotly.js partial bundle when it is there
    and built as ``plotlyjs_version`` (the version plotly.py draws for), else None: the
    dashboard then uses the full plotly.js bundled with Dash."""
    if static_dir is None:
        return None
    path = static_dir / "vendor" / PLOTLY_BASIC.filename
    try:
        with path.open("rb") as fh:
            head = fh.read(200).decode("utf-8", "replace")
    except OSError:
        return None
    if f" v{plotlyjs_version}\n" not in head:
        return None
    return f"/static/vendor/{PLOTLY_BASIC.filename}?v={plotlyjs_version}"


def vendored_url(static_dir: Path | None, asset: Asset) -> str | None:
    """``/static/vendor/<file>?v=<version>`` when ``asset`` was fetched into
    ``static_dir/vendor`` with its pinned integrity, else None."""
    if static_dir is None:
        return None
    vendor = static_dir / "vendor"
    stamp = vendor / f"{asset.filename}.integrity"
    try:
        pinned = stamp.read_text().strip() == asset.integrity
    except OSError:
        return None
    if not pinned or not (vendor / asset.filename).is_file():
        return None
    return f"/static/vendor/{asset.filename}?v={asset.version}"


def main(argv: list[str] | None = None) -> int:
    """Fetch the named assets (default: all); exit 1 naming the first that failed."""
    names = (argv if argv is not None else sys.argv[1:]) or list(ASSETS)
    for name in names:
        asset = ASSETS.get(name)
        if asset is None:
            print(f"unknown asset {name!r}; known: {', '.join(ASSETS)}", file=sys.stderr)
            return 2
        try:
            path = fetch(asset)
        except (OSError, ValueError) as exc:
            print(f"could not fetch {asset.package}@{asset.version}: {exc}", file=sys.stderr)
            return 1
        print(f"{asset.package}@{asset.version} -> {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
