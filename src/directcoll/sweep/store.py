"""Resumable results of a sweep: one Parquet part per finished cell, then one table.

The parts live in the folder ``OUTPUT.parts/`` next to the output (``results.parquet.parts/``), one file
``KEY.parquet`` per cell, KEY the cell's :func:`~directcoll.sweep.plan.cell_key` (its parameters and the directcoll
version). A part is written to a temporary name and renamed when complete, so a sweep stopped at any moment leaves
only whole parts; a rerun lists them and computes only the cells that have none. :meth:`Store.assemble` then writes
the output: the parts of the sweep's cells in grid order, one table with the kind's columns
(:data:`directcoll.sweep.cells.COLUMNS`). Parts of cells no longer in the sweep stay in the folder, unread.

Only the process that runs the sweep writes here (the workers return rows), so a cluster needs no shared disk.

Source: docs/sweep.md, "Resuming" and "Columns"; Apache Parquet through pyarrow.
"""

from __future__ import annotations

import os
from pathlib import Path

from directcoll.sweep import require
from directcoll.sweep.cells import COLUMNS

PART_SUFFIX = ".parquet"


def parts_dir(output) -> Path:
    """The folder of the parts of ``output``: ``OUTPUT.parts`` beside it. Raises: Nothing.
    Source: docs/sweep.md, "Resuming".

    >>> parts_dir("out/results.parquet").as_posix()
    'out/results.parquet.parts'
    """
    return Path(f"{os.fspath(output)}.parts")


def _schema(kind: str):
    pa = require("directcoll sweep", "pyarrow")
    types = {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64(), "bool": pa.bool_()}
    return pa.schema([(name, types[t]) for name, t in COLUMNS[kind]])


class Store:
    """The parts folder of one sweep output.

    Args:
        output: the final table's path (``results.parquet``); its parts go to :func:`parts_dir`.
        kind: the sweep's kind (its columns).

    Raises:
        MissingDependencyError: pyarrow is not installed (the ``sweep`` extra).

    Source: docs/sweep.md, "Resuming".

    >>> import tempfile, os
    >>> from directcoll.sweep.plan import plan_sweep
    >>> cell = plan_sweep({"kind": "alltoall", "topology": "ring:4"}).cells[0]
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     store = Store(os.path.join(tmp, "r.parquet"), "alltoall")
    ...     before = store.finished()
    ...     store.write(cell.key, "alltoall", [{"topology": "ring:4", "f_lower": 0.5}], None, 0.1)
    ...     before, store.finished() == {cell.key}, store.assemble([cell])
    (set(), True, (1, 0))
    """

    def __init__(self, output, kind: str) -> None:
        require("directcoll sweep", "pyarrow.parquet")
        self.output, self.kind = Path(output), kind
        self.folder = parts_dir(output)
        self.schema = _schema(kind)

    def finished(self) -> set[str]:
        """The keys of the cells that have a part. Raises: OSError (the folder went away).
        Source: docs/sweep.md, "Resuming"."""
        if not self.folder.is_dir():
            return set()
        return {p.name[: -len(PART_SUFFIX)] for p in self.folder.iterdir()
                if p.name.endswith(PART_SUFFIX) and not p.name.startswith(".")}

    def write(self, key: str, kind: str, rows: list[dict], error: str | None, seconds: float) -> None:
        """Write one finished cell's part: its rows (one row saying ``error`` when refused), atomically; the
        folder is made on the first part.

        Raises:
            OSError: the folder or the part cannot be written. Source: docs/sweep.md, "Resuming".
        """
        import pyarrow as pa
        import pyarrow.parquet as pq

        cell = {"cell": key, "kind": kind, "error": error, "cell_seconds": float(seconds)}
        table = pa.Table.from_pylist([{**row, **cell} for row in rows] or [cell], schema=self.schema)
        self.folder.mkdir(parents=True, exist_ok=True)
        final = self.folder / f"{key}{PART_SUFFIX}"
        tmp = self.folder / f".{key}{PART_SUFFIX}.{os.getpid()}.tmp"
        pq.write_table(table, tmp)
        os.replace(tmp, final)

    def assemble(self, cells) -> int:
        """Write the output: the parts of ``cells`` (each with a part) in their order, ``cell_index`` set to the
        cell's place in the grid; atomically.

        Returns:
            (rows, refused): the rows written and how many of them are refused cells (``error`` set).

        Raises:
            FileNotFoundError: a cell has no part. OSError: the output cannot be written.

        Source: docs/sweep.md, "Columns".
        """
        import pyarrow as pa
        import pyarrow.parquet as pq

        tables = []
        for cell in cells:
            t = pq.read_table(self.folder / f"{cell.key}{PART_SUFFIX}", schema=self.schema)
            where = self.schema.get_field_index("cell_index")
            tables.append(t.set_column(where, "cell_index", pa.array([cell.index] * t.num_rows, pa.int64())))
        table = pa.concat_tables(tables) if tables else self.schema.empty_table()
        tmp = self.output.with_name(f".{self.output.name}.{os.getpid()}.tmp")
        pq.write_table(table, tmp)
        os.replace(tmp, self.output)
        return table.num_rows, table.num_rows - table.column("error").null_count
