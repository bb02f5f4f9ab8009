"""What ran on which hardware: successful measurements counted per hardware x world size x
quant x backend x comm, aggregated in the database.

Contract
- ``measured`` reads the runs' summaries (``db.summaries.capabilities``: per run x
  backend x comm, written with the run's measurements) and returns
  ``analysis.capabilities.CAPABILITY_COLUMNS``: hardware (upper case), world_size,
  quant, backend (upper case), comm ("AUTO" where the row recorded none), ``n_success``
  rows with status success and ``n_runs`` distinct runs; one statement for DuckDB and
  PostgreSQL, ordered by the key. Rows with a NULL hardware, world size, quant or
  backend are left out (nothing to state about them). At 10^8 stored candidates an
  aggregate over every measurement row hit the statement timeout; the summaries hold a
  few dozen rows per run.
- Every database failure raises :class:`StoreError` (see :mod:`db.session`).
"""

from __future__ import annotations

import pandas as pd

from analysis.capabilities import CAPABILITY_COLUMNS, normalise_capabilities
from db import summaries
from db.session import Database


class CapabilityReader:
    """Capabilities proven by the stored measurements."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def measured(self) -> pd.DataFrame:
        """Successful measurement rows per hardware x world_size x quant x backend x
        comm (see the module contract), summed over the runs' summaries."""
        with self._db.read("measured_capabilities", single=True) as conn:
            rows = summaries.capabilities(conn)
        frame = pd.DataFrame(rows, columns=list(CAPABILITY_COLUMNS))
        return normalise_capabilities(frame)
