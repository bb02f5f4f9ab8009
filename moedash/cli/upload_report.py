"""What ``moedash upload`` reports: per-file results, the regressions the server found,
errors -- as tables and stderr lines, or as one JSON document on stdout (``--json``).

The JSON document (one object, whatever the outcome, also for usage errors and an
interrupt)::

    {"ok": bool, "exit_code": int,
     "files": [{"file", "status", "http_status", "run_ids", "already_existed",
                "same_measurements_other_bytes", "upload_id", "sha256", "stored_upload",
                "sighting", "n_candidates", "regressions", "error", "attempts"}],
     "run_ids": [...], "already_existed": bool, "regressions": [...],
     "errors": [{"file", "message", "http_status", "detail"}]}

``status`` is ``stored``, ``already existed``, ``same measurements`` or ``failed``;
``already_existed`` at the top is true when every file was stored before; each
regression carries the ``file`` it came from.
"""

from __future__ import annotations

import json
from typing import Any

from moedash.cli.console import Output
from moedash.cli.options import OK, REGRESSION


def _state(body: dict[str, Any]) -> str:
    if body.get("same_measurements_other_bytes"):
        return "same measurements"
    return "already existed" if body.get("already_existed") else "stored"


def _pct(value: Any) -> str:
    return "-" if value is None else f"{float(value):+.1f}"


def _ms(value: Any) -> str:
    return "-" if value is None else f"{float(value):.4g}"


