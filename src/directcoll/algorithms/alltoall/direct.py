"""The direct all-to-all (Basu et al., HPDC'24, Sec. 5.2 baseline): every rank sends each other rank its block in one
step, as NCCL and Open MPI do ("NCCL/OMPI native schedules perform N-1 point-to-point send/rcv operations (flows) per
rank"), and the network routes the N(N-1) messages (minimal paths, or DOR when simulated with ``--routing dor``).
"""

from __future__ import annotations

import numpy as np

from directcoll.errors import UnsupportedShapeError
from directcoll.schedule.ir import COPY, Collective, Schedule, ScheduleBuilder
from directcoll.topology.model import Topology


def direct_alltoall(nranks: int) -> Schedule:
    """N(N-1) point-to-point copies in one step: block i N + j from rank i to rank j (k = 1 block per pair).

    Args:
        nranks: N, the number of ranks, >= 2.

    Returns:
        An all-to-all Schedule of N ranks, nblocks = N^2 blocks (one per ordered pair, m = vector / N bytes
        each), 1 step and N(N-1) copy transfers without routes (the simulator routes them), pairs in rank order.

    Raises:
        UnsupportedShapeError: nranks < 2.

    Source: Basu et al. (HPDC'24) Sec. 5.2, the NCCL / Open MPI native all-to-all baseline of Fig. 4; the block
    layout is docs/architecture.md, "Schedule IR" (all-to-all block i N + j goes from rank i to rank j).

    >>> s = direct_alltoall(3)
    >>> s.nblocks, s.src.tolist(), s.dst.tolist()
    (9, [0, 0, 1, 1, 2, 2], [1, 2, 0, 2, 0, 1])
    """
    if nranks < 2:
        raise UnsupportedShapeError(f"direct all-to-all needs at least 2 ranks, got {nranks}")
    i, j = np.divmod(np.arange(nranks * nranks), nranks)
    off = i != j
    b = ScheduleBuilder(Collective.ALLTOALL, nranks, nranks * nranks)
    block = (i * nranks + j)[off]
    b.add(0, i[off], j[off], COPY, block, block + 1)
    return b.build(meta={"algorithm": "direct", "variant": "direct"})


def build_direct(topology: Topology, collective, *, variant=None, ports=None, **options) -> Schedule:
    """Registry builder (algorithm ``direct``): :func:`direct_alltoall` on the topology's N compute nodes.

    Args:
        topology: any topology; only its number of compute nodes is used.
        collective: must be ``alltoall`` (a name or a :class:`Collective`).
        variant, ports: ignored (the algorithm has one form).
        **options: none accepted.

    Returns:
        The Schedule of :func:`direct_alltoall` (N ranks, nblocks = N^2, 1 step, N(N-1) transfers).

    Raises:
        UnsupportedShapeError: any option, another collective than alltoall, or fewer than 2 compute nodes.
        ScheduleError: a collective name that is not a collective at all (:meth:`Collective.parse`).

    Source: Basu et al. (HPDC'24) Sec. 5.2 (the native all-to-all baseline); the registry interface is
    docs/architecture.md, "The layers, bottom up" (every algorithm listed explicitly in ``registry.py``).

    >>> from directcoll.topology import parse
    >>> len(build_direct(parse("ring:4"), "alltoall").src)
    12
    """
    if options:
        raise UnsupportedShapeError(f"direct takes no options; got {', '.join(sorted(options))}")
    if Collective.parse(collective) is not Collective.ALLTOALL:
        raise UnsupportedShapeError(f"direct serves only alltoall, not {collective}")
    return direct_alltoall(topology.num_compute)
