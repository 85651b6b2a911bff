"""Running schedules for real: per-rank programs and executors over MPI (mpi4py) and torch.distributed.

The executors live in :mod:`directcoll.runtime.mpi` (the ``mpi`` extra: ``pip install 'directcoll[mpi]'``) and
:mod:`directcoll.runtime.torch_dist` (the ``torch`` extra); each imports its engine when it is imported, and
nothing else in directcoll imports mpi4py or torch.
"""

from directcoll.errors import MissingDependencyError
from directcoll.runtime.program import RankProgram, StepProgram, compile_programs

__all__ = ["MPI_EXTRA", "TORCH_EXTRA", "RankProgram", "StepProgram", "compile_programs", "missing", "require_mpi"]

#: how to install the MPI executor's dependencies (mpi4py and the MPICH wheel)
MPI_EXTRA = "pip install 'directcoll[mpi]'"
#: how to install the torch.distributed executor's dependency
TORCH_EXTRA = "pip install 'directcoll[torch]'"


def missing(what: str, extra: str, exc: BaseException) -> MissingDependencyError:
    """The error for ``what`` (e.g. ``"directcoll run"``) failing to import an optional dependency (``exc``);
    ``extra`` is :data:`MPI_EXTRA` or :data:`TORCH_EXTRA`.

    Raises:
        Nothing: builds and returns the error; the caller raises it.

    Source: docs/runtime.md ("without it the command says so in one line"; the ``mpi`` and ``torch`` extras).

    >>> str(missing("directcoll run", MPI_EXTRA, ModuleNotFoundError("No module named 'mpi4py'")))
    "directcoll run needs MPI: pip install 'directcoll[mpi]' (No module named 'mpi4py')"
    """
    engine = "MPI" if extra == MPI_EXTRA else "torch"
    return MissingDependencyError(f"{what} needs {engine}: {extra} ({exc})")


def require_mpi(what: str) -> None:
    """Check that mpi4py is installed, without starting MPI (``mpi4py.MPI`` is not imported).

    Raises:
        MissingDependencyError: mpi4py is not installed; one line naming ``what`` and :data:`MPI_EXTRA`.

    Source: docs/runtime.md (the ``mpi`` extra: mpi4py and the MPICH wheel).

    >>> try:
    ...     require_mpi("directcoll run")
    ... except MissingDependencyError as exc:
    ...     assert "directcoll[mpi]" in str(exc)
    """
    try:
        import mpi4py  # noqa: F401 - the package only: importing mpi4py.MPI would initialize MPI
    except ImportError as exc:
        raise missing(what, MPI_EXTRA, exc) from exc