class Report:
    """Collects one ``upload`` invocation's outcome and prints it at the end."""

    def __init__(self, ui: Output, *, json_output: bool) -> None:
        self.ui = ui
        self.json_output = json_output
        self.files: list[dict[str, Any]] = []
        self.errors: list[dict[str, Any]] = []
        self.usage_errors: list[str] = []
        self.failures = 0

    # -- what happened -------------------------------------------------------------
    def error(self, text: str) -> None:
        """A usage problem found while checking the command line (metadata …)."""
        self.usage(text)

    def usage(self, text: str) -> None:
        self.usage_errors.append(text)
        self.errors.append({"file": None, "message": text, "http_status": None, "detail": []})
        self.ui.error(text)

    def failed(
        self,
        name: str,
        message: str,
        status: int | None,
        detail: list[dict[str, Any]],
        attempts: int,
    ) -> None:
        self.failures += 1
        self.ui.error(f"{name}: {message}")
        self.errors.append(
            {"file": name, "message": message, "http_status": status, "detail": detail}
        )
        self.files.append(
            {
                "file": name,
                "status": "failed",
                "http_status": status,
                "run_ids": [],
                "already_existed": False,
                "same_measurements_other_bytes": False,
                "regressions": [],
                "inconclusive": [],
                "error": message,
                "attempts": attempts,
            }
        )

    def answered(self, name: str, body: dict[str, Any]) -> None:
        regressions = [{"file": name, **r} for r in body.get("regressions") or []]
        inconclusive = [{"file": name, **r} for r in body.get("inconclusive") or []]
        run_ids = [int(r["run_id"]) for r in body.get("runs", [])]
        entry = {
            "file": name,
            "status": _state(body),
            "http_status": body.get("http_status"),
            "run_ids": run_ids,
            "already_existed": bool(body.get("already_existed")),
            "same_measurements_other_bytes": bool(body.get("same_measurements_other_bytes")),
            "upload_id": body.get("upload_id"),
            "sha256": body.get("sha256"),
            "stored_upload": body.get("stored_upload"),
            "sighting": body.get("sighting"),
            "differing_fields": body.get("differing_fields") or [],
            "n_candidates": body.get("n_candidates"),
            "regressions": regressions,
            "inconclusive": inconclusive,
            "error": None,
            "attempts": None,
        }
        self.files.append(entry)
        for problem in body.get("errors") or []:  # stored, but a check failed on the server
            self.errors.append(
                {"file": name, "message": str(problem), "http_status": None, "detail": []}
            )
            self.ui.error(f"{name}: {problem}")
        ids = ",".join(map(str, run_ids)) or "-"
        found = f", {len(regressions)} regression(s)" if regressions else ""
        if inconclusive:
            found += f", {len(inconclusive)} slower inside the noise band"
        self.ui.note(f"{name}: {entry['status']}, runs {ids}{found}")

    def interrupted(self) -> None:
        self.errors.append(
            {"file": None, "message": "interrupted", "http_status": None, "detail": []}
        )
        self.ui.error("interrupted")

    # -- the end -------------------------------------------------------------------
    @property
    def regressions(self) -> list[dict[str, Any]]:
        return [r for f in self.files for r in f["regressions"]]

    @property
    def inconclusive(self) -> list[dict[str, Any]]:
        return [r for f in self.files for r in f.get("inconclusive", [])]

    def finish(
        self, code: int, *, fail_on_regression: bool, fail_on_inconclusive: bool = False
    ) -> int:
        """Print the result (table or JSON) and return the exit code: ``code``, or 3
        when it is 0 and ``fail_on_regression`` is set and a conclusive regression was
        found, or ``fail_on_inconclusive`` is set and any slower row was (conclusive or
        inside the noise band)."""
        regressions, maybe = self.regressions, self.inconclusive
        strict = fail_on_inconclusive and (regressions or maybe)
        if code == OK and ((fail_on_regression and regressions) or strict):
            code = REGRESSION
        if self.json_output:
            if regressions:
                self._regression_table(regressions, stderr=True)
            if maybe:
                self._regression_table(maybe, stderr=True, inconclusive=True)
            self.ui.out.file.write(json.dumps(self.document(code), default=str) + "\n")
            self.ui.out.file.flush()
            return code
        if self.files:
            rows = [
                (
                    f["file"],
                    "FAILED" if f["status"] == "failed" else f["status"],
                    ",".join(map(str, f["run_ids"])) or "-",
                    "-" if f.get("n_candidates") is None else str(f["n_candidates"]),
                )
                for f in self.files
            ]
            self.ui.table(("file", "result", "run ids", "candidates"), rows)
        if regressions:
            self._regression_table(regressions, stderr=False)
        if maybe:
            self._regression_table(maybe, stderr=False, inconclusive=True)
        return code

    def document(self, code: int) -> dict[str, Any]:
        stored = [f for f in self.files if f["status"] != "failed"]
        return {
            "ok": code == OK,
            "exit_code": code,
            "files": self.files,
            "run_ids": [i for f in self.files for i in f["run_ids"]],
            "already_existed": bool(stored)
            and len(stored) == len(self.files)
            and all(f["already_existed"] for f in stored),
            "regressions": self.regressions,
            "inconclusive": self.inconclusive,
            "errors": self.errors,
        }

    def _regression_table(
        self, regressions: list[dict[str, Any]], *, stderr: bool, inconclusive: bool = False
    ) -> None:
        header = (
            "file",
            "run",
            "slice",
            "tokens",
            "phase",
            "config",
            "versions",
            "base ms",
            "head ms",
            "change %",
            "noise %",
            "noise from",
        )
        rows = [
            (
                r.get("file"),
                r.get("run_id"),
                f"{r.get('model')} {r.get('hardware')} {r.get('quant')} ws{r.get('world_size')}",
                r.get("num_tokens"),
                r.get("phase") or "-",
                r.get("config") or "-",
                f"{r.get('base_version')} -> {r.get('head_version')}",
                _ms(r.get("base_ms")),
                _ms(r.get("head_ms")),
                _pct(r.get("change_pct")),
                "-" if r.get("noise_pct") is None else f"{float(r['noise_pct']):.1f}",
                r.get("noise_source") or "-",
            )
            for r in regressions
        ]
        title = f"{len(regressions)} regression(s) against the latest earlier version"
        if inconclusive:
            title = (
                f"{len(regressions)} slower row(s) inside the noise band (inconclusive: "
                "a re-run could give them)"
            )
        if stderr:
            saved, self.ui.out = self.ui.out, self.ui.err
            try:
                self.ui.note(title)
                self.ui.table(header, rows)
            finally:
                self.ui.out = saved
        else:
            self.ui.line(title)
            self.ui.table(header, rows)
