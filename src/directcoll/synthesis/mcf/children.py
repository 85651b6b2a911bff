"""Child LPs (Basu et al. Sec. 3.1.2, eq. 10-14): per-(source, destination) flows from the source-aggregated
master's flow, one LP per source, in a process pool.
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

import numpy as np
import scipy.sparse as sp

from directcoll.errors import SolverError, SolverLimitError, UnsupportedShapeError
from directcoll.synthesis.mcf.formulations import FLOW_EPS, flow_lp, solve_lp
from directcoll.synthesis.mcf.network import FlowNetwork

_CHILD_STATE: dict = {}
#: Relative capacity slack of a child LP that is infeasible with the master's flow as it is (see :func:`_child`).
CHILD_CAPACITY_SLACK = 1e-7


def _child_init(num_nodes, num_compute, link_src, link_dst, solver, options) -> None:
    _CHILD_STATE.update(num_nodes=num_nodes, num_compute=num_compute, link_src=link_src, link_dst=link_dst,
                        solver=solver, options=options)


def _child(task, state=None):
    """Per-destination flows of one source: min total flow within the master's flow (eq. 10-14).

    All of a child's commodities leave the same source, so eq. 10-14 is a single-commodity min-cost flow in
    disguise: the per-destination flows add up to one flow g from s that sinks F at every destination, within
    the master's flow, at the same total; conversely any such g splits back into per-destination flows of that
    total. So the child solves for g (E_s columns instead of (N - 1) E_s; unit costs make the optimal g
    acyclic) and splits it exactly by proportional flow decomposition on its DAG: with M[u, v] = g(u, v) /
    in(v), destination d's flow arriving at v is a_d(v) = [(I - M)^-1]_{v, d}, and f_d(u, v) = a_d(v) g(u, v) /
    in(v) conserves, delivers exactly F to d and sums over d to g (the tests check all three).

    Scaled by 1/F (demand 1 per destination, capacities f'/F) so HiGHS's absolute tolerances are relative to F.
    The master's flow conserves only to the LP tolerance, so a child can come out infeasible by ~1e-9 (seen on
    genkautz:4:200); it is then solved again with capacities :data:`CHILD_CAPACITY_SLACK` larger.
    """
    from scipy.sparse.linalg import splu

    s, links, flow, value = task
    st = _CHILD_STATE if state is None else state
    n, v = st["num_compute"], st["num_nodes"]
    dests = np.r_[np.arange(s), np.arange(s + 1, n)]
    cap = flow / value
    src, dst = st["link_src"][links], st["link_dst"][links]
    for slack in (0.0, CHILD_CAPACITY_SLACK):
        lp = flow_lp(v, src, dst, cap * (1 + slack), np.array([s]), np.zeros(len(dests), dtype=np.int64), dests,
                      fixed_demand=1.0)
        lp.name = f"all-to-all MCF child LP of source {s}"
        try:
            g, _, how = solve_lp(lp, st["solver"], st["options"])
            break
        except SolverLimitError:
            raise
        except SolverError:
            if slack:
                raise
    how += f" (capacities +{slack:g})" if slack else ""
    g = g[: len(links)]
    used = g > FLOW_EPS
    g, links, src, dst = g[used], links[used], src[used], dst[used]
    inflow = np.bincount(dst, weights=g, minlength=v)
    share = g / inflow[dst]
    m = sp.csc_matrix((share, (src, dst)), shape=(v, v))
    rhs = np.zeros((v, len(dests)))
    rhs[dests, np.arange(len(dests))] = 1.0
    arrive = splu((sp.identity(v, format="csc") - m).tocsc()).solve(rhs)  # a_d(u), one column per destination
    per_dest = arrive[dst] * share[:, None]  # (E_s, N - 1)
    j, c = np.nonzero(per_dest > FLOW_EPS)
    return s, dests[c], links[j], per_dest[j, c] * value, how


def _child_task(init, task):
    """One child LP (:func:`_child`) with its network state ``init`` passed along instead of a pool's
    initializer: what :func:`solve_children` hands to a ``map`` (a module-level function of picklable arguments,
    so Dask or any executor can ship it)."""
    num_nodes, num_compute, link_src, link_dst, solver, options = init
    return _child(task, dict(num_nodes=num_nodes, num_compute=num_compute, link_src=link_src, link_dst=link_dst,
                             solver=solver, options=options))


def solve_children(net: FlowNetwork, flows, value: float, solver: str, options, workers, sources=None, map=None):
    """Basu eq. 10-14: split every source's aggregated flow into per-destination flows of ``value`` each, one
    child LP per source, in a process pool.

    Args:
        net: the flow network.
        flows: the master's per-source flows (source, link, value): int64, int64, float64 (K,), capacity units.
        value: F, the demand every destination receives.
        solver, options: as :func:`~directcoll.synthesis.mcf.formulations.solve_lp`.
        workers: processes (None: all cores; 1 runs inline).
        sources: the sources to split (default all compute nodes).
        map: None (default: ``workers`` decides), or a callable ``map(fn, tasks)`` returning ``fn(task)`` for every
            task in order, e.g. one that runs them on a Dask cluster (:mod:`directcoll.sweep`); ``fn`` is the
            module's ``_child_task`` bound to the network by :func:`functools.partial`, picklable. ``workers`` is
            then not used. Every child LP is the same LP whichever runs it, so the result is the same.

    Returns:
        (source, dest, link, value, hows): per-(s, d) flows, int64, int64, int64, float64 (K',), and how every
        child LP was solved.

    Raises:
        UnsupportedShapeError: workers < 1.
        SolverError, SolverLimitError: a child LP fails.
    """
    src, link, val = flows
    order = np.argsort(src, kind="stable")
    bounds = np.searchsorted(src[order], np.arange(net.num_compute + 1))
    tasks = [(s, link[order[bounds[s]: bounds[s + 1]]], val[order[bounds[s]: bounds[s + 1]]], value)
             for s in (range(net.num_compute) if sources is None else sources)]
    init = (net.num_nodes, net.num_compute, net.link_src, net.link_dst, solver, options)
    workers = (os.cpu_count() or 1) if workers is None else int(workers)
    if workers < 1:
        raise UnsupportedShapeError(f"workers must be >= 1, got {workers}")
    if map is not None:
        from functools import partial

        results = list(map(partial(_child_task, init), tasks))
    elif workers == 1:
        saved = dict(_CHILD_STATE)
        try:
            _child_init(*init)
            results = [_child(t) for t in tasks]
        finally:
            _CHILD_STATE.clear()
            _CHILD_STATE.update(saved)
    else:
        chunk = max(1, len(tasks) // (4 * workers))
        with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn"), initializer=_child_init,
                                 initargs=init) as pool:
            results = list(pool.map(_child, tasks, chunksize=chunk))
    return (np.concatenate([np.full(len(r[1]), r[0], dtype=np.int64) for r in results]),
            np.concatenate([r[1] for r in results]).astype(np.int64),
            np.concatenate([r[2] for r in results]).astype(np.int64),
            np.concatenate([r[3] for r in results]), [r[4] for r in results])

