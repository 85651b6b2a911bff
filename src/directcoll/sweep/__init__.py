"""Sweeps: many independent studies (cells) from one SWEEP.toml, run serially or on Dask, into one Parquet table.

A sweep file names a kind of study and its grid (:mod:`directcoll.sweep.plan`); every cell of the grid is one call
into the library's own functions (:mod:`directcoll.sweep.cells`: :func:`directcoll.reports.compare.compare`,
:func:`directcoll.synthesis.finder.find_topology`, :func:`directcoll.synthesis.mcf.link.alltoall_mcf`); the cells
run in this process or on a Dask cluster (:mod:`directcoll.sweep.execute`) and every finished cell is written at
once as a Parquet part keyed by the hash of its parameters and the directcoll version (:mod:`directcoll.sweep.store`),
so a rerun computes only what is missing. ``directcoll sweep SWEEP.toml -o results.parquet`` is the command.

This layer sits above ``reports/`` (it calls ``compare``) and below ``cli/`` (docs/architecture.md). Nothing here
imports Dask or pyarrow when imported: they are the ``sweep`` extra (``pip install 'directcoll[sweep]'``), loaded
when a sweep runs; without them the sweep says so in one line (:func:`require`).

Source: docs/sweep.md; docs/architecture.md, "Engines, runtimes and scale" ("Beyond one machine").
"""

from directcoll.errors import MissingDependencyError

__all__ = ["SWEEP_EXTRA", "require"]

#: how to install what a sweep needs: Dask (dask.distributed) and pyarrow
SWEEP_EXTRA = "pip install 'directcoll[sweep]'"


def require(what: str, module: str):
    """Import the optional dependency ``module`` (``distributed``, ``pyarrow`` ...) for ``what``, or refuse in one
    line naming :data:`SWEEP_EXTRA`.

    Returns:
        The imported module.

    Raises:
        MissingDependencyError: ``module`` is not installed.

    Source: docs/sweep.md, "Install" (the ``sweep`` extra); the one-line pattern of
    :func:`directcoll.runtime.missing`.

    >>> require("directcoll sweep", "json").__name__
    'json'
    >>> try:
    ...     require("directcoll sweep", "no_such_module_here")
    ... except MissingDependencyError as exc:
    ...     print(exc)
    directcoll sweep needs no_such_module_here: pip install 'directcoll[sweep]' (No module named 'no_such_module_here')
    """
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependencyError(f"{what} needs {module.split('.')[0]}: {SWEEP_EXTRA} ({exc})") from exc
