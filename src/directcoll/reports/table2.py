"""Table 2 of the Swing paper, regenerated: deficiencies by formula (p -> infinity) and measured on tori.

For every row the paper's entry (its formula, evaluated on the concrete torus where it is a formula), our
closed form, and the value :func:`~directcoll.cost.analytic.analyze` measures on the schedule the project
builds, on 8^D tori (the shapes of Fig. 11) and, for Swing-B, on 64x64 (Fig. 6). The paper's table prints
the D-th root as a p-th root ("sqrt[p]{p}"); we read it as p^(1/D), the only reading that depends on D.

Source: Swing (De Sensi et al., NSDI'24) Table 2, Sec. 2.3 (deficiencies Lambda, Psi, Xi of Eq. (1)) and
Sec. 4.1 (Xi of Swing-B); docs/cost.md.

>>> rows = table2(dims=(2,), side=4, extra=())
>>> [r.algorithm for r in rows][-1], [float(x) for x in rows[-1].measured[:2]]
('swing (B)', [2.0, 1.0])
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from directcoll.algorithms.butterfly import rho
from directcoll.cost.analytic import analyze
from directcoll.registry import build
from directcoll.topology import parse

#: (row label, registry name, variant, ports: "max" for 2D or an int)
ROWS = [
    ("ring", "ring", None, "max"),
    ("rec.doub. (L)", "recursive-doubling", "latency", 1),
    ("rec.doub. (B)", "rabenseifner", "bandwidth", 1),
    ("bucket", "bucket", "bandwidth", "max"),
    ("swing (L)", "swing", "latency", "max"),
    ("swing (B)", "swing", "bandwidth", "max"),
]

#: The paper's entries as printed (Lambda, Psi, Xi), with p^(1/D) for the garbled root.
PAPER = {
    "ring": ("2p/log2 p", "1", "1"),
    "rec.doub. (L)": ("1", "D log2 p", "2D p^(1/D)"),
    "rec.doub. (B)": ("2", "2D", "(2^D-1)/2^(D-2)"),
    "bucket": ("2D p^(1/D)/log2 p", "1", "1"),
    "swing (L)": ("1", "D log2 p", "(4/3) D p^(1/D)"),
    "swing (B)": ("2", "1", "1.19, 1.03, 1.008 for D = 2, 3, 4"),
}


def _paper_value(label: str, which: int, d: int, side: int) -> float:
    p = side ** d
    lg = np.log2(p)
    root = p ** (1 / d)
    table = {
        "ring": (2 * p / lg, 1, 1),
        "rec.doub. (L)": (1, d * lg, 2 * d * root),
        "rec.doub. (B)": (2, 2 * d, (2 ** d - 1) / 2 ** (d - 2)),
        "bucket": (2 * d * root / lg, 1, 1),
        "swing (L)": (1, d * lg, 4 / 3 * d * root),
        "swing (B)": (2, 1, {2: 1.19, 3: 1.03, 4: 1.008}.get(d, float("nan"))),
    }
    return float(table[label][which])


def swing_b_congestion_limit(d: int, terms: int = 60) -> float:
    """Xi of Swing-B for p -> infinity: (1 - 2^-D) sum_sigma delta(sigma) 2^(-D sigma) (Sec. 4.1).

    How we read Sec. 4.1: its bandwidth term (n / 2D) beta sum_s delta(sigma(s)) / 2^(s+1), counted for the
    reduce-scatter and the allgather (twice) and divided by n beta / D, with D steps s = D sigma + j per sigma on
    a square torus (sum_j 2^-(D sigma + j) = 2 (1 - 2^-D) 2^(-D sigma)). Read literally, the printed term is half
    of that and would give Xi < 1; ours gives 1.2, 1.037, 1.0084 for D = 2, 3, 4 against Table 2's 1.19, 1.03,
    1.008.

    Args:
        d: the number of dimensions D >= 1; terms: how many sigma to sum (the tail is below 2^-terms).

    Returns:
        Xi, a float (dimensionless).

    Raises:
        Nothing: a finite sum.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 4.1 and Table 2 (1.19, 1.03, 1.008 for D = 2, 3, 4).

    >>> round(swing_b_congestion_limit(2), 3), round(swing_b_congestion_limit(3), 3)
    (1.2, 1.037)
    """
    sigma = np.arange(terms)
    return float((1 - 2.0 ** -d) * np.sum(np.abs(rho(sigma)).astype(float) * 2.0 ** (-d * sigma)))


def our_formula(label: str, d: int) -> tuple[str, str, str]:
    """Our closed forms for p -> infinity (Xi as defined in :mod:`directcoll.cost.analytic`).

    Args:
        label: a row label of :data:`ROWS`; d: the number of dimensions D.

    Returns:
        (Lambda, Psi, Xi) as strings.

    Raises:
        Nothing of ours: an unknown label raises KeyError.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 2.3.1-2.3.4, 3.1, 4.1 and Table 2 (our reading, docs/cost.md).

    >>> our_formula("swing (B)", 2)
    ('2', '1', '1.2')
    """
    xi_rdb = (2 ** d - 1) / (2 ** d - 2) if d > 1 else float("inf")
    return {
        "ring": ("2(p-1)/log2 p", "1", "1"),
        "rec.doub. (L)": ("1", "D log2 p", "D (p^(1/D) - 1) / log2 p  (mean distance)"),
        "rec.doub. (B)": ("2", "2D", f"(2^D-1)/(2^D-2) = {xi_rdb:.4g}" if d == 2 else f"{xi_rdb:.4g}"),
        "bucket": ("2D (p^(1/D) - 1)/log2 p", "1", "1"),
        "swing (L)": ("1", "log2 p / 2 (2D ports; D log2 p on one)", "D sum_s delta(s) / log2 p  (mean distance)"),
        "swing (B)": ("2", "1", f"{swing_b_congestion_limit(d):.4g}"),
    }[label]


@dataclass(frozen=True)
class Table2Row:
    """One measured row of Table 2 on one torus.

    Attributes:
        algorithm: the row label; torus: the spec.
        paper: (Lambda, Psi, Xi) of the paper's formulas evaluated on this torus.
        measured: (Lambda, Psi, Xi) of our schedule (:func:`~directcoll.cost.analytic.analyze`).
        distance_sum: sum over steps of the largest hop distance (the paper's Lambda Xi for the latency-optimal rows).
        formula: our closed forms (:func:`our_formula`).

    Raises:
        Nothing: a record built by :func:`table2`.

    Source: Swing (De Sensi et al., NSDI'24) Table 2.
    """
    algorithm: str
    torus: str
    paper: tuple[float, float, float]          # the paper's formula evaluated on this torus
    measured: tuple[float, float, float]       # Lambda, Psi, Xi of our schedule
    distance_sum: float                        # sum over steps of the largest hop distance (paper's L Xi)
    formula: tuple[str, str, str]


def table2(dims=(2, 3, 4), side: int = 8, extra=("torus:64x64",)) -> list[Table2Row]:
    """Measure every Table 2 row on ``side``^D tori; ``extra`` tori are measured for Swing-B only.

    The ring row is measured on 2D tori only (the paper's Hamiltonian rings exist for D = 2; on 8^4 a ring
    schedule has 67 million transfers).

    Returns:
        A list of :class:`Table2Row`, rows in :data:`ROWS` order, tori in ``dims`` order.

    Raises:
        SpecError: a ``side`` or ``extra`` spec that is not a torus.
        ResourceError: a torus whose schedules are over the memory budget.

    Source: Swing (De Sensi et al., NSDI'24) Table 2; Fig. 11 (8^D tori) and Fig. 6 (64x64).

    >>> len(table2(dims=(2,), side=4, extra=()))
    6
    """
    rows = []
    specs = [(d, "torus:" + "x".join([str(side)] * d)) for d in dims]
    for label, name, variant, ports in ROWS:
        todo = specs + ([(len(e.split(":")[1].split("x")), e) for e in extra] if label == "swing (B)" else [])
        for d, spec in todo:
            if label == "ring" and d != 2:
                continue
            topo = parse(spec)
            s = build(name, topo, "allreduce", variant=variant, ports=2 * d if ports == "max" else ports)
            r = analyze(s, topo, link_loads_too=False)
            hops = r.congestion_deficiency * r.port_time.sum() / max(r.port_time.max(), 1e-300)
            side_here = topo.shape[0]
            rows.append(Table2Row(
                label, spec, tuple(_paper_value(label, i, d, side_here) for i in range(3)),
                (r.latency_deficiency, r.bandwidth_deficiency, r.congestion_deficiency),
                float(_distance_sum(s, topo)) if hops else 0.0, our_formula(label, d)))
    return rows


def _distance_sum(schedule, topology) -> float:
    from directcoll.topology.paths import hop_distance

    hops = hop_distance(topology, schedule.src, schedule.dst)
    out = np.zeros(schedule.num_steps)
    np.maximum.at(out, schedule.step, hops)
    return float(out.sum())


def to_markdown(rows: list[Table2Row]) -> str:
    """The rows as two Markdown tables: measured against the paper per torus, then the paper's and our formulas.

    Returns:
        The Markdown text (docs/cost.md's tables).

    Raises:
        Nothing: formats the rows.

    Source: Swing (De Sensi et al., NSDI'24) Table 2.

    >>> print(to_markdown(table2(dims=(2,), side=4, extra=())[:1]).splitlines()[2])
    | ring | torus:4x4 | 8 | 7.5 | 1 | 1 | 1 | 1 | 30 |
    """
    lines = ["| algorithm | torus | Λ paper | Λ ours | Ψ paper | Ψ ours | Ξ paper | Ξ ours | Σ distances |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r.algorithm} | {r.torus} | {r.paper[0]:.3g} | {r.measured[0]:.3g} | {r.paper[1]:.3g} | "
                     f"{r.measured[1]:.3g} | {r.paper[2]:.4g} | {r.measured[2]:.4g} | {r.distance_sum:.0f} |")
    lines += ["", "| algorithm | paper Λ, Ψ, Ξ | ours for p → ∞: Λ, Ψ, Ξ |", "|---|---|---|"]
    for label, *_ in ROWS:
        ours = {d: our_formula(label, d) for d in (2, 3, 4)}
        xi = ", ".join(f"{ours[d][2]}" for d in (2, 3, 4)) + " for D = 2, 3, 4" \
            if label in ("swing (B)", "rec.doub. (B)") else ours[2][2]
        lines.append(f"| {label} | {'; '.join(PAPER[label])} | {ours[2][0]}; {ours[2][1]}; {xi} |")
    return "\n".join(lines)


def to_dicts(rows: list[Table2Row]) -> list[dict]:
    """The rows as JSON-serializable dicts (``dataclasses.asdict``). Raises: Nothing.
    Source: Swing (NSDI'24) Table 2; docs/architecture.md, "Engines, runtimes and scale" (machine-readable output).
    """
    return [asdict(r) for r in rows]
