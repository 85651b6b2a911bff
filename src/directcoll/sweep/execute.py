"""Running a sweep: its unfinished cells in this process (``serial``) or on Dask, each part stored as it finishes.

* serial: every cell in turn, in grid order, in this process: the single-process run.
* local (the default): a :class:`distributed.LocalCluster` of ``workers`` processes (one thread each) on this
  machine; the memory budget is shared: every cell gets ``budget / workers`` (:mod:`directcoll.resources`).
* scheduler: the Dask cluster whose scheduler is at ``scheduler`` (``tcp://host:8786``); every worker needs
  directcoll (the same version: the cell keys carry it) and checks each cell against its own memory budget.

Every run maps the same function (:func:`directcoll.sweep.cells.run_cell`) over the same cells, so the rows are the
same; only ``cell_seconds`` differs. On Dask, a decomposed all-to-all cell also spreads its child LPs (Basu eq.
10-14, one per source) over the cluster from inside its task (``distributed.worker_client``).

Before anything runs, every cell that the library can size from its spec alone (the topology, and the flow LP of
``link`` / ``decomposed`` all-to-all) is checked against its share of the budget, so a sweep that cannot fit is
refused in one line before the first cell starts.

Source: docs/sweep.md, "Running"; docs/architecture.md, "Engines, runtimes and scale" ("Beyond one machine"); Dask's
``distributed`` documentation (LocalCluster, Client.submit, as_completed, worker_client).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from directcoll.errors import DirectcollError
from directcoll.sweep import require
from directcoll.sweep.cells import COLUMNS, run_cell
from directcoll.sweep.plan import Cell, Sweep
from directcoll.sweep.store import Store


@dataclass
class SweepResult:
    """What :func:`run_sweep` did.

    Attributes:
        output: the table written; kind: the sweep's kind; executor: ``serial``, ``local`` or the scheduler's
        address; workers: Dask workers (None: serial); cells: cells in the grid; computed: cells computed in this
        run; reused: cells whose part an earlier run left; errors: cells of the table refused by the library (rows
        with ``error``, this run's and earlier ones'); unfinished: labels of cells refused for now (memory, a
        solver limit) and not stored; rows: rows in the table; columns: its columns; seconds: wall time.

    Raises:
        Nothing: a record.

    Source: docs/sweep.md, "Running" (the ``--json`` summary).
    """

    output: str
    kind: str
    executor: str
    workers: int | None
    cells: int
    computed: int = 0
    reused: int = 0
    errors: int = 0
    unfinished: list[str] = field(default_factory=list)
    rows: int = 0
    columns: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict:
        """The fields by name (the ``--json`` document of ``directcoll sweep``). Raises: Nothing.
        Source: docs/sweep.md, "Running"."""
        return asdict(self)


def estimate_cell(cell: Cell) -> float | None:
    """Bytes a cell needs by what the library can size from its parameters alone: the topology
    (:func:`directcoll.topology.spec.size_of`) and, for a ``link`` or ``decomposed`` all-to-all, its flow LP
    (:data:`~directcoll.synthesis.mcf.formulations.BYTES_PER_FLOW_COLUMN` per source x link). A lower bound;
    the library checks the rest (schedules, other LPs) inside the cell.

    Returns:
        Bytes (float), or None when the spec alone does not tell (a system preset, a spec the cell will refuse).

    Raises:
        Nothing.

    Source: docs/architecture.md, "Engines, runtimes and scale" (estimate first, refuse over a budget);
    :func:`directcoll.synthesis.mcf.formulations.check_flow_lp`.

    >>> from directcoll.sweep.plan import plan_sweep
    >>> cell = plan_sweep({"kind": "alltoall", "topology": "torus:8x8", "method": "link"}).cells[0]
    >>> estimate_cell(cell) > 320 * 64 * 256
    True
    """
    from directcoll.topology.spec import size_of

    spec = cell.params.get("topology")
    if spec is None:
        return 0.0
    try:
        size = size_of(spec)
    except DirectcollError:
        return None
    nbytes = float(size.nbytes)
    if cell.kind == "alltoall" and cell.params["method"] in ("link", "decomposed"):
        from directcoll.synthesis.mcf.formulations import BYTES_PER_FLOW_COLUMN

        n = float(size.nodes)
        nbytes += BYTES_PER_FLOW_COLUMN * n * float(size.links) + 40.0 * n * (n - 1)
    return nbytes


def _check_budget(cells: list[Cell], share: int | None) -> None:
    """Refuse the first cell over its share of the memory budget (None: the workers check their own), or over the
    finder's node limit (a limit of the library, not of the budget: refused here rather than retried forever)."""
    from contextlib import nullcontext

    from directcoll.resources import check_memory, check_work, memory_budget_override
    from directcoll.synthesis.finder import MAX_NODES

    for cell in cells:
        if cell.kind == "find-topology":
            check_work(f"sweep cell {cell.index} ({cell.label})", cell.params["nodes"], MAX_NODES, "nodes")
    if share is None:
        return
    with memory_budget_override(share) if share else nullcontext():
        for cell in cells:
            nbytes = estimate_cell(cell)
            if nbytes is not None:
                check_memory(f"sweep cell {cell.index} ({cell.label})", nbytes)


def _children_on_dask(fn, tasks):
    """Map the child LPs of a decomposed MCF over the Dask cluster this task runs on (results in task order)."""
    from distributed import worker_client

    with worker_client() as client:  # secedes from the worker's thread pool while the children run
        return client.gather(client.map(fn, tasks, pure=False))


