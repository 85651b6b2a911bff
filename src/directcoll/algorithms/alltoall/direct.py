"""The direct all-to-all (Basu et al. Sec. 4 baseline): every rank sends each other rank its block in one step,
as NCCL and Open MPI do, and the network routes the N(N-1) messages (minimal paths, or DOR when simulated with
``--routing dor``).
"""

from __future__ import annotations

import numpy as np

from directcoll.errors import UnsupportedShapeError
from directcoll.schedule.ir import COPY, Collective, Schedule, ScheduleBuilder
from directcoll.topology.model import Topology


def direct_alltoall(nranks: int) -> Schedule:
    """N(N-1) point-to-point copies in one step: block i N + j from rank i to rank j (k = 1 block per pair).

    Raises:
        UnsupportedShapeError: nranks < 2.
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
    """Registry builder: the direct all-to-all on the topology's compute nodes. Raises UnsupportedShapeError for
    another collective or options."""
    if options:
        raise UnsupportedShapeError(f"direct takes no options; got {', '.join(sorted(options))}")
    if Collective.parse(collective) is not Collective.ALLTOALL:
        raise UnsupportedShapeError(f"direct serves only alltoall, not {collective}")
    return direct_alltoall(topology.num_compute)
