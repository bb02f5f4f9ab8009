"""Commands that run or look after a deployment: ``serve``, ``migrate``, ``token …``,
``import-serving`` and ``outcomes``."""

from __future__ import annotations

import enum
import gc
import json
import threading
from pathlib import Path
from typing import Annotated

import typer

from db.errors import Conflict, NotFound, StoreError
from db.store import open_store
from moedash.cli.console import Output
from moedash.cli.options import FAILED, OK, Db, settings_for
from moedash.published import load_published
from moedash.settings import Settings


def serve(
    db: Db = None,
    host: Annotated[str | None, typer.Option(help="Address to listen on.")] = None,
    port: Annotated[int | None, typer.Option(help="Port to listen on.")] = None,
    no_demo: Annotated[
        bool,
        typer.Option(
            "--no-demo", help="Do not load the published snapshot into an empty database."
        ),
    ] = False,
) -> int:
    """Serve the API and the dashboard (an empty database gets the published snapshot:
    NVIDIA's bench_moe sweeps and the InferenceX / srt-slurm serving points)."""
    import uvicorn

    from moedash.app import create_app, make_parse_pool

    ui = Output()
    settings = settings_for(db)
    if host:
        settings.host = host
    if port:
        settings.port = port
    store = open_store(settings.database_url, timeouts=settings.db_timeouts())
    try:
        if settings.demo_on_empty and not no_demo and store.table_counts()["runs"] == 0:
            ui.line("empty database: loading the published snapshot (NVIDIA) …")
            loaded = load_published(store)
            ui.line(
                f"loaded {loaded.n_candidates} published candidates in {loaded.n_runs} runs, "
                f"{loaded.n_workloads} serving workloads"
            )
        pool = make_parse_pool(settings)
        if pool is not None:  # workers import while uvicorn starts; a big upload stops them
            threading.Thread(target=pool.warm, daemon=True, name="parse-pool-warm").start()
        app = create_app(settings, store=store, parse_pool=pool)
        ui.line(f"moedash serving {settings.database_url}")
        ui.line(f"open http://{settings.host}:{settings.port}/  (API docs: /docs)")
        # what start-up built (modules, the app, the schema) lives as long as the
        # process: frozen, the cyclic GC no longer walks it on every full collection
        # while requests run (~1-2 ms of CPU per upload under load)
        gc.collect()
        gc.freeze()
        try:
            uvicorn.run(
                app,
                host=settings.host,
                port=settings.port,
                log_level="warning",
                proxy_headers=True,
                forwarded_allow_ips=settings.forwarded_allow_ips,
            )
        finally:
            if pool is not None:
                pool.close()
    finally:
        store.close()
    return OK


def migrate(db: Db = None) -> int:
    """Create or upgrade the database schema, then exit."""
    store = open_store(settings_for(db).database_url, upgrade=False)
    try:
        version = store.upgrade()
    finally:
        store.close()
    Output().line(f"schema at version {version}")
    return OK


class Scope(enum.StrEnum):
    """What a token may do (reads need no scope)."""

    upload = "upload"
    admin = "admin"


token_app = typer.Typer(
    help="Manage API tokens.", no_args_is_help=True, rich_markup_mode="markdown"
)


@token_app.command("create")
def token_create(
    name: Annotated[str, typer.Argument(help="Token name, unique.")],
    scope: Annotated[
        list[Scope] | None,
        typer.Option(help="Scope to grant; repeat for several (default: upload)."),
    ] = None,
    db: Db = None,
) -> int:
    """Create a token and print its secret once (on stdout, nothing else there)."""
    ui = Output()
    store = open_store(settings_for(db).database_url)
    try:
        info, secret = store.tokens.create_token(name, [s.value for s in scope or [Scope.upload]])
    except (ValueError, Conflict) as exc:
        ui.error(str(exc))
        return FAILED
    finally:
        store.close()
    ui.line(secret)
    ui.note(
        f"token {info.name!r} (scopes: {', '.join(sorted(info.scopes))}) created; "
        "the secret above is shown only once"
    )
    return OK


