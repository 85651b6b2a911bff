"""One HiGHS instance behind a checked interface: options fixed at construction, every status checked, nothing
written to the process's standard output.

HiGHS (highspy >= 1.16) prints a banner on file descriptor 1 when a ``Highs`` object is constructed, before
``output_flag`` can be set, and below Python's ``sys.stdout``: so a ``--json`` document would be preceded by it.
:func:`quiet_stdout` points descriptor 1 at ``/dev/null`` (construction) or standard error (solves) while the
C library runs, and flushes C's stdio buffers before pointing it back.

**Progress of long solves.** A solve that runs longer than :data:`SOLVER_LOG_AFTER` seconds shows HiGHS's own log
(presolve, then an iteration line every few seconds: objective, infeasibilities, time) on standard error, each
line prefixed ``highs:`` after one line naming the model; shorter solves print nothing. HiGHS hands its log to a
callback (``cbLogging``, never its console), so standard output stays clean; HiGHS before 1.14 calls that callback
only while its console log is on (measured: highspy 1.12.0 and 1.13.1 deliver nothing with ``log_to_console``
off, 1.14.0 on do), so there the console log is on and descriptor 1 points at ``/dev/null`` during the solve.
Whether it is shown is :func:`solver_log_enabled`: ``auto`` (the default) when standard error is a terminal,
``on`` always, ``off`` never; set by the environment variable ``DIRECTCOLL_SOLVER_LOG`` or by
``directcoll --solver-log MODE`` (:func:`solver_log`).
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
import time
from contextlib import contextmanager

import numpy as np

from directcoll.errors import SolverError, SolverLimitError
from directcoll.lp.model import LinearProgram, Solution
from directcoll.resources import check_memory

#: Models estimated below this are not checked against the memory budget (BFB solves thousands of tiny LPs).
MEMORY_CHECK_FROM = 64 * 2**20

_LIMITS = ("kTimeLimit", "kIterationLimit", "kSolutionLimit", "kInterrupt", "kHighsInterrupt", "kObjectiveBound",
           "kObjectiveTarget", "kMemoryLimit")
_INFEASIBLE = ("kInfeasible", "kUnbounded", "kUnboundedOrInfeasible")
_guard = threading.RLock()
_depth = [0]

#: a solve shows HiGHS's log on standard error once it has run this many seconds (when the log is enabled)
SOLVER_LOG_AFTER = 2.0
#: the environment variable that enables HiGHS's log of long solves: auto, on or off
SOLVER_LOG_ENV = "DIRECTCOLL_SOLVER_LOG"
SOLVER_LOG_MODES = ("auto", "on", "off")


def solver_log_enabled() -> bool:
    """Whether long solves show HiGHS's log on standard error: ``$DIRECTCOLL_SOLVER_LOG`` is ``on`` (yes), ``off``
    (no) or ``auto``/unset (when standard error is a terminal).

    Raises:
        SolverError: another value of ``DIRECTCOLL_SOLVER_LOG``, naming the accepted ones.

    Source: docs/architecture.md, "Command line" ("a sign of life on anything over two seconds": LP solves with HiGHS's
    own progress); docs/architecture.md, "Engines, runtimes and scale" (nothing on standard output).

    >>> with solver_log("off"):
    ...     solver_log_enabled()
    False
    """
    mode = os.environ.get(SOLVER_LOG_ENV, "auto").strip().lower() or "auto"
    if mode not in SOLVER_LOG_MODES:
        raise SolverError(f"{SOLVER_LOG_ENV}={mode!r}: accepted: {', '.join(SOLVER_LOG_MODES)}")
    if mode == "auto":
        try:
            return sys.stderr.isatty()
        except (AttributeError, ValueError):  # no standard error, or a closed one
            return False
    return mode == "on"


@contextmanager
def solver_log(mode: str | None):
    """Inside the block, long solves show HiGHS's log per ``mode`` (``auto``, ``on``, ``off``; None changes
    nothing): sets ``$DIRECTCOLL_SOLVER_LOG``, so worker processes started inside the block inherit it.

    Raises:
        SolverError: a mode that is not auto, on or off.

    Source: docs/architecture.md, "Command line" ("a sign of life on anything over two seconds").

    >>> with solver_log("on"):
    ...     os.environ[SOLVER_LOG_ENV]
    'on'
    """
    if mode is not None and mode not in SOLVER_LOG_MODES:
        raise SolverError(f"solver log mode {mode!r}: accepted: {', '.join(SOLVER_LOG_MODES)}")
    saved = os.environ.get(SOLVER_LOG_ENV)
    if mode is not None:
        os.environ[SOLVER_LOG_ENV] = mode
    try:
        yield
    finally:
        if mode is not None:
            if saved is None:
                os.environ.pop(SOLVER_LOG_ENV, None)
            else:
                os.environ[SOLVER_LOG_ENV] = saved


class _LogRelay:
    """HiGHS's log callback: keeps the lines of the first :data:`SOLVER_LOG_AFTER` seconds, then (from a timer, so
    a solver that logs nothing for a while is still announced) writes a line naming the model, those lines, and
    every later line as it comes, on standard error."""

    def __init__(self, what: str, after: float | None = None) -> None:
        self.what, self.lines, self.shown = what, [], False
        self.after = SOLVER_LOG_AFTER if after is None else after
        self.lock = threading.Lock()
        self.timer = threading.Timer(self.after, self.show)
        self.timer.daemon = True

    def __call__(self, event) -> None:
        with self.lock:
            if self.shown:
                self._write(event.message)
            else:
                self.lines.append(event.message)

    def _write(self, message: str) -> None:
        text = "".join(f"  highs: {line}\n" for line in message.rstrip("\n").split("\n"))
        try:
            sys.stderr.write(text)
            sys.stderr.flush()
        except (OSError, ValueError):  # standard error closed under us: progress is best-effort
            pass

    def show(self) -> None:
        with self.lock:
            if self.shown:
                return
            self.shown = True
            try:
                sys.stderr.write(f"directcoll: {self.what} has run {self.after:g} s; HiGHS's log:\n")
            except (OSError, ValueError):
                pass
            for message in self.lines:
                self._write(message)
            self.lines = []

    def __enter__(self):
        if self.after <= 0:
            self.show()
        else:
            self.timer.start()
        return self

    def __exit__(self, *exc):
        self.timer.cancel()


def _fflush_c() -> None:
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):  # no C library to flush (not a POSIX platform)
        pass


@contextmanager
def quiet_stdout(to: str = "stderr"):
    """Point file descriptor 1 at standard error (``to="stderr"``) or ``/dev/null`` (``to="null"``) inside the
    block, flushing Python's and C's buffers on both edges. Re-entrant; a no-op when descriptor 1 is closed.

    Raises:
        Nothing: flush errors are ignored; a closed descriptor 1 makes it a no-op.

    Source: docs/architecture.md, "Engines, runtimes and scale" (no solver output on the process's standard output;
    machine-readable output is a contract).

    >>> with quiet_stdout("null"):
    ...     os.write(1, b"not shown")
    9
    """
    with _guard:
        if _depth[0]:
            _depth[0] += 1
            try:
                yield
            finally:
                _depth[0] -= 1
            return
        try:
            sys.stdout.flush()
        except (OSError, ValueError, AttributeError):
            pass
        _fflush_c()
        try:
            saved = os.dup(1)
        except OSError:
            yield
            return
        target = os.open(os.devnull, os.O_WRONLY) if to == "null" else os.dup(2)
        os.dup2(target, 1)
        os.close(target)
        _depth[0] = 1
        try:
            yield
        finally:
            _depth[0] = 0
            _fflush_c()
            os.dup2(saved, 1)
            os.close(saved)


def _not_nan(a: np.ndarray) -> np.ndarray:
    return ~np.isnan(a)


def _highspy():
    import highspy

    return highspy


def _callback_needs_console() -> bool:
    """Whether this highspy calls the log callback only while ``log_to_console`` is on (releases before 1.14; the
    module docstring, "Progress of long solves")."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        major, minor = (int(part) for part in version("highspy").split(".")[:2])
    except (PackageNotFoundError, ValueError):   # a build without metadata or an odd version: assume current
        return False
    return (major, minor) < (1, 14)