def _cell_on_worker(kind: str, params: dict, budget: int | None):
    children = _children_on_dask if kind == "alltoall" and params.get("method") == "decomposed" else None
    return run_cell(kind, params, budget, children)


def run_sweep(sweep: Sweep, output, *, serial: bool = False, scheduler: str | None = None,
              workers: int | None = None, progress: Callable[[int, int, str], None] | None = None) -> SweepResult:
    """Run the cells of ``sweep`` that ``output``'s parts lack, store each as it finishes, write the table.

    Args:
        sweep: the planned sweep (:func:`directcoll.sweep.plan.load_sweep`).
        output: the table to write (``results.parquet``); parts go to ``OUTPUT.parts/``
            (:mod:`directcoll.sweep.store`).
        serial: run in this process, no Dask.
        scheduler: the address of a Dask scheduler (``tcp://host:8786``); None starts a local cluster.
        workers: the local cluster's worker processes (default: the cores); not with ``scheduler`` or ``serial``.
        progress: callable(done, total, label) after every cell (done counts reused cells too).

    Returns:
        :class:`SweepResult`.

    Raises:
        ResourceError: a cell over its share of the memory budget, or a find-topology cell over the finder's
            :data:`~directcoll.synthesis.finder.MAX_NODES` (checked before any cell runs).
        MissingDependencyError: Dask or pyarrow is not installed (``pip install 'directcoll[sweep]'``).
        DirectcollError: ``workers`` < 1 or given with ``serial`` / ``scheduler``; no scheduler at the address.
        OSError: the parts or the output cannot be written. Whatever a cell raises that is not a
            :class:`~directcoll.errors.DirectcollError` (a bug) stops the sweep, finished parts kept.

    Source: docs/sweep.md, "Running" and "Resuming".

    >>> import tempfile, os
    >>> from directcoll.sweep.plan import plan_sweep
    >>> sweep = plan_sweep({"kind": "alltoall", "topology": ["ring:4", "hypercube:3"]})
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     r = run_sweep(sweep, os.path.join(tmp, "r.parquet"), serial=True)
    ...     again = run_sweep(sweep, os.path.join(tmp, "r.parquet"), serial=True)
    >>> (r.cells, r.computed, r.rows), (again.computed, again.reused)
    ((2, 2, 2), (0, 2))
    """
    from directcoll.resources import memory_budget

    if workers is not None and (serial or scheduler):
        raise DirectcollError("--workers sizes the local Dask cluster; it does not go with --serial or --scheduler")
    if workers is not None and workers < 1:
        raise DirectcollError(f"--workers must be >= 1, got {workers}")
    t0 = time.perf_counter()
    store = Store(output, sweep.kind)
    done = store.finished()
    todo = [c for c in sweep.cells if c.key not in done]
    workers = None if serial or scheduler else (workers or os.cpu_count() or 1)
    executor = "serial" if serial else scheduler or "local"
    result = SweepResult(os.fspath(output), sweep.kind, executor, workers, len(sweep.cells),
                         reused=len(sweep.cells) - len(todo), columns=[name for name, _ in COLUMNS[sweep.kind]])
    budget = None if scheduler else memory_budget() // (workers or 1)
    _check_budget(todo, budget)
    report = progress or (lambda *_: None)
    report(result.reused, result.cells, "parts of an earlier run" if result.reused else "starting")

    def finish(cell: Cell, outcome) -> None:
        rows, error, retry, seconds = outcome
        result.computed += 1
        if retry:
            result.unfinished.append(f"{cell.label}: {error}")
        else:
            store.write(cell.key, cell.kind, rows, error, seconds)
        report(result.reused + result.computed, result.cells, cell.label)

    if serial:
        for cell in todo:
            finish(cell, run_cell(cell.kind, cell.params, budget))
    elif todo:
        _run_on_dask(todo, scheduler, workers, budget, finish)
    finished = store.finished()
    result.rows, result.errors = store.assemble([c for c in sweep.cells if c.key in finished])
    result.seconds = time.perf_counter() - t0
    return result


def _run_on_dask(todo: list[Cell], scheduler: str | None, workers: int | None, budget: int | None, finish) -> None:
    """Submit every cell to a Dask cluster (local or at ``scheduler``) and hand each outcome to ``finish`` as it
    comes in; the cluster is closed afterwards, whatever happens."""
    import logging

    distributed = require("directcoll sweep", "distributed")
    cluster = None
    try:
        if scheduler:
            try:
                client = distributed.Client(scheduler, timeout="10s")
            except (OSError, TimeoutError) as exc:
                raise DirectcollError(f"--scheduler {scheduler!r}: no Dask scheduler answers there ({exc})") from None
        else:
            cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                               dashboard_address=None, silence_logs=logging.ERROR)
            client = distributed.Client(cluster)
        try:
            futures = {client.submit(_cell_on_worker, c.kind, c.params, budget, key=f"directcoll-sweep-{c.key}",
                                     pure=False): c for c in todo}
            try:
                for future in distributed.as_completed(futures):
                    finish(futures[future], future.result())
            except distributed.KilledWorker as exc:  # the nanny ended it: over the worker's memory limit
                client.cancel(list(futures))
                cell = next((c for f, c in futures.items() if f.key == exc.task), None)
                raise DirectcollError(f"sweep cell {cell.label if cell else exc.task} ended its Dask worker more "
                                      "than once (over the worker's memory limit?); finished cells are kept, a "
                                      "rerun starts from them (fewer --workers give each more memory)") from None
            except BaseException:
                client.cancel(list(futures))
                raise
        finally:
            client.close()
    finally:
        if cluster is not None:
            cluster.close()
