"""A job's ranks placed on a physical network: ``placed(LOGICAL,PHYSICAL,order=ORDER)``.

Algorithms see the job's logical network (its ranks' grid: Swing on a 1D torus of 16 ranks computes its peers from
rank numbers), while the bytes cross the machine's links. A batch system seldom gives a job the network its ranks
are numbered for: Fugaku runs a job declared as a 1D torus on a block of its 6D mesh/torus, the ring laid along a
Hamiltonian cycle of the block (Tofu's virtual torus; Ajima et al., "Tofu: a 6D mesh/torus interconnect for
exascale computers", IEEE Computer 42(11), 2009), so ranks far apart on the ring can be one link apart.

:func:`placed` keeps LOGICAL's grid shape (for the algorithms) and takes PHYSICAL's links, its compute nodes
renumbered by rank: rank r runs on the physical compute node the order gives it. Routing is then per pair over
the physical links (adaptive: every minimal path; dimension order refuses it, having no grid of its own).

Orders: ``rows`` (rank r on physical node r) and ``gray`` (rank r on the node whose coordinates in PHYSICAL's grid
are the r-th word of the reflected mixed-radix Gray code, the last coordinate fastest: consecutive ranks are one
link apart, and on a hypercube the ring closes too).

Source: docs/topology.md, "Placement"; Gray code: F. Gray, US patent 2,632,058 (1953); mixed radix reflected: D. E.
Knuth, The Art of Computer Programming 4A, Sec. 7.2.1.1 (reflected mixed-radix Gray code).
"""

from __future__ import annotations

import numpy as np

from directcoll.errors import SpecError, TopologyError
from directcoll.topology.model import Topology

#: the orders :func:`placed` accepts
ORDERS = ("rows", "gray")


def gray_words(shape) -> np.ndarray:
    """The reflected mixed-radix Gray code over ``shape``: int64 (prod(shape), D) coordinates, consecutive words
    one digit apart by one (the last digit fastest).

    Raises:
        Nothing: any shape of positive sides.

    Source: D. E. Knuth, TAOCP 4A, Sec. 7.2.1.1 (reflected mixed-radix Gray code; Algorithm H's order).

    >>> gray_words((2, 3)).tolist()
    [[0, 0], [0, 1], [0, 2], [1, 2], [1, 1], [1, 0]]
    """
    shape = tuple(int(d) for d in shape)
    words = np.zeros((1, 0), dtype=np.int64)
    for d in shape:  # append a digit: sweep it up under even prefixes, down under odd ones
        k = len(words)
        digit = np.tile(np.r_[np.arange(d), np.arange(d)[::-1]], (k + 1) // 2)[:k * d].reshape(k, d)
        words = np.column_stack([np.repeat(words, d, axis=0), digit.reshape(-1)])
    return words


def placed_spec(logical: str, physical: str, order: str = "rows") -> str:
    """The canonical spec of :func:`placed` (``order=rows`` left out).

    Raises:
        Nothing: formats its arguments.

    Source: docs/topology.md, "Placement".

    >>> placed_spec("torus:16", "hypercube:4", "gray")
    'placed(torus:16,hypercube:4,order=gray)'
    """
    return f"placed({logical},{physical}" + ("" if order == "rows" else f",order={order}") + ")"


def placed(logical: Topology, physical: Topology, order: str = "rows") -> Topology:
    """A job's logical network (its ranks' grid) placed on a physical network: PHYSICAL's links, LOGICAL's shape.

    Rank r runs on the physical compute node ``order`` gives it (``rows``: node r; ``gray``: the r-th word of the
    reflected Gray code of PHYSICAL's grid); the links are PHYSICAL's with its compute nodes renumbered by rank
    (switches keep their ids), their bandwidth and latency unchanged. The result has kind ``placed``, LOGICAL's
    grid shape and wrap-around (what algorithms read), no Cayley structure (routing is per pair, over the physical
    links) and ``params`` naming both specs, LOGICAL's kind (``logical_kind``: ``compare`` runs the contenders of
    that kind of job), the order and ``nodes``, the physical node of every rank.

    Parameters:
        logical: the job's network as its ranks are numbered (a grid for Swing, recursive doubling, ...).
        physical: the machine's network the job runs on, with as many compute nodes.
        order: ``rows`` or ``gray`` (PHYSICAL must have a grid shape).

    Returns:
        The placed :class:`Topology`; its spec ``placed(LOGICAL,PHYSICAL,order=ORDER)`` rebuilds it.

    Raises:
        SpecError: an unknown order, or ``gray`` on a physical network without a grid shape.
        TopologyError: the two networks hold different numbers of compute nodes.

    Source: docs/topology.md, "Placement"; Tofu's virtual torus (Ajima et al., IEEE Computer 42(11), 2009).

    >>> from directcoll.topology import parse
    >>> t = placed(parse("torus:16"), parse("hypercube:4"), "gray")
    >>> t.shape, t.num_links, t.params["nodes"][:4]
    ((16,), 64, (0, 1, 3, 2))
    """
    spec = placed_spec(logical.spec, physical.spec, order)
    if order not in ORDERS:
        raise SpecError(f"{spec}: unknown order {order!r}; accepted: {', '.join(ORDERS)}")
    n = logical.num_compute
    if physical.num_compute != n:
        raise TopologyError(f"{spec}: the job has {n} ranks but {physical.spec} has {physical.num_compute} compute "
                            "nodes; a placement puts one rank on each")
    if order == "gray":
        if physical.shape is None:
            raise SpecError(f"{spec}: order=gray needs a physical network with a grid shape; {physical.spec} has "
                            "none (use order=rows)")
        nodes = physical.node_at(gray_words(physical.shape)).astype(np.int64)
    else:
        nodes = np.arange(n, dtype=np.int64)
    rank_of = np.arange(physical.num_nodes, dtype=np.int64)  # switches keep their ids
    rank_of[nodes] = np.arange(n, dtype=np.int64)
    params = {"logical": logical.spec, "logical_kind": logical.kind, "physical": physical.spec, "order": order,
              "nodes": tuple(int(v) for v in nodes)}
    return Topology(spec=spec, kind="placed", num_compute=n, num_nodes=physical.num_nodes,
                    link_src=rank_of[physical.link_src], link_dst=rank_of[physical.link_dst],
                    link_bandwidth=physical.link_bandwidth.astype(float),
                    link_latency=physical.link_latency.astype(float),
                    shape=logical.shape, wraps=logical.wraps, params=params)
