"""API tokens: created and revoked by the CLI, stored as SHA-256 hashes only.

A token secret is ``mdt_`` + 43 URL-safe random characters (256 bits). Only its
SHA-256 hex digest and a short display prefix are stored. Verification hashes the
presented secret, looks the digest up, and compares digests with
``hmac.compare_digest`` so timing does not reveal how much of a guess matched.

:class:`TokenRepository` (``store.tokens``) is the interface; the functions below work
inside a connection it opened. Every database failure raises :class:`StoreError`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Sequence

import sqlalchemy as sa

from db import schema
from db.errors import Conflict, NotFound, UniqueViolation
from db.session import Database

SCOPES: frozenset[str] = frozenset({"upload", "admin"})
_PREFIX = "mdt_"


@dataclasses.dataclass(frozen=True)
class TokenInfo:
    token_id: int
    name: str
    scopes: frozenset[str]
    prefix: str
    created_at: dt.datetime
    revoked_at: dt.datetime | None
    last_used_at: dt.datetime | None

    @property
    def active(self) -> bool:
        return self.revoked_at is None

    def allows(self, scope: str) -> bool:
        """``admin`` implies every scope."""
        return self.active and (scope in self.scopes or "admin" in self.scopes)


def hash_secret(secret: str) -> str:
    # surrogatepass: a secret that is not valid Unicode must fail to match, not crash
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def new_secret() -> str:
    return _PREFIX + secrets.token_urlsafe(32)


def validate_scopes(scopes: list[str] | tuple[str, ...] | frozenset[str]) -> frozenset[str]:
    wanted = frozenset(s.strip().lower() for s in scopes if s.strip())
    unknown = wanted - SCOPES
    if not wanted:
        raise ValueError("scopes: at least one scope is required (upload, admin)")
    if unknown:
        raise ValueError(f"scopes: unknown scope(s) {sorted(unknown)}; known: upload, admin")
    return wanted


def row_to_info(row: sa.Row[tuple[object, ...]]) -> TokenInfo:
    m = row._mapping
    return TokenInfo(
        token_id=int(m["token_id"]),
        name=str(m["name"]),
        scopes=frozenset(str(m["scopes"]).split(",")),
        prefix=str(m["prefix"]),
        created_at=m["created_at"],
        revoked_at=m["revoked_at"],
        last_used_at=m["last_used_at"],
    )


def insert_token(conn: sa.Connection, name: str, scopes: frozenset[str]) -> tuple[int, str]:
    secret = new_secret()
    token_id = conn.execute(
        schema.api_tokens.insert()
        .values(
            name=name,
            scopes=",".join(sorted(scopes)),
            token_hash=hash_secret(secret),
            prefix=secret[:10],
            created_at=dt.datetime.now(dt.UTC),
        )
        .returning(schema.api_tokens.c.token_id)
    ).scalar_one()
    return int(token_id), secret


# built once: verified on every authenticated request
_TOKEN_BY_HASH = sa.select(schema.api_tokens).where(
    schema.api_tokens.c.token_hash == sa.bindparam("digest")
)


def find_by_secret(conn: sa.Connection, secret: str) -> TokenInfo | None:
    digest = hash_secret(secret)
    row = conn.execute(_TOKEN_BY_HASH, {"digest": digest}).first()
    if row is None or not hmac.compare_digest(str(row._mapping["token_hash"]), digest):
        return None
    return row_to_info(row)


class TokenRepository:
    """API tokens: create (secret shown once), list, revoke, verify."""

    def __init__(self, db: Database) -> None:
        self._db = db
        # token_id -> monotonic time of our last last_used_at write (see record_use)
        self._used: dict[int, float] = {}
        self._used_lock = threading.Lock()

    def create_token(self, name: str, scopes: Sequence[str]) -> tuple[TokenInfo, str]:
        """Create a token; returns its info and the secret (shown once, never stored).
        Invalid names/scopes raise ValueError; a name in use raises :class:`Conflict`."""
        wanted = validate_scopes(tuple(scopes))
        name = name.strip()
        if not name or len(name) > 100 or not name.isprintable():
            raise ValueError("name: 1-100 printable characters required")
        try:
            with self._db.write("create_token") as conn:
                token_id, secret = insert_token(conn, name, wanted)
        except UniqueViolation as exc:
            raise Conflict("name", f"a token named {name!r} already exists") from exc
        return self._token(token_id), secret

    def _token(self, token_id: int) -> TokenInfo:
        with self._db.read("token") as conn:
            row = conn.execute(
                sa.select(schema.api_tokens).where(schema.api_tokens.c.token_id == token_id)
            ).first()
        if row is None:
            raise NotFound("token", token_id)
        return row_to_info(row)

    def list_tokens(self) -> list[TokenInfo]:
        """All tokens, revoked ones included, oldest first."""
        with self._db.read("list_tokens") as conn:
            rows = conn.execute(
                sa.select(schema.api_tokens).order_by(schema.api_tokens.c.token_id)
            ).all()
        return [row_to_info(r) for r in rows]

    def revoke_token(self, name_or_id: str) -> TokenInfo:
        """Revoke by name or numeric id; revoking twice is a no-op; an unknown token
        raises :class:`NotFound`."""
        t = schema.api_tokens
        cond = t.c.name == name_or_id
        if name_or_id.isdigit():
            cond = sa.or_(cond, t.c.token_id == int(name_or_id))
        with self._db.write("revoke_token") as conn:
            row = conn.execute(sa.select(t.c.token_id, t.c.revoked_at).where(cond)).first()
            if row is None:
                raise NotFound("token", name_or_id)
            if row[1] is None:
                conn.execute(
                    t.update()
                    .where(t.c.token_id == row[0])
                    .values(revoked_at=dt.datetime.now(dt.UTC))
                )
        return self._token(int(row[0]))

    def verify_token(self, secret: str) -> TokenInfo | None:
        """The active token with this secret, or None (unknown, revoked, empty or longer
        than 200 characters)."""
        if not secret or len(secret) > 200:
            return None
        with self._db.read("verify_token", single=True) as conn:
            info = find_by_secret(conn, secret)
        if info is None or not info.active:
            return None
        return info

    def record_use(self, token_id: int, *, min_interval_s: float = 60.0) -> bool:
        """Set ``last_used_at`` of a token to now, at most once per ``min_interval_s``
        seconds per token, so authenticated reads do not each become a write. Throttled
        twice: in this process (no statement at all within the interval) and in SQL (the
        row is updated only when its stored time is older than the interval, so several
        replicas do not each write it). Returns True when this call wrote the row."""
        now_mono = time.monotonic()
        with self._used_lock:
            last = self._used.get(token_id)
            if last is not None and now_mono - last < min_interval_s:
                return False
        now = dt.datetime.now(dt.UTC)
        t = schema.api_tokens
        stale = sa.or_(
            t.c.last_used_at.is_(None),
            t.c.last_used_at < now - dt.timedelta(seconds=min_interval_s),
        )
        with self._db.write("record_use") as conn:
            result = conn.execute(
                t.update().where(t.c.token_id == token_id, stale).values(last_used_at=now)
            )
        with self._used_lock:  # only after the write held: a failed one is tried again
            self._used[token_id] = now_mono
        return bool(result.rowcount)
