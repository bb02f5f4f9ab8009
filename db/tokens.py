"""API tokens: created and revoked by the CLI, stored as SHA-256 hashes only.

A token secret is ``mdt_`` + 43 URL-safe random characters (256 bits). Only its
SHA-256 hex digest and a short display prefix are stored. Verification hashes the
presented secret, looks the digest up, and compares digests with
``hmac.compare_digest`` so timing does not reveal how much of a guess matched.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import hmac
import secrets

import sqlalchemy as sa

from db import schema

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
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


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


def find_by_secret(conn: sa.Connection, secret: str) -> TokenInfo | None:
    digest = hash_secret(secret)
    row = conn.execute(
        sa.select(schema.api_tokens).where(schema.api_tokens.c.token_hash == digest)
    ).first()
    if row is None or not hmac.compare_digest(str(row._mapping["token_hash"]), digest):
        return None
    return row_to_info(row)
