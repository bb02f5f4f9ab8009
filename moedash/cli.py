"""The ``moedash`` command line: serve, migrate, ingest, upload, token, demo.

Exit codes: 0 success, 1 some inputs failed, 2 usage error (argparse).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from db.errors import Conflict, NotFound, StoreError
from db.store import Store, open_store
from ingest.errors import InputError
from ingest.records import UploadMeta
from moedash.settings import Settings


def _settings(args: argparse.Namespace) -> Settings:
    overrides = {}
    if getattr(args, "db", None):
        overrides["database_url"] = args.db
    return Settings(**overrides)


def _add_meta_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("metadata the file lacks")
    g.add_argument("--hardware", help="system label (GB300, B300, H200 …); inferred when possible")
    g.add_argument("--trtllm-version", help="TensorRT-LLM version, e.g. v1.3.0rc26")
    g.add_argument("--trtllm-commit", help="commit, when the report's trtllm_commit is null")
    g.add_argument("--run-date", help="date the sweep ran (YYYY-MM-DD)")
    g.add_argument("--ci-url", help="link to the CI run that produced the file")
    g.add_argument("--notes", help="free text")
    g.add_argument("--dispatch", help="dispatch/routing label (default: from the report)")


def _meta(args: argparse.Namespace, filename: str | None) -> UploadMeta:
    return UploadMeta(
        hardware=args.hardware.upper() if args.hardware else None,
        trtllm_version=args.trtllm_version,
        trtllm_commit=args.trtllm_commit,
        run_date=args.run_date,
        ci_url=args.ci_url,
        notes=args.notes,
        dispatch=args.dispatch,
        filename=filename,
    )


def _progress(i: int, n: int, label: str) -> None:
    if not sys.stderr.isatty():
        return
    width = 30
    done = int(width * i / max(n, 1))
    sys.stderr.write(f"\r[{'#' * done}{'.' * (width - done)}] {i}/{n} {label[:40]:<40}")
    sys.stderr.flush()
    if i == n:
        sys.stderr.write("\n")


# ---------------------------------------------------------------- commands
def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from moedash.app import create_app

    settings = _settings(args)
    if args.host:
        settings.host = args.host
    if args.port:
        settings.port = args.port
    store = open_store(settings.database_url)
    if settings.demo_on_empty and not args.no_demo and store.table_counts()["runs"] == 0:
        print("empty database: loading the synthetic demo dataset …", flush=True)
        n = load_demo(store)
        print(f"loaded {n} synthetic candidates", flush=True)
    app = create_app(settings, store=store)
    print(f"moedash serving {settings.database_url}", flush=True)
    print(f"open http://{settings.host}:{settings.port}/  (API docs: /docs)", flush=True)
    uvicorn.run(app, host=settings.host, port=settings.port, log_level="warning")
    store.close()
    return 0


def cmd_migrate(args: argparse.Namespace) -> int:
    store = open_store(_settings(args).database_url, upgrade=False)
    version = store.upgrade()
    print(f"schema at version {version}")
    store.close()
    return 0


def load_demo(store: Store) -> int:
    """Load the deterministic synthetic demo dataset; returns candidates stored."""
    from ingest.demo.generate import demo_reports, dump_report
    from ingest.detect import parse_upload

    total = 0
    reports = demo_reports()
    for i, (report, dmeta) in enumerate(reports, 1):
        raw = dump_report(report)
        meta = UploadMeta(
            hardware=dmeta.hardware,
            trtllm_version=dmeta.trtllm_version,
            run_date=dmeta.run_date,
            notes=dmeta.notes,
            synthetic=True,
            filename=f"demo-{i:03d}.json",
        )
        result = store.ingest(parse_upload(raw, meta, meta.filename), raw, meta, uploaded_by="demo")
        total += result.n_candidates
        _progress(i, len(reports), meta.filename or "")
    return total


def cmd_demo(args: argparse.Namespace) -> int:
    store = open_store(_settings(args).database_url)
    t0 = time.perf_counter()
    n = load_demo(store)
    print(f"demo dataset: {n} synthetic candidates in {time.perf_counter() - t0:.1f} s")
    store.close()
    return 0


def cmd_ingest(args: argparse.Namespace) -> int:
    from ingest.detect import parse_path

    store = open_store(_settings(args).database_url)
    failures = 0
    rows = []
    for i, name in enumerate(args.files, 1):
        path = Path(name)
        try:
            raw = path.read_bytes()
            meta = _meta(args, str(path))
            result = store.ingest(parse_path(path, meta), raw, meta, uploaded_by="cli")
        except (OSError, InputError, Conflict, StoreError) as exc:
            failures += 1
            print(f"error: {path}: {exc}", file=sys.stderr)
            rows.append((str(path), "FAILED", "-", "-"))
        else:
            state = "exists" if result.already_existed else "stored"
            ids = ",".join(str(r.run_id) for r in result.runs)
            rows.append((str(path), state, ids, f"{result.n_candidates}"))
        _progress(i, len(args.files), str(path))
    _print_table(("file", "result", "run ids", "candidates"), rows)
    store.close()
    return 1 if failures else 0


def _print_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=False)]
    for row in (header, *rows):
        print("  ".join(str(x).ljust(w) for x, w in zip(row, widths, strict=False)))


def cmd_upload(args: argparse.Namespace) -> int:
    from moedash.client import upload_file

    failures = 0
    for name in args.files:
        path = Path(name)
        try:
            body = upload_file(
                path,
                url=args.url,
                token=args.token,
                meta=_meta(args, path.name),
                retries=args.retries,
                timeout=args.timeout,
            )
        except Exception as exc:  # every failure is reported per file, then the exit code
            failures += 1
            print(f"error: {path}: {exc}", file=sys.stderr)
            continue
        state = "already existed" if body["already_existed"] else "stored"
        ids = ", ".join(str(r["run_id"]) for r in body["runs"])
        print(f"{path}: {state} as run {ids} ({body['n_candidates']} candidates)")
    return 1 if failures else 0


def cmd_token(args: argparse.Namespace) -> int:
    store = open_store(_settings(args).database_url)
    try:
        if args.token_cmd == "create":
            info, secret = store.create_token(args.name, args.scope or ["upload"])
            print(secret)
            print(
                f"token {info.name!r} (scopes: {', '.join(sorted(info.scopes))}) created; "
                "the secret above is shown only once",
                file=sys.stderr,
            )
        elif args.token_cmd == "list":
            rows = [
                (
                    str(t.token_id),
                    t.name,
                    ",".join(sorted(t.scopes)),
                    t.prefix + "…",
                    "revoked" if not t.active else "active",
                    str(t.created_at)[:19],
                )
                for t in store.list_tokens()
            ]
            _print_table(("id", "name", "scopes", "prefix", "state", "created"), rows)
        else:
            info = store.revoke_token(args.name)
            print(f"token {info.name!r} revoked")
    except (ValueError, Conflict, NotFound) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        store.close()
    return 0


def _default_serving_dir(settings: Settings) -> Path:
    if settings.shared_data:
        return Path(settings.shared_data)
    return Path("..") / "shared" / "data"


def cmd_import_serving(args: argparse.Namespace) -> int:
    from api.routes.crossval import import_serving_directory

    settings = _settings(args)
    data_dir = Path(args.dir) if args.dir else _default_serving_dir(settings)
    master = data_dir / "inferencex" / "configs" / "nvidia-master.yaml"
    if not master.is_file():
        print(f"error: {data_dir}: no {master.relative_to(data_dir)} (wrong DIR?)", file=sys.stderr)
        return 1
    store = open_store(settings.database_url)
    try:
        result = import_serving_directory(store, data_dir, str(data_dir.resolve()))
    except (ValueError, StoreError) as exc:
        print(f"error: {data_dir}: {exc}", file=sys.stderr)
        return 1
    finally:
        store.close()
    s = result.stored
    state = "already imported (nothing written)" if s.already_existed else "imported"
    print(f"{data_dir}: {state} as import {s.import_id}")
    _print_table(
        ("what", "count"),
        [
            ("entries", str(s.n_entries)),
            ("points", str(s.n_points)),
            ("recipes resolved", str(len(result.parsed.recipes))),
            ("recipes unresolved", str(len(result.parsed.unresolved))),
            ("workloads", str(s.n_workloads)),
            ("  mappable", str(s.n_mappable)),
            ("  unmappable", str(s.n_unmappable)),
            ("  new", str(s.n_new_workloads)),
            ("  existing", str(s.n_existing_workloads)),
            ("  updated", str(s.n_updated_workloads)),
        ],
    )
    return 0


def cmd_outcomes(args: argparse.Namespace) -> int:
    import json

    from db.crossval_store import OutcomeConflict

    path = Path(args.file)
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"error: {path}: {exc}", file=sys.stderr)
        return 1
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        print(f"error: {path}: expected a JSON list of outcome objects", file=sys.stderr)
        return 1
    store = open_store(_settings(args).database_url)
    try:
        result = store.add_outcomes(records, replace=args.replace)
    except OutcomeConflict as exc:
        print(f"error: {path}: {exc} (nothing stored)", file=sys.stderr)
        return 1
    except (ValueError, NotFound, StoreError) as exc:
        print(f"error: {path}: {exc} (nothing stored)", file=sys.stderr)
        return 1
    finally:
        store.close()
    print(
        f"{path}: {result.count('created')} created, {result.count('already existed')} "
        f"already existed, {result.count('replaced')} replaced"
    )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="moedash", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    def db_arg(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--db", help="database URL (default: $MOEDASH_DATABASE_URL or the DuckDB file)"
        )

    p = sub.add_parser("serve", help="serve the API and dashboard")
    db_arg(p)
    p.add_argument("--host")
    p.add_argument("--port", type=int)
    p.add_argument("--no-demo", action="store_true", help="do not load demo data when empty")
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("migrate", help="create or upgrade the database schema and exit")
    db_arg(p)
    p.set_defaults(func=cmd_migrate)

    p = sub.add_parser("demo", help="load the synthetic demo dataset")
    db_arg(p)
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("ingest", help="parse and store local files")
    db_arg(p)
    p.add_argument("files", nargs="+")
    _add_meta_args(p)
    p.set_defaults(func=cmd_ingest)

    p = sub.add_parser("upload", help="send files to a moedash server (CI client)")
    p.add_argument("files", nargs="+")
    p.add_argument("--url", required=True, help="server base URL, e.g. https://moedash.example")
    p.add_argument("--token", required=True, help="API token with the upload scope")
    p.add_argument("--retries", type=int, default=5, help="retries on network errors/5xx/429")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per request")
    _add_meta_args(p)
    p.set_defaults(func=cmd_upload)

    p = sub.add_parser("token", help="manage API tokens")
    tsub = p.add_subparsers(dest="token_cmd", required=True)
    t = tsub.add_parser("create", help="create a token and print its secret once")
    t.add_argument("name")
    t.add_argument("--scope", action="append", choices=["upload", "admin"])
    db_arg(t)
    t = tsub.add_parser("list", help="list tokens (never the secrets)")
    db_arg(t)
    t = tsub.add_parser("revoke", help="revoke a token by name or id")
    t.add_argument("name")
    db_arg(t)
    p.set_defaults(func=cmd_token)

    p = sub.add_parser(
        "import-serving", help="import InferenceX masters + srt-slurm recipes as workloads"
    )
    p.add_argument(
        "dir", nargs="?", help="data root (default: $MOEDASH_SHARED_DATA or ../shared/data)"
    )
    db_arg(p)
    p.set_defaults(func=cmd_import_serving)

    p = sub.add_parser("outcomes", help="store end-to-end outcomes from a JSON list")
    p.add_argument("file", help="JSON list of {workload_id, tps_per_user_deployed, ...}")
    p.add_argument("--replace", action="store_true", help="overwrite differing stored outcomes")
    db_arg(p)
    p.set_defaults(func=cmd_outcomes)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    raise SystemExit(main())