@token_app.command("list")
def token_list(db: Db = None) -> int:
    """List tokens (never their secrets)."""
    store = open_store(settings_for(db).database_url)
    try:
        tokens = store.tokens.list_tokens()
    finally:
        store.close()
    rows = [
        (
            t.token_id,
            t.name,
            ",".join(sorted(t.scopes)),
            t.prefix + "…",
            "active" if t.active else "revoked",
            str(t.created_at)[:19],
        )
        for t in tokens
    ]
    Output().table(("id", "name", "scopes", "prefix", "state", "created"), rows)
    return OK


@token_app.command("revoke")
def token_revoke(
    name: Annotated[str, typer.Argument(help="Token name or id.")], db: Db = None
) -> int:
    """Revoke a token by name or id."""
    ui = Output()
    store = open_store(settings_for(db).database_url)
    try:
        info = store.tokens.revoke_token(name)
    except (ValueError, NotFound) as exc:
        ui.error(str(exc))
        return FAILED
    finally:
        store.close()
    ui.line(f"token {info.name!r} revoked")
    return OK


def _default_serving_dir(settings: Settings) -> Path:
    if settings.shared_data:
        return Path(settings.shared_data)
    return Path("..") / "shared" / "data"


def import_serving(
    dir: Annotated[
        str | None,
        typer.Argument(help="Data root (default: $MOEDASH_SHARED_DATA or ../shared/data)."),
    ] = None,
    db: Db = None,
) -> int:
    """Import InferenceX masters and srt-slurm recipes as serving workloads."""
    import yaml

    from service.crossval_import import import_serving_directory

    ui = Output()
    settings = settings_for(db)
    data_dir = Path(dir) if dir else _default_serving_dir(settings)
    master = data_dir / "inferencex" / "configs" / "nvidia-master.yaml"
    if not master.is_file():
        ui.error(f"{data_dir}: no {master.relative_to(data_dir)} (wrong DIR?)")
        return FAILED
    store = open_store(settings.database_url)
    try:
        result = import_serving_directory(store, data_dir, str(data_dir.resolve()))
    except (ValueError, yaml.YAMLError, StoreError) as exc:
        ui.error(f"{data_dir}: {exc}")
        return FAILED
    finally:
        store.close()
    s = result.stored
    state = "already imported (nothing written)" if s.already_existed else "imported"
    ui.line(f"{data_dir}: {state} as import {s.import_id}")
    ui.table(
        ("what", "count"),
        [
            ("entries", s.n_entries),
            ("points", s.n_points),
            ("recipes resolved", len(result.parsed.recipes)),
            ("recipes unresolved", len(result.parsed.unresolved)),
            ("workloads", s.n_workloads),
            ("  mappable", s.n_mappable),
            ("  unmappable", s.n_unmappable),
            ("  new", s.n_new_workloads),
            ("  existing", s.n_existing_workloads),
            ("  updated", s.n_updated_workloads),
        ],
    )
    return OK


def outcomes(
    file: Annotated[
        str, typer.Argument(help="JSON list of {workload_id, tps_per_user_deployed, …}.")
    ],
    replace: Annotated[
        bool, typer.Option("--replace", help="Overwrite differing stored outcomes.")
    ] = False,
    db: Db = None,
) -> int:
    """Store end-to-end outcomes (deployed vs candidate) from a JSON list."""
    ui = Output()
    path = Path(file)
    try:
        # NaN / Infinity literals are refused here, as the API's JSON parser does.
        records = json.loads(path.read_text(encoding="utf-8"), parse_constant=_no_constant)
    except (OSError, ValueError) as exc:
        ui.error(f"{path}: {exc}")
        return FAILED
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        ui.error(f"{path}: expected a JSON list of outcome objects")
        return FAILED
    from service.crossval_outcomes import add_outcomes

    store = open_store(settings_for(db).database_url)
    try:
        # The API's write path: empty list, NaN/Infinity and Match workloads refused.
        result = add_outcomes(store, records, replace=replace)
    except (Conflict, ValueError, NotFound, StoreError) as exc:  # Conflict: a differing outcome
        ui.error(f"{path}: {exc} (nothing stored)")
        return FAILED
    finally:
        store.close()
    ui.line(
        f"{path}: {result.count('created')} created, {result.count('already existed')} "
        f"already existed, {result.count('replaced')} replaced"
    )
    return OK


def _no_constant(name: str) -> float:
    """json ``parse_constant`` hook: NaN / Infinity / -Infinity are not numbers here."""
    raise ValueError(f"{name} is not allowed: tps values must be finite numbers > 0")
