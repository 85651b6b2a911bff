"""One cell of a sweep: one call into the library, its result as rows of a table (:data:`COLUMNS`).

:func:`run_cell` is what a Dask worker (or this process, ``--serial``) runs; it is a plain function of picklable
arguments, and the same function serves both, so the rows are the same. Each kind calls the library's own
function and reads its result; nothing is recomputed here:

* ``compare``: :func:`directcoll.simulate.params.resolve_network` then :func:`directcoll.reports.compare.compare`;
  one row per (algorithm, variant, size), plus the MCF bound's rows for all-to-all.
* ``find-topology``: :func:`directcoll.synthesis.finder.find_topology`; one row per frontier entry.
* ``alltoall``: :func:`directcoll.synthesis.mcf.link.alltoall_mcf` (or
  :func:`directcoll.synthesis.mcf.bracket.alltoall_mcf_bracket`), with Basu's Theorem 1 and the capacity bound from
  :mod:`directcoll.cost.bounds`; one row.

A cell that the library refuses (:class:`~directcoll.errors.DirectcollError`: a spec that does not build, a
method that does not serve the topology) gives one row whose ``error`` says why instead of failing the sweep.

Source: docs/sweep.md, "Columns"; Swing (De Sensi et al., NSDI'24) Sec. 5; Zhao et al. (NSDI'25) Sec. 5.4; Basu
et al. (HPDC'24) Sec. 3.1, Theorem 1, Fig. 10.

>>> rows, error, retry, _ = run_cell("find-topology", {"nodes": 8, "degree": 2, "alpha": 1e-5,
...     "bandwidth": 12.5e9, "bidirectional": False, "sizes": [1048576], "alltoall": False})
>>> error, [r["spec"] for r in rows if r["best"]]
(None, ['circulant:8:1,3:uni'])
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable

from directcoll.errors import DirectcollError, MissingDependencyError, ResourceError, SolverLimitError

#: per kind, the columns of its table in order: (name, type) with type one of string, int64, float64, bool. Every
#: table starts with :data:`CELL_COLUMNS`; a cell's refusal fills ``error`` and leaves the result columns empty.
CELL_COLUMNS = (("cell", "string"), ("cell_index", "int64"), ("kind", "string"), ("error", "string"),
                ("cell_seconds", "float64"))
COLUMNS = {
    "compare": CELL_COLUMNS + (
        ("topology", "string"), ("topology_spec", "string"), ("ranks", "int64"), ("collective", "string"),
        ("model", "string"), ("routing", "string"), ("network", "string"), ("alpha_s", "float64"),
        ("per_hop_latency_s", "float64"), ("link_bandwidth_Bps", "float64"), ("link_latency_s", "float64"),
        ("gamma_s_per_B", "float64"), ("host_injection_Bps", "float64"), ("forwarding", "string"),
        ("packet_size", "int64"), ("packet_header", "int64"), ("algorithm", "string"), ("variant", "string"),
        ("family", "string"), ("size_bytes", "int64"), ("time_s", "float64"), ("goodput_Bps", "float64"),
        ("winner", "bool")),
    "find-topology": CELL_COLUMNS + (
        ("nodes", "int64"), ("degree", "int64"), ("alpha_s", "float64"), ("bandwidth_Bps", "float64"),
        ("bidirectional_only", "bool"), ("workload_bytes", "string"), ("bases", "int64"), ("candidates", "int64"),
        ("bound_t_l_steps", "int64"), ("bound_t_b_m_over_b", "float64"), ("spec", "string"),
        ("t_l_steps", "int64"), ("t_b_m_over_b", "float64"), ("bw_optimal", "bool"), ("bidirectional", "bool"),
        ("construction", "string"), ("time_s", "float64"), ("best", "bool"), ("alltoall_mcf", "float64")),
    "alltoall": CELL_COLUMNS + (
        ("topology", "string"), ("topology_spec", "string"), ("nodes", "int64"), ("degree", "int64"),
        ("method", "string"), ("method_used", "string"), ("solver", "string"), ("host_bandwidth_Bps", "float64"),
        ("nic_forwarding", "bool"), ("f_lower", "float64"), ("f_upper", "float64"), ("exact", "bool"),
        ("how", "string"), ("reference_bandwidth_Bps", "float64"), ("theorem1_bound", "float64"),
        ("capacity_bound", "float64"), ("pair_flows", "int64"), ("pair_flows_sha256", "string")),
}
#: columns that differ from run to run (wall time): everything else is the same in a serial and a Dask run
VOLATILE_COLUMNS = ("cell_seconds",)


def run_cell(kind: str, params: dict, budget: int | None = None, children_map: Callable | None = None):
    """Run one cell: the library call of ``kind`` with ``params`` (:mod:`directcoll.sweep.plan`'s canonical values).

    Args:
        kind: ``compare``, ``find-topology`` or ``alltoall``.
        params: the cell's parameters (keys starting with ``_`` are not read).
        budget: the memory budget of the cell in bytes (:func:`directcoll.resources.memory_budget_override`), or
            None for this process's own.
        children_map: ``alltoall`` with ``method = "decomposed"``: how the child LPs are mapped
            (:func:`directcoll.synthesis.mcf.children.solve_children`'s ``map``); None solves them inline.

    Returns:
        (rows, error, retry, seconds): rows a list of dicts over the kind's :data:`COLUMNS` (less the cell
        columns); error None, or the refusal's one line (rows then the one :func:`parameter_row`); retry True
        when the refusal may not hold next time (over the memory budget, a solver limit, a missing package), so
        the cell is not stored; seconds the wall time.

    Raises:
        KeyError: an unknown kind or a missing parameter (never for a planned cell). Anything that is not a
            :class:`~directcoll.errors.DirectcollError` (a bug) propagates.

    Source: docs/sweep.md, "Columns" and "Refused cells".

    >>> rows, error, retry, _ = run_cell("alltoall", {"topology": "torus:3x3", "method": "auto", "solver": "auto",
    ...                                               "host_bandwidth": None, "nic_forwarding": False})
    >>> error, rows[0]["method_used"], round(1 / rows[0]["f_lower"], 9)
    (None, 'symmetric', 3.0)
    >>> run_cell("alltoall", {"topology": "xpander:12:4:0", "method": "auto", "solver": "auto",
    ...                       "host_bandwidth": None, "nic_forwarding": False})[1]  # doctest: +ELLIPSIS
    'SpecError: xpander:12:4:0: a lift of K_5 has a multiple of d + 1 = 5 nodes...'
    """
    from contextlib import nullcontext

    from directcoll.resources import memory_budget_override

    run = {"compare": _compare, "find-topology": _find_topology, "alltoall": _alltoall}[kind]
    t0 = time.perf_counter()
    try:
        with memory_budget_override(budget) if budget is not None else nullcontext():
            rows = run(params, children_map)
    except DirectcollError as exc:
        retry = isinstance(exc, ResourceError | SolverLimitError | MissingDependencyError)
        error = " ".join(f"{type(exc).__name__}: {exc}".split())
        return [parameter_row(kind, params)], error, retry, time.perf_counter() - t0
    return rows, None, False, time.perf_counter() - t0


#: per kind, the columns a refused cell still fills from its parameters: column -> parameter
PARAMETER_COLUMNS = {
    "compare": {"topology": "topology", "collective": "collective", "model": "model", "routing": "routing",
                "alpha_s": "alpha", "per_hop_latency_s": "per_hop_latency", "link_bandwidth_Bps": "link_bandwidth",
                "link_latency_s": "link_latency", "gamma_s_per_B": "gamma", "host_injection_Bps": "host_injection",
                "forwarding": "forwarding", "packet_size": "packet_size", "packet_header": "packet_header"},
    "find-topology": {"nodes": "nodes", "degree": "degree", "alpha_s": "alpha", "bandwidth_Bps": "bandwidth",
                      "bidirectional_only": "bidirectional"},
    "alltoall": {"topology": "topology", "method": "method", "solver": "solver",
                 "host_bandwidth_Bps": "host_bandwidth", "nic_forwarding": "nic_forwarding"},
}


def parameter_row(kind: str, params: dict) -> dict:
    """The row of a refused cell: the columns its parameters give (:data:`PARAMETER_COLUMNS`; None where the
    parameter was left to the library's default), so the table says which cell was refused.

    Returns:
        A dict column -> value.

    Raises:
        KeyError: an unknown kind.

    Source: docs/sweep.md, "Refused cells".

    >>> parameter_row("alltoall", {"topology": "xpander:12:4:0", "method": "auto", "solver": "auto",
    ...                            "host_bandwidth": None, "nic_forwarding": False})["topology"]
    'xpander:12:4:0'
    """
    return {column: params.get(key) for column, key in PARAMETER_COLUMNS[kind].items()}


def _compare(p: dict, _children_map) -> list[dict]:
    from directcoll.reports.compare import compare
    from directcoll.reports.contenders import default_policy, select
    from directcoll.simulate.params import resolve_network

    overrides = {k: p[k] for k in ("alpha", "per_hop_latency", "link_bandwidth", "link_latency", "gamma",
                                   "host_injection", "forwarding", "packet_size", "packet_header")}
    topology, params, _notes = resolve_network(p["topology"], p["params"], **overrides)
    contenders, cut = default_policy(topology, p["collective"])
    if p["algorithms"]:  # as `compare --algorithms`: families or registry names, defaults first
        contenders = select(contenders + [k.contender for k in cut], p["algorithms"], topology, p["collective"])
    cmp = compare(topology, p["collective"], p["sizes"], params, p["routing"], p["model"], contenders)
    common = {"topology": p["topology"], "topology_spec": topology.spec, "ranks": topology.num_compute,
              "collective": cmp.collective, "model": p["model"], "routing": p["routing"], "network": params.name,
              "alpha_s": params.alpha, "per_hop_latency_s": params.per_hop_latency,
              "link_bandwidth_Bps": params.link_bandwidth, "link_latency_s": params.link_latency,
              "gamma_s_per_B": params.gamma, "host_injection_Bps": params.host_injection,
              "forwarding": params.forwarding, "packet_size": params.packet_size,
              "packet_header": params.packet_header}
    winners = cmp.winners()
    rows = []
    for e in cmp.entries:
        for j, size in enumerate(cmp.sizes):
            t = float(e.times[j])
            rows.append({**common, "algorithm": e.algorithm, "variant": e.variant, "ports": e.ports,
                         "family": e.family,
                         "size_bytes": int(size), "time_s": t, "goodput_Bps": float(size) / t,
                         "winner": (e.family, e.variant) == winners[j][:2]})
    if cmp.bound_times is not None:  # all-to-all: the MCF bound (Basu Sec. 3.1), no schedule is faster
        for j, size in enumerate(cmp.sizes):
            t = float(cmp.bound_times[j])
            rows.append({**common, "algorithm": "mcf-bound", "variant": cmp.bound["method"], "family": "bound",
                         "size_bytes": int(size), "time_s": t, "goodput_Bps": float(size) / t, "winner": False})
    return rows


def _find_topology(p: dict, _children_map) -> list[dict]:
    from directcoll.synthesis.finder import find_topology, theoretical_bound
    from directcoll.units import format_size

    n, d = p["nodes"], p["degree"]
    result = find_topology(n, d, alpha=p["alpha"], m_over_b=[m / p["bandwidth"] for m in p["sizes"]],
                           bidirectional_only=p["bidirectional"])
    mcf = {}
    if p["alltoall"]:
        from directcoll.synthesis.mcf.link import alltoall_mcf

        mcf = {c.spec: float(alltoall_mcf(c.spec, workers=1).value) for c in result.frontier}
    bound_t_l, bound_t_b = theoretical_bound(n, d)
    common = {"nodes": n, "degree": d, "alpha_s": p["alpha"], "bandwidth_Bps": p["bandwidth"],
              "bidirectional_only": p["bidirectional"], "workload_bytes": ",".join(map(format_size, p["sizes"])),
              "bases": result.bases, "candidates": result.candidates, "bound_t_l_steps": int(bound_t_l),
              "bound_t_b_m_over_b": float(bound_t_b)}
    rows = []
    for c in result.frontier:
        entry = c.to_dict()
        rows.append({**common, "spec": c.spec, "t_l_steps": entry["t_l_steps"], "t_b_m_over_b": entry["t_b_m_over_b"],
                     "bw_optimal": entry["bw_optimal"], "bidirectional": entry["bidirectional"],
                     "construction": entry["construction"], "time_s": float(result.times[c.spec]),
                     "best": c.spec == result.best.spec, "alltoall_mcf": mcf.get(c.spec)})
    return rows


def _alltoall(p: dict, children_map) -> list[dict]:
    from directcoll.cost.bounds import capacity_bound, theorem1_bound
    from directcoll.topology.spec import parse

    topology = parse(p["topology"])
    n = topology.num_compute
    d = int(topology.out_degree[:n].max())
    host, nic = p["host_bandwidth"], p["nic_forwarding"]
    row = {"topology": p["topology"], "topology_spec": topology.spec, "nodes": n, "degree": d, "method": p["method"],
           "solver": p["solver"], "host_bandwidth_Bps": host, "nic_forwarding": nic}
    if p["method"] == "bracket":
        from directcoll.synthesis.mcf.bracket import alltoall_mcf_bracket

        b = alltoall_mcf_bracket(topology, rel_gap=p["rel_gap"], max_iterations=p["max_iterations"],
                                 host_bandwidth=host, nic_forwarding=nic)
        row.update(method_used="bracket", f_lower=float(b.lower), f_upper=float(b.upper), exact=False,
                   how=f"Frank-Wolfe bracket, {b.iterations} iterations"
                       + ("" if b.converged else f" (gap over {p['rel_gap']:g})"),
                   reference_bandwidth_Bps=float(topology.link_bandwidth.max()))
    else:
        from directcoll.synthesis.mcf.link import alltoall_mcf

        r = alltoall_mcf(topology, method=p["method"], host_bandwidth=host, nic_forwarding=nic, solver=p["solver"],
                         workers=1, map=children_map)
        row.update(method_used=r.method, f_lower=float(r.value), f_upper=float(r.value), exact=True, how=r.solver,
                   reference_bandwidth_Bps=float(r.reference_bandwidth))
        if r.commodity_source is not None:  # per-(s, d) flows (decomposed): their count and digest
            digest = hashlib.sha256()
            for a in (r.commodity_source, r.commodity_dest, r.commodity_link, r.commodity_value):
                digest.update(a.tobytes())
            row.update(pair_flows=len(r.commodity_source), pair_flows_sha256=digest.hexdigest())
    row["theorem1_bound"] = float(theorem1_bound(n, d))
    row["capacity_bound"] = float(capacity_bound(topology, host_bandwidth=host, nic_forwarding=nic))
    return [row]
