"""Bearer-token checks as FastAPI dependencies.

Writes need a token carrying the right scope (``upload`` or ``admin``; admin implies
every scope). Reads are open unless ``ApiConfig.read_requires_token``.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Any

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from api.config import ApiConfig
from db.store import Store
from db.tokens import TokenInfo

_bearer = HTTPBearer(auto_error=False, description="moedash API token (mdt_…)")


def get_store(request: Request) -> Store:
    store: Store = request.app.state.store
    return store


def get_config(request: Request) -> ApiConfig:
    config: ApiConfig = request.app.state.api_config
    return config


def _unauthorized(msg: str) -> HTTPException:
    return HTTPException(
        status_code=401,
        detail=[{"loc": ["header", "Authorization"], "msg": msg, "type": "unauthorized"}],
        headers={"WWW-Authenticate": "Bearer"},
    )


def _token(creds: HTTPAuthorizationCredentials | None, store: Store) -> TokenInfo:
    if creds is None:
        raise _unauthorized("a bearer token is required (Authorization: Bearer mdt_…)")
    info = store.tokens.verify_token(creds.credentials)
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
    config: ApiConfig = Depends(get_config),
) -> None:
    """Dependency for reads: open by default, a valid token when reads are closed."""
    if config.read_requires_token:
        _token(creds, store)


class DashboardGate:
    """ASGI guard for the dashboard when reads are closed.

    Browsers cannot send bearer headers by themselves, so the dashboard also accepts
    HTTP Basic credentials whose password is an API token (any user name); a missing
    or invalid token gets 401 with ``WWW-Authenticate: Basic`` so the browser asks.
    """

    def __init__(self, app: Any, store: Store) -> None:
        self.app = app
        self.store = store

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or self._authorised(dict(scope.get("headers") or [])):
            await self.app(scope, receive, send)
            return
        body = (
            b'{"detail":[{"loc":["header","Authorization"],'
            b'"msg":"reads need a token (MOEDASH_READ_REQUIRES_TOKEN)","type":"unauthorized"}]}'
        )
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"www-authenticate", b'Basic realm="moedash", charset="UTF-8"'),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    def _authorised(self, headers: dict[bytes, bytes]) -> bool:
        value = headers.get(b"authorization", b"").decode("latin-1")
        scheme, _, credential = value.partition(" ")
        secret = ""
        if scheme.lower() == "bearer":
            secret = credential.strip()
        elif scheme.lower() == "basic":
            try:
                decoded = base64.b64decode(credential.strip(), validate=True).decode("utf-8")
            except (binascii.Error, UnicodeDecodeError):
                return False
            secret = decoded.partition(":")[2]
        return bool(secret) and self.store.tokens.verify_token(secret) is not None
