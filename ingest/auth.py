"""Bearer-token checks as FastAPI dependencies.

Writes need a token carrying the right scope (``upload`` or ``admin``; admin implies
every scope). Reads are open unless ``Settings.read_requires_token``.
"""

from __future__ import annotations

from collections.abc import Callable

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from db.store import Store
from db.tokens import TokenInfo
from ingest.settings import Settings

_bearer = HTTPBearer(auto_error=False, description="moedash API token (mdt_…)")


def get_store(request: Request) -> Store:
    store: Store = request.app.state.store
    return store


def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def _unauthorized(msg: str) -> HTTPException:
    return HTTPException(
        status_code=401,
        detail=[{"loc": ["header", "Authorization"], "msg": msg, "type": "unauthorized"}],
        headers={"WWW-Authenticate": "Bearer"},
    )


def _token(creds: HTTPAuthorizationCredentials | None, store: Store) -> TokenInfo:
    if creds is None:
        raise _unauthorized("a bearer token is required (Authorization: Bearer mdt_…)")
    info = store.verify_token(creds.credentials)
    if info is None:
        raise _unauthorized("the bearer token is unknown or revoked")
    return info


def require_scope(scope: str) -> Callable[..., TokenInfo]:
    """Dependency: a valid token with ``scope`` (401 without a valid token, 403 without
    the scope)."""

    def check(
        creds: HTTPAuthorizationCredentials | None = Depends(_bearer),
        store: Store = Depends(get_store),
    ) -> TokenInfo:
        info = _token(creds, store)
        if not info.allows(scope):
            raise HTTPException(
                status_code=403,
                detail=[
                    {
                        "loc": ["header", "Authorization"],
                        "msg": f"token {info.name!r} lacks the {scope!r} scope",
                        "type": "forbidden",
                    }
                ],
            )
        return info

    return check


def require_read(
    creds: HTTPAuthorizationCredentials | None = Depends(_bearer),
    store: Store = Depends(get_store),
    settings: Settings = Depends(get_settings),
) -> None:
    """Dependency for reads: open by default, a valid token when reads are closed."""
    if settings.read_requires_token:
        _token(creds, store)
