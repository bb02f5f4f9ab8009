"""Token checks as FastAPI dependencies, and the dashboard gate.

Writes need a token carrying the right scope (``upload`` or ``admin``; admin implies
every scope). Reads are open unless ``ApiConfig.read_requires_token``. A token is taken
as ``Authorization: Bearer <token>`` or as the password of HTTP Basic (what a browser
holds for the closed dashboard). Failed authentications are rate-limited per client
address and credential prefix (429 with ``Retry-After``; a valid token is never held up
by others' failures); a used token gets ``last_used_at`` (throttled).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from typing import Any

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.concurrency import run_in_threadpool

from api.config import ApiConfig
from api.limits import AuthFailureLimiter
from db.store import Store
from db.tokens import TokenInfo

_bearer = HTTPBearer(auto_error=False, description="moedash API token (mdt_…)")
# Reads name their own scheme so the OpenAPI document can say the token is optional
# there (api.schemas.document): it is needed only when reads are closed.
READ_SCHEME = "ReadToken"
_read_bearer = HTTPBearer(
    auto_error=False,
    scheme_name=READ_SCHEME,
    description="moedash API token (mdt_…), needed only when MOEDASH_READ_REQUIRES_TOKEN is set",
)


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
        # Basic too: a browser then asks for it (the dashboard's credentials, /docs)
        headers={"WWW-Authenticate": 'Bearer, Basic realm="moedash", charset="UTF-8"'},
    )


def presented_secret(authorization: str) -> str | None:
    """The token in an ``Authorization`` header value: a Bearer credential, or the
    password of HTTP Basic (any user name; what a browser holds for the dashboard).
    None when there is no credential or it cannot be decoded."""
    scheme, _, credential = authorization.partition(" ")
    if scheme.lower() == "bearer":
        return credential.strip() or None
    if scheme.lower() == "basic":
        try:
            decoded = base64.b64decode(credential.strip(), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return None
        return decoded.partition(":")[2] or None
    return None


def client_address(scope_or_request: Request | Any) -> str:
    """The client's IP address as the server saw it (``"unknown"`` without one)."""
    client = (
        scope_or_request.client
        if isinstance(scope_or_request, Request)
        else scope_or_request.get("client")
    )
    return str(client[0]) if client else "unknown"


def _too_many(retry_after: int) -> HTTPException:
    return HTTPException(
        status_code=429,
        detail=[
            {
                "loc": ["header", "Authorization"],
                "msg": f"too many failed authentications with this token from this address; "
                f"retry after "
                f"{retry_after} s",
                "type": "too_many_failures",
            }
        ],
        headers={"Retry-After": str(retry_after)},
    )


def authenticate(
    authorization: str, client: str, store: Store, limiter: AuthFailureLimiter
) -> TokenInfo:
    """The active token presented in ``authorization`` (Bearer, or Basic password).

    A missing (or undecodable) credential gets 401; an unknown or revoked token gets 401
    and counts as a failure of (client address, credential prefix). Over that key's
    limit a credential gets 429 (``Retry-After``) before it is looked up, unless this
    process verified it recently: others' failures never lock a valid token out. A
    valid token has its ``last_used_at`` recorded (at most once a minute)."""
    secret = presented_secret(authorization)
    if secret is not None:
        key = limiter.key(client, secret)
        retry = limiter.retry_after(key)
        if retry is not None and not limiter.known_valid(secret):
            raise _too_many(retry)
    if secret is None:
        # no credential is not a guess (a browser's first request before it asks): not
        # counted, so opening the closed dashboard never locks anyone out
        raise _unauthorized(
            "a token is required (Authorization: Bearer mdt_…, or HTTP Basic with the "
            "token as password)"
        )
    info = store.tokens.verify_token(secret)
    if info is None:
        limiter.record_failure(key)
        raise _unauthorized("the token is unknown or revoked")
    limiter.remember_valid(secret)
    store.tokens.record_use(info.token_id)
    return info


def _token(request: Request, store: Store) -> TokenInfo:
    limiter: AuthFailureLimiter = request.app.state.auth_limiter
    return authenticate(
        request.headers.get("authorization", ""), client_address(request), store, limiter
    )


def require_scope(scope: str) -> Callable[..., TokenInfo]:
    """Dependency: a valid token with ``scope`` (401 without a valid token, 403 without
    the scope)."""

    def check(
        request: Request,
        _creds: HTTPAuthorizationCredentials | None = Depends(_bearer),  # for OpenAPI
        store: Store = Depends(get_store),
    ) -> TokenInfo:
        info = _token(request, store)
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
    request: Request,
    _creds: HTTPAuthorizationCredentials | None = Depends(_read_bearer),  # for OpenAPI
    store: Store = Depends(get_store),
    config: ApiConfig = Depends(get_config),
) -> None:
    """Dependency for reads: open by default, a valid token (Bearer or Basic) when
    reads are closed."""
    if config.read_requires_token:
        _token(request, store)


class DashboardGate:
    """ASGI guard for the dashboard when reads are closed.

    Browsers cannot send bearer headers by themselves, so the dashboard also accepts
    HTTP Basic credentials whose password is an API token (any user name); a missing
    or invalid token gets 401 with ``WWW-Authenticate: Basic`` so the browser asks, and
    a client over its failure limit 429. Token checks run in a worker thread: a slow
    database must not stall the event loop.
    """

    def __init__(self, app: Any, store: Store, limiter: AuthFailureLimiter) -> None:
        self.app = app
        self.store = store
        self.limiter = limiter

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        value = headers.get(b"authorization", b"").decode("latin-1")
        try:
            await run_in_threadpool(
                authenticate, value, client_address(scope), self.store, self.limiter
            )
        except HTTPException as exc:
            await self._refuse(send, exc)
            return
        await self.app(scope, receive, send)

    async def _refuse(self, send: Any, exc: HTTPException) -> None:
        body = json.dumps({"detail": exc.detail}).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ]
        if exc.status_code == 401:
            headers.append((b"www-authenticate", b'Basic realm="moedash", charset="UTF-8"'))
        for key, val in (exc.headers or {}).items():
            if key.lower() == "retry-after":
                headers.append((b"retry-after", val.encode()))
        await send({"type": "http.response.start", "status": exc.status_code, "headers": headers})
        await send({"type": "http.response.body", "body": body})
