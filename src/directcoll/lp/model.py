"""The LP/MIP model and the solution the solver layer returns (plain numpy and scipy.sparse, no solver types).

Source: docs/architecture.md, "Engines, runtimes and scale" (solver hygiene); the standard bounded LP form of HiGHS.

>>> lp = LinearProgram(sp.csc_matrix([[1.0, 1.0]]), np.zeros(2), np.zeros(2), np.ones(2),
...                    np.array([1.0]), np.array([1.0]), name="one row")
>>> lp.num_rows, lp.num_cols, lp.is_mip
(1, 2, False)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

#: Bytes HiGHS needs per non-zero and per row or column, from one measured point (docs: RESEARCH.md, the
#: source-aggregated MCF LP with 4M columns and 13M non-zeros peaked at 4.2 GB with PDLP): an upper estimate
#: used only to refuse models far over the memory budget, never to size anything.
BYTES_PER_NONZERO = 250
BYTES_PER_ROW_OR_COLUMN = 250


@dataclass
class LinearProgram:
    """min cost . x  subject to  row_lower <= A x <= row_upper,  col_lower <= x <= col_upper.

    Attributes:
        a: (rows, cols) constraint matrix, CSC (other sparse formats are converted on construction).
        cost: (cols,) objective coefficients.
        col_lower, col_upper: (cols,) bounds, ``±np.inf`` for none.
        row_lower, row_upper: (rows,) bounds, ``±np.inf`` for none; equal for an equality row.
        integer: (cols,) bool, True for an integer column (a MIP); None for a pure LP.
        name: what the model is, for error messages (e.g. ``"all-to-all MCF master LP on genkautz:4:100"``).

    Raises:
        ValueError: the array lengths do not match the matrix's shape (a built-in error: a bug in the caller's
            model construction, not bad user input).

    Source: docs/architecture.md, "Engines, runtimes and scale" (every LP/MIP goes through ``directcoll.lp``).

    >>> lp = LinearProgram(sp.csc_matrix([[1.0, 1.0]]), np.array([-1.0, -2.0]), np.zeros(2), np.full(2, np.inf),
    ...                    np.array([-np.inf]), np.array([4.0]), name="toy")
    >>> lp.describe()
    'toy (1 rows, 2 columns, 2 non-zeros)'
    """

    a: sp.csc_matrix
    cost: np.ndarray
    col_lower: np.ndarray
    col_upper: np.ndarray
    row_lower: np.ndarray
    row_upper: np.ndarray
    integer: np.ndarray | None = None
    name: str = "LP"

    def __post_init__(self) -> None:
        if not sp.isspmatrix_csc(self.a):
            self.a = sp.csc_matrix(self.a)
        rows, cols = self.a.shape
        for label, arr, n in (("cost", self.cost, cols), ("col_lower", self.col_lower, cols),
                              ("col_upper", self.col_upper, cols), ("row_lower", self.row_lower, rows),
                              ("row_upper", self.row_upper, rows)):
            if np.shape(arr) != (n,):
                raise ValueError(f"{self.name}: {label} has shape {np.shape(arr)}, expected ({n},)")
        if self.integer is not None and np.shape(self.integer) != (cols,):
            raise ValueError(f"{self.name}: integer has shape {np.shape(self.integer)}, expected ({cols},)")

    @property
    def num_cols(self) -> int:
        """Number of columns (variables). Raises: Nothing.

        Source: docs/architecture.md, "Engines, runtimes and scale"."""
        return self.a.shape[1]

    @property
    def num_rows(self) -> int:
        """Number of rows (constraints). Raises: Nothing.

        Source: docs/architecture.md, "Engines, runtimes and scale"."""
        return self.a.shape[0]

    @property
    def is_mip(self) -> bool:
        """Whether any column is integer. Raises: Nothing.

        Source: docs/architecture.md, "Engines, runtimes and scale"."""
        return self.integer is not None and bool(np.any(self.integer))

    def describe(self) -> str:
        """The model's name and size, as error messages give it.

        Returns:
            ``"<name> (<rows> rows, <cols> columns, <nnz> non-zeros)"``.

        Raises:
            Nothing: formats the shape.

        Source: docs/architecture.md, "Quality bar" (errors name the input).

        >>> LinearProgram(sp.csc_matrix((2, 3)), np.zeros(3), np.zeros(3), np.ones(3), np.zeros(2),
        ...               np.ones(2)).describe()
        'LP (2 rows, 3 columns, 0 non-zeros)'
        """
        return f"{self.name} ({self.num_rows} rows, {self.num_cols} columns, {self.a.nnz} non-zeros)"

    def estimated_bytes(self) -> float:
        """Upper estimate of the solver's memory for this model, bytes (see :data:`BYTES_PER_NONZERO`).

        Returns:
            A float, bytes: 250 per non-zero plus 250 per row and per column.

        Raises:
            Nothing: arithmetic.

        Source: docs/architecture.md, "Engines, runtimes and scale" (resources); one measured point (module constants).

        >>> LinearProgram(sp.csc_matrix([[1.0]]), np.zeros(1), np.zeros(1), np.ones(1), np.zeros(1),
        ...               np.ones(1)).estimated_bytes()
        750.0
        """
        return float(BYTES_PER_NONZERO * self.a.nnz + BYTES_PER_ROW_OR_COLUMN * (self.num_rows + self.num_cols))


@dataclass(frozen=True)
class Solution:
    """What a solve returned.

    Attributes:
        x: (cols,) column values.
        objective: cost . x.
        status: HiGHS's model status in words (``"Optimal"``, ``"Time limit reached"``, ...).
        optimal: True when proved optimal; False only for a feasible point returned at a limit by a caller that
            accepted limits (:func:`directcoll.lp.solve` with ``accept_limit=True``).
        method: how it was solved (``"simplex"``, ``"ipm"``, ``"pdlp+crossover"``, ``"mip"``, ...).
        seconds: wall time of the solver run(s), s.
        dual_bound: a MIP's best bound on the objective; the objective itself for an LP.
        col_dual: (cols,) reduced costs, where the solver returned them.

    Raises:
        Nothing: a frozen record built by :class:`~directcoll.lp.highs.Solver`.

    Source: docs/architecture.md, "Engines, runtimes and scale" (a limit is reported, never passed off as a result).
    """

    x: np.ndarray
    objective: float
    status: str
    optimal: bool
    method: str
    seconds: float
    dual_bound: float
    col_dual: np.ndarray | None = field(default=None, repr=False)
