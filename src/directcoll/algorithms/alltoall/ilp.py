"""All-to-all on one path per pair chosen by a mixed-integer program (Basu et al.'s ILP baseline, HPDC'24 Sec. 5.2), as
a path-based schedule.

One path per pair is chosen from a small candidate set so that the largest link load (over bandwidth) is
least, solved with HiGHS (binary x_p per candidate path, sum of a pair's x_p = 1, load_e(x) <= z cap_e for
every link, minimize z). Variant ``disjoint`` (default): up to ``candidates`` (default :data:`ILP_CANDIDATES`)
link-disjoint paths per pair, found as successive shortest paths each avoiding the links of the ones before
(:func:`directcoll.topology.paths.successive_shortest_paths`: a maximal, not necessarily maximum, disjoint set;
Basu's ILP-disjoint); ``shortest``: up to ``candidates`` of the pair's shortest paths, spread over their
enumeration order (Basu's ILP-shortest). NP-hard: above :data:`ILP_MAX_RANKS` ranks it runs only when a
``time_limit`` is given explicitly (Basu ran it at N = 44 and 81, Sec. 5.3) and its estimated memory fits the
budget; HiGHS stops at ``time_limit`` seconds (default :data:`ILP_TIME_LIMIT` up to :data:`ILP_MAX_RANKS` ranks)
with its best solution and the schedule's meta records the status, the objective (the incumbent) and the MIP's
lower bound; :func:`ilp_gap` gives the relative gap between them.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from directcoll.algorithms.alltoall.ewsp import shortest_paths
from directcoll.algorithms.alltoall.routed import csr_offsets, ordered_pairs, path_alltoall, require_alltoall
from directcoll.errors import UnsupportedShapeError
from directcoll.lp import LinearProgram
from directcoll.lp import solve as lp_solve
from directcoll.resources import check_memory
from directcoll.schedule.ir import Schedule, reorder_csr
from directcoll.topology.model import Topology
from directcoll.topology.paths import successive_shortest_paths
from directcoll.topology.routing import link_loads

#: ``ilp-disjoint`` refuses more ranks than this without an explicit ``time_limit`` (the MIP is NP-hard; Basu
#: Sec. 5.3 solves it to optimality up to N = 44)
ILP_MAX_RANKS = 16
#: estimated bytes per nonzero of the MIP while HiGHS solves it (matrix copies, presolve, LP factor, search tree)
ILP_BYTES_PER_NONZERO = 4096
#: candidate paths per pair of ``ilp-disjoint``
ILP_CANDIDATES = 4
#: seconds HiGHS may spend on the ``ilp-disjoint`` MIP before it returns its best solution
ILP_TIME_LIMIT = 30.0
ILP_VARIANTS = ("disjoint", "shortest")


def ilp_alltoall(topology: Topology, variant: str = "disjoint", *, candidates: int = ILP_CANDIDATES,
                 time_limit: float | None = None) -> Schedule:
    """All-to-all on one path per pair chosen by a MIP that minimizes the largest link load (Basu Sec. 5.2's
    ILP baseline): binary x_p for every candidate path p, sum_{p of (i, j)} x_p = 1 for every pair, and
    sum_{p through e} x_p <= z cap_e for every link e (cap_e: bandwidth relative to the fastest link);
    minimize z. Candidates: ``disjoint`` (Basu's ILP-disjoint) up to ``candidates`` link-disjoint paths per
    pair (:func:`~directcoll.topology.paths.successive_shortest_paths`); ``shortest`` (ILP-shortest) up to
    ``candidates`` shortest paths (:func:`~directcoll.algorithms.alltoall.ewsp.shortest_paths`). HiGHS starts
    from the first candidate of every pair (a shortest path) and returns its best solution within
    ``time_limit`` s; meta records ``ilp_status``, ``ilp_objective`` (= max_link_load, the incumbent),
    ``ilp_bound`` and ``ilp_seconds``; the relative gap is :func:`ilp_gap` of the meta.

    Args:
        topology: a topology of at least 2 compute nodes that all reach each other; above
            :data:`ILP_MAX_RANKS` only with an explicit ``time_limit``.
        variant: ``disjoint`` (default) or ``shortest`` (:data:`ILP_VARIANTS`).
        candidates: the most candidate paths per pair, >= 1.
        time_limit: seconds HiGHS may spend on the MIP (> 0); None: :data:`ILP_TIME_LIMIT`, for at most
            :data:`ILP_MAX_RANKS` ranks.

    Returns:
        A one-step all-to-all Schedule (N ranks, nblocks = N^2, N(N-1) transfers of whole blocks), one explicit
        route per pair; meta ``max_link_load`` (= the MIP's z, blocks of one pair per unit of relative
        bandwidth), ``ilp_status``, ``ilp_objective``, ``ilp_bound``, ``ilp_seconds`` (s), ``candidates``,
        ``candidate_paths``.

    Raises:
        UnsupportedShapeError: fewer than 2 ranks, more than :data:`ILP_MAX_RANKS` without a ``time_limit``,
            a ``time_limit`` <= 0, an unknown variant, candidates < 1, or (``shortest``) a pair with more than
            :data:`~directcoll.topology.paths.MAX_PATHS_PER_PAIR` shortest paths.
        ResourceError: the MIP's estimated memory (:data:`ILP_BYTES_PER_NONZERO` per nonzero) is over the
            budget.
        SolverError: HiGHS fails or the MIP is infeasible; SolverLimitError: the time limit stopped it with no
            feasible point (never, as it starts from a feasible one).
        ScheduleError: a pair with no path at all (unreachable ranks): its block is left uncovered
            (:func:`~directcoll.algorithms.alltoall.routed.path_alltoall`).

    Source: Basu et al. (HPDC'24) Sec. 5.2 (the ILP baseline: "selects a subset of a candidate set of (s, t)
    paths such that the maximum load on any link is minimized", ILP-disjoint and ILP-shortest) and Sec. 5.3
    (optimal to N = 44 there, and at N = 81 within a tolerance of the link MCF); the MIP as written here is
    docs/alltoall.md, "Baselines and compare".

    >>> from directcoll.topology import parse
    >>> s = ilp_alltoall(parse("ring:4"))
    >>> s.meta["ilp_status"], s.meta["max_link_load"]
    ('Optimal', 2.0)
    """
    n = topology.num_compute
    if variant not in ILP_VARIANTS:
        raise UnsupportedShapeError(f"ilp-disjoint: unknown variant {variant!r}; accepted: {', '.join(ILP_VARIANTS)}")
    if n < 2:
        raise UnsupportedShapeError(f"ilp-disjoint: all-to-all needs at least 2 ranks; {topology.spec} has {n}")
    if time_limit is None and n > ILP_MAX_RANKS:
        raise UnsupportedShapeError(f"ilp-disjoint: without a time limit the MIP is solved for 2..{ILP_MAX_RANKS} "
                                    f"ranks only (NP-hard); {topology.spec} has {n}: give a time limit (option "
                                    f"time_limit, --time-limit S; the best solution, its bound and gap are reported)")
    time_limit = ILP_TIME_LIMIT if time_limit is None else float(time_limit)
    if not time_limit > 0:
        raise UnsupportedShapeError(f"ilp-disjoint: time_limit must be > 0 s, got {time_limit}")
    if candidates < 1:
        raise UnsupportedShapeError(f"ilp-disjoint: candidates must be >= 1, got {candidates}")
    # before any path is searched: at least 3 nonzeros per candidate (one link, its pair row, the objective)
    check_memory(f"the ilp-disjoint MIP on {topology.spec} (up to {n * (n - 1) * candidates:,} candidate paths)",
                 ILP_BYTES_PER_NONZERO * 3.0 * n * (n - 1) * candidates)
    src, dst, paths = [], [], []
    if variant == "disjoint":
        for s, t in zip(*ordered_pairs(n), strict=True):
            for path in successive_shortest_paths(topology, int(s), int(t), candidates):
                src.append(s)
                dst.append(t)
                paths.append(path)
        src, dst = np.array(src, np.int64), np.array(dst, np.int64)
        lengths = np.array([len(p) for p in paths])
        ro, links = csr_offsets(lengths), np.concatenate(paths)
    else:
        s_all, d_all, ro_all, l_all, count = shortest_paths(topology)
        first = np.r_[True, (s_all[1:] != s_all[:-1]) | (d_all[1:] != d_all[:-1])]
        rank = np.arange(len(s_all)) - np.maximum.accumulate(np.where(first, np.arange(len(s_all)), 0))
        take = np.minimum(count, candidates)
        # spread the chosen paths over the enumeration: path floor(c * count / take) for c < take
        chosen = (np.floor(np.arange(candidates)[None, :] * count[:, None] / take[:, None]) == rank[:, None])
        chosen &= np.arange(candidates)[None, :] < take[:, None]
        keep = np.flatnonzero(chosen.any(axis=1))
        ro, idx = reorder_csr(ro_all, keep)
        src, dst, links = s_all[keep], d_all[keep], l_all[idx]
    num_paths, num_links = len(src), topology.num_links
    # the candidate paths are small (N(N-1) x candidates lists); the MIP built from them is what grows
    check_memory(f"the ilp-disjoint MIP on {topology.spec} ({num_paths:,} candidate paths, {len(links):,} path links)",
                 ILP_BYTES_PER_NONZERO * float(len(links) + 2 * num_paths + num_links))
    cap = topology.link_bandwidth / topology.link_bandwidth.max()
    pair = src * n + dst
    pair_row = np.unique(pair, return_inverse=True)[1].ravel()
    num_pairs = int(pair_row.max()) + 1
    path_of = np.repeat(np.arange(num_paths), np.diff(ro))
    rows = np.r_[pair_row, num_pairs + links, num_pairs + np.arange(num_links)]
    cols = np.r_[np.arange(num_paths), path_of, np.full(num_links, num_paths)]
    vals = np.r_[np.ones(num_paths), np.ones(len(links)), -cap]
    a = sp.csc_matrix((vals, (rows, cols)), shape=(num_pairs + num_links, num_paths + 1))
    a.sum_duplicates()
    integer = np.r_[np.ones(num_paths, dtype=bool), False]
    lp = LinearProgram(a, np.r_[np.zeros(num_paths), 1.0], np.zeros(num_paths + 1),
                       np.r_[np.ones(num_paths), np.inf], np.r_[np.ones(num_pairs), np.full(num_links, -np.inf)],
                       np.r_[np.ones(num_pairs), np.zeros(num_links)], integer=integer,
                       name=f"ilp-disjoint MIP ({variant}, {num_paths} paths) on {topology.spec}")
    start_x = np.zeros(num_paths + 1)
    start_x[np.flatnonzero(np.r_[True, pair[1:] != pair[:-1]])] = 1.0  # every pair's first candidate
    start_x[-1] = float((link_loads(topology, src, dst, start_x[:num_paths], routes=(ro, links)) / cap).max())
    # a time limit is part of the method: the best solution found by then is the baseline, its status says so
    sol = lp_solve(lp, options={"time_limit": float(time_limit), "random_seed": 0, "threads": 1},
                   accept_limit=True, start=start_x)
    x, status = sol.x, sol.status
    # the largest x_p of every pair (they are 0 or 1 up to HiGHS's integrality tolerance)
    order = np.lexsort((-x[:num_paths], pair_row))
    keep = np.sort(order[np.r_[True, pair_row[order][1:] != pair_row[order][:-1]]])
    ro2, idx = reorder_csr(ro, keep)
    meta = {"algorithm": "ilp-disjoint", "variant": variant, "candidates": int(candidates),
            "candidate_paths": int(num_paths), "ilp_status": status, "ilp_bound": sol.dual_bound,
            "ilp_objective": sol.objective, "ilp_seconds": round(sol.seconds, 3)}
    return path_alltoall(topology, src[keep], dst[keep], np.ones(len(keep), np.int64), ro2, links[idx], meta=meta)


def ilp_gap(meta: dict) -> float:
    """The relative MIP gap (incumbent - bound) / incumbent of an ``ilp-disjoint`` schedule's meta (0 when optimal).

    Args:
        meta: a schedule's meta with ``ilp_objective`` and ``ilp_bound`` (max link loads, blocks per unit of relative
            bandwidth).

    Returns:
        a float >= 0 (0 for an incumbent of 0).

    Raises:
        KeyError: meta without those keys (not an ``ilp-disjoint`` schedule).

    Source: HiGHS's MIP gap (its ``mip_gap``: |incumbent - bound| / |incumbent|); Basu et al. (HPDC'24) Sec. 5.3.

    >>> ilp_gap({"ilp_objective": 25.0, "ilp_bound": 20.0})
    0.2
    """
    objective, bound = float(meta["ilp_objective"]), float(meta["ilp_bound"])
    return max(0.0, (objective - bound) / objective) if objective > 0 else 0.0


def build_ilp(topology: Topology, collective, *, variant=None, ports=None, **options) -> Schedule:
    """Registry builder (algorithm ``ilp-disjoint``) of :func:`ilp_alltoall` (options ``candidates``,
    ``time_limit`` in s); ``variant`` None means ``disjoint``, ``ports`` is ignored.

    Returns:
        The Schedule of :func:`ilp_alltoall`.

    Raises:
        UnsupportedShapeError: another collective than alltoall, another option, or as :func:`ilp_alltoall`.
        ScheduleError: a collective name that is no collective.
        SolverError: as :func:`ilp_alltoall`.

    Source: Basu et al. (HPDC'24) Sec. 5.2 (ILP-disjoint, ILP-shortest); docs/architecture.md, "The layers, bottom up"
    (the registry).

    >>> from directcoll.topology import parse
    >>> build_ilp(parse("ring:4"), "alltoall", variant="shortest").meta["max_link_load"]
    2.0
    """
    require_alltoall(topology, collective, "ilp-disjoint", options, ("candidates", "time_limit"))
    limit = options.get("time_limit")
    return ilp_alltoall(topology, variant or "disjoint", candidates=int(options.get("candidates", ILP_CANDIDATES)),
                        time_limit=None if limit is None else float(limit))
