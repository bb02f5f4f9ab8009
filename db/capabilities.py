"""What ran on which hardware: successful measurements counted per hardware x world size x
quant x backend x comm, aggregated in the database.

Contract
- ``measured`` reads the ``measurements`` table (db.stats owns its rows; this module only
  reads it) and returns ``analysis.capabilities.CAPABILITY_COLUMNS``: hardware (upper
  case), world_size, quant, backend (upper case), comm ("AUTO" where the row recorded
  none), ``n_success`` rows with status success and ``n_runs`` distinct runs; one
  statement for DuckDB and PostgreSQL, ordered by the key. Rows with a NULL hardware,
  world size, quant or backend are left out (nothing to state about them).
- Every database failure raises :class:`StoreError` (see :mod:`db.session`).
"""

from __future__ import annotations

import pandas as pd
import sqlalchemy as sa

from analysis.capabilities import CAPABILITY_COLUMNS, normalise_capabilities
from db import schema
from db.session import Database


class CapabilityReader:
    """Capabilities proven by the stored measurements."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def measured(self) -> pd.DataFrame:
        """Successful measurement rows per hardware x world_size x quant x backend x
        comm (see the module contract)."""
        m = schema.measurements
        hardware = sa.func.upper(m.c.hardware).label("hardware")
        backend = sa.func.upper(m.c.backend).label("backend")
        comm = sa.func.coalesce(m.c.comm, sa.literal("AUTO")).label("comm")
        keys = [hardware, m.c.world_size, m.c.quant, backend, comm]
        stmt = (
            sa.select(
                *keys,
                sa.func.count().label("n_success"),
                sa.func.count(sa.distinct(m.c.run_id)).label("n_runs"),
            )
            .where(
                m.c.status == "success",
                m.c.hardware.is_not(None),
                m.c.world_size.is_not(None),
                m.c.quant.is_not(None),
                m.c.backend.is_not(None),
            )
            .group_by(*keys)
            .order_by(*keys)
        )
        with self._db.read("measured_capabilities", single=True) as conn:
            rows = conn.execute(stmt).all()
        frame = pd.DataFrame([tuple(r) for r in rows], columns=list(CAPABILITY_COLUMNS))
        return normalise_capabilities(frame)