class Solver:
    """A HiGHS instance whose options are fixed at construction; :meth:`solve` checks every status.

    Args:
        options: HiGHS options (``{"time_limit": 10.0, "solver": "ipm"}``; see the HiGHS option list).
            ``output_flag`` is False, except during a solve that relays HiGHS's log (the module docstring,
            "Progress of long solves": console logging stays off, the log goes through a callback).
            ``threads`` is honoured by resetting HiGHS's global scheduler
            before each run (setting it after an earlier solve in the process otherwise makes the run fail).

    Raises:
        SolverError: HiGHS rejects an option (unknown name or value out of range).

    Reuse one Solver for many small models: construction costs more than a small solve.

    Source: docs/architecture.md, "Engines, runtimes and scale" (solver hygiene: options at construction); HiGHS
    (Huangfu & Hall) via highspy.

    >>> from directcoll.lp.model import LinearProgram
    >>> import scipy.sparse as sp
    >>> lp = LinearProgram(sp.csc_matrix([[1.0, 1.0]]), np.array([-1.0, -2.0]), np.zeros(2), np.full(2, np.inf),
    ...                    np.array([-np.inf]), np.array([4.0]), name="toy")
    >>> Solver().solve(lp).x.tolist()
    [0.0, 4.0]
    """

    def __init__(self, options: dict | None = None) -> None:
        hs = _highspy()
        self._hs = hs
        with quiet_stdout("null"):
            self._h = hs.Highs()
        self._options = {"output_flag": False, **(options or {})}
        for key, value in self._options.items():
            if self._h.setOptionValue(key, value) != hs.HighsStatus.kOk:
                raise SolverError(f"HiGHS rejects option {key}={value!r}; see the HiGHS option list")
        self._reset_threads = "threads" in self._options

    def _status(self) -> tuple[str, str]:
        status = self._h.getModelStatus()
        return status.name, self._h.modelStatusToString(status)

    def _pass(self, lp: LinearProgram) -> None:
        hs = self._hs
        for label, arr, allowed in (("cost", lp.cost, np.isfinite), ("matrix", lp.a.data, np.isfinite),
                                    ("column bounds", np.r_[lp.col_lower, lp.col_upper], _not_nan),
                                    ("row bounds", np.r_[lp.row_lower, lp.row_upper], _not_nan)):
            if not np.all(allowed(arr)):
                raise SolverError(f"{lp.describe()} has non-finite {label}; a bug in the model's construction")
        if lp.estimated_bytes() > MEMORY_CHECK_FROM:
            check_memory(f"solving {lp.describe()}", lp.estimated_bytes())
        model = hs.HighsLp()
        model.num_col_, model.num_row_ = lp.num_cols, lp.num_rows
        model.col_cost_ = np.asarray(lp.cost, dtype=float)
        model.col_lower_, model.col_upper_ = np.asarray(lp.col_lower, float), np.asarray(lp.col_upper, float)
        model.row_lower_, model.row_upper_ = np.asarray(lp.row_lower, float), np.asarray(lp.row_upper, float)
        model.a_matrix_.format_ = hs.MatrixFormat.kColwise
        model.a_matrix_.start_ = lp.a.indptr.astype(np.int32)
        model.a_matrix_.index_ = lp.a.indices.astype(np.int32)
        model.a_matrix_.value_ = lp.a.data.astype(float)
        model.a_matrix_.num_col_, model.a_matrix_.num_row_ = lp.num_cols, lp.num_rows
        if lp.is_mip:
            model.integrality_ = [hs.HighsVarType.kInteger if i else hs.HighsVarType.kContinuous
                                  for i in lp.integer]
        with quiet_stdout():
            status = self._h.passModel(model)
        if status == hs.HighsStatus.kError:
            raise SolverError(f"HiGHS rejects {lp.describe()} (NaN or inconsistent data?)")

    @contextmanager
    def _log(self, what: str):
        """Inside the block descriptor 1 points at standard error (:func:`quiet_stdout`), and HiGHS's log is relayed
        to standard error once the block has run :data:`SOLVER_LOG_AFTER` seconds, when :func:`solver_log_enabled`;
        output_flag is on only inside the block, with the console log off (on, with descriptor 1 at ``/dev/null``,
        where the callback needs it: :func:`_callback_needs_console`)."""
        if not solver_log_enabled() or not hasattr(self._h, "cbLogging"):
            with quiet_stdout():
                yield
            return
        relay = _LogRelay(what)
        console = _callback_needs_console()
        self._h.setOptionValue("log_to_console", console)
        self._h.setOptionValue("output_flag", True)
        self._h.cbLogging.subscribe(relay)
        try:
            with quiet_stdout("null" if console else "stderr"), relay:
                yield
        finally:
            self._h.cbLogging.unsubscribe(relay)
            self._h.setOptionValue("output_flag", False)

    def _run(self, lp: LinearProgram, method: str, accept_limit: bool, duals: bool) -> Solution:
        hs = self._hs
        t0 = time.perf_counter()
        with self._log(f"HiGHS ({method}) on {lp.describe()}"):
            if self._reset_threads:
                hs.Highs.resetGlobalScheduler(True)
            run_status = self._h.run()
        seconds = time.perf_counter() - t0
        return self._result(lp, method, run_status, seconds, accept_limit, duals)

    def _result(self, lp, method, run_status, seconds, accept_limit, duals) -> Solution:
        hs = self._hs
        name, words = self._status()
        where = f"HiGHS ({method}) on {lp.describe()}"
        if run_status == hs.HighsStatus.kError and name != "kOptimal":
            raise SolverError(f"{where} failed: run status error, model status {words}")
        info = self._h.getInfo()
        optimal = name in ("kOptimal", "kModelEmpty")
        if name in _INFEASIBLE:
            raise SolverError(f"{where}: the model is {words.lower()}")
        if name in _LIMITS:
            feasible = info.primal_solution_status == 2  # kSolutionStatusFeasible
            if not (accept_limit and feasible):
                raise SolverLimitError(f"{where} stopped: {words}" + ("" if feasible else " with no feasible point"))
        elif not optimal:
            raise SolverError(f"{where} failed: model status {words}")
        sol = self._h.getSolution()
        x = np.asarray(sol.col_value, dtype=float)
        if x.shape != (lp.num_cols,):
            raise SolverError(f"{where} returned {x.shape[0]} values for {lp.num_cols} columns (status {words})")
        objective = float(info.objective_function_value)
        bound = float(info.mip_dual_bound) if lp.is_mip else objective
        col_dual = np.asarray(sol.col_dual, dtype=float) if duals else None
        return Solution(x=x, objective=objective, status=words, optimal=optimal, method=method, seconds=seconds,
                        dual_bound=bound, col_dual=col_dual)

    def solve(self, lp: LinearProgram, *, start: np.ndarray | None = None, accept_limit: bool = False,
              duals: bool = False, method: str | None = None) -> Solution:
        """Solve ``lp`` (an LP, or a MIP when ``lp.integer`` marks integer columns).

        Args:
            lp: the model.
            start: (cols,) a feasible starting point (a MIP's incumbent), or None.
            accept_limit: return the best feasible point when a time or iteration limit stops the solve
                (``Solution.optimal`` is then False and ``status`` names the limit); otherwise a limit raises.
            duals: also return reduced costs, shape (cols,).
            method: a label for messages (default: the ``solver`` option, or ``mip``).

        Returns:
            The :class:`~directcoll.lp.model.Solution`; ``seconds`` is the solver's wall time.

        Raises:
            SolverError: HiGHS rejects the model or the starting point, the model has non-finite data, is
                infeasible or unbounded, or the solve fails.
            SolverLimitError: a limit stopped the solve (and ``accept_limit`` is False, or no feasible point).
            ResourceError: the model's estimated memory is over the budget.

        Source: docs/architecture.md, "Engines, runtimes and scale" (every status checked).

        >>> from directcoll.lp.model import LinearProgram
        >>> import scipy.sparse as sp
        >>> lp = LinearProgram(sp.csc_matrix([[1.0, 1.0]]), np.array([-1.0, -2.0]), np.zeros(2), np.full(2, np.inf),
        ...                    np.array([-np.inf]), np.array([4.0]), name="toy")
        >>> Solver({"solver": "ipm"}).solve(lp).objective
        -8.0
        """
        method = method or ("mip" if lp.is_mip else str(self._options.get("solver", "simplex")))
        self._pass(lp)
        if start is not None:
            sol = self._hs.HighsSolution()
            sol.col_value = np.asarray(start, dtype=float).tolist()
            sol.value_valid = True
            if self._h.setSolution(sol) == self._hs.HighsStatus.kError:
                raise SolverError(f"HiGHS rejects the starting point of {lp.describe()}")
        return self._run(lp, method, accept_limit, duals)

    def crossover(self, lp: LinearProgram, x: np.ndarray, col_dual: np.ndarray) -> Solution:
        """Crossover from a primal-dual point to a basis, then this solver's method (construct it with
        ``{"solver": "simplex"}``) to optimality from that basis: a few iterations.

        Args:
            lp: the model; x: (cols,) primal point; col_dual: (cols,) reduced costs (e.g. from PDLP).

        Returns:
            The optimal :class:`~directcoll.lp.model.Solution` (``method="crossover"``, ``seconds`` of crossover
            plus simplex).

        Raises:
            SolverError: crossover or the simplex run fails, or the model is rejected.
            SolverLimitError: a limit stopped it.
            ResourceError: the model's estimated memory is over the budget.

        Source: docs/architecture.md, "Engines, runtimes and scale"; docs/alltoall.md, "Solvers" (PDLP then crossover).
        """
        hs = self._hs
        self._pass(lp)
        sol = hs.HighsSolution()
        sol.col_value, sol.col_dual = np.asarray(x, float), np.asarray(col_dual, float)
        t0 = time.perf_counter()
        with self._log(f"HiGHS crossover on {lp.describe()}"):
            status = self._h.crossover(sol)
        if status == hs.HighsStatus.kError:
            raise SolverError(f"HiGHS crossover failed on {lp.describe()}")
        out = self._run(lp, "crossover", False, False)
        return Solution(x=out.x, objective=out.objective, status=out.status, optimal=out.optimal,
                        method="crossover", seconds=time.perf_counter() - t0, dual_bound=out.dual_bound)
