"""Swing at scale: its step pattern, read from the description its schedule is built from, and that pattern's memory.

The bandwidth-optimal Swing schedule on a torus whose sides are not all powers of two tracks N^2 pieces in total:
at an allgather step in dimension w, the 1D transfer x -> y with block set M moves, from every rank a with
a_w = x, the product set M x prod_{i != w} K_i(a_i) (K_i(c): the blocks coordinate c knows in dimension i so far),
cut into as many pieces as it has runs. The step model needs only the amount,

    |M| * prod_{i != w} |K_i(a_i)|   blocks,

which :func:`~directcoll.algorithms.swing.schedule.product_steps` gives from the D small 1D plans (d_i x d_i masks):
O(N) per step instead of O(N^2) pieces. :func:`swing_pattern` reads exactly that from
:func:`~directcoll.algorithms.swing.schedule.swing_steps`, the description :func:`~directcoll.algorithms.swing.swing`
builds its schedule from (there the pieces are cut and checked to carry those widths), so the two cannot drift.
The power-of-two butterfly and the latency-optimal variant come from the same description too. Columns are
allocated once (:meth:`~directcoll.schedule.phases.Phases.pattern`): the peak is the pattern itself,
:data:`~directcoll.schedule.pattern.BYTES_PER_TRANSFER` per transfer.

Source: Swing (De Sensi et al., NSDI'24) Sec. 3.1.1, 3.1.2, 3.2 (Fig. 3), 4.1-4.2 and App. A.2; docs/architecture.md,
"Cost and simulation" (step patterns); docs/simulation.md, "Symmetry".

>>> from directcoll.topology import parse
>>> from directcoll.schedule.pattern import pattern_of
>>> from directcoll.algorithms.swing.schedule import swing
>>> t = parse("torus:6x3")
>>> swing_pattern(t).equivalent(pattern_of(swing(t)))
True
"""

from __future__ import annotations

from directcoll.algorithms.swing.schedule import swing_steps
from directcoll.errors import UnsupportedShapeError
from directcoll.schedule.ir import Collective
from directcoll.schedule.pattern import BYTES_PER_TRANSFER, StepPattern
from directcoll.topology.model import Topology


def swing_pattern(topology: Topology, collective=Collective.ALLREDUCE, *, variant: str | None = None,
                  ports: int | None = None) -> StepPattern:
    """The step pattern of :func:`~directcoll.algorithms.swing.schedule.swing` without its schedule: the widths of
    :func:`~directcoll.algorithms.swing.schedule.swing_steps`, so equal to ``pattern_of(swing(...))`` up to the
    order of transfers within a step.

    Args:
        topology, collective, variant, ports: as :func:`~directcoll.algorithms.swing.schedule.swing`.

    Returns:
        A :class:`~directcoll.schedule.pattern.StepPattern` with one distinct step per step of the schedule
        (2 sum_i ceil(log2 d_i) for the bandwidth-optimal allreduce on a torus of sides d_i), about N x ports
        transfers each; meta as :func:`~directcoll.algorithms.swing.schedule.swing`'s.

    Raises:
        UnsupportedShapeError: as :func:`~directcoll.algorithms.swing.schedule.swing` (latency variant with a
            collective other than allreduce, an unknown variant, ports out of range, libswing on an odd side).
        ScheduleError: an unknown collective name.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 3.1-3.2, 4.1-4.2 and App. A.2; docs/architecture.md, "Cost and
    simulation".

    >>> from directcoll.topology import parse
    >>> p = swing_pattern(parse("torus:24x23x2"), "allreduce")  # 1,104 ranks, 6 ports
    >>> p.num_steps, len(p.src) // p.num_steps >= 6 * 1_104
    (22, True)
    """
    return swing_steps(topology, collective, variant=variant, ports=ports).pattern()


def pattern_bytes(topology: Topology, collective=Collective.ALLREDUCE, variant: str | None = None,
                  ports: int | None = None) -> float | None:
    """The memory :func:`swing_pattern` needs: the transfers of its description (counted from the 1D plans,
    without building them) times :data:`~directcoll.schedule.pattern.BYTES_PER_TRANSFER`; 0 where the builder
    refuses the arguments before building anything (ports out of range, libswing on an odd side, the latency
    variant of another collective: it then says why).

    Returns:
        Bytes, a float (never None: the pattern is always built without the schedule).

    Raises:
        ScheduleError: an unknown collective name.

    Source: this module's docstring (O(N) transfers per step).

    >>> from directcoll.topology import parse
    >>> pattern_bytes(parse("torus:4x4"))  # 16 ranks x 4 ports x 4 steps x 2 (allreduce) x 25 B
    12800.0
    """
    try:
        steps = swing_steps(topology, collective, variant=variant, ports=ports)
    except UnsupportedShapeError:
        return 0.0
    return float(steps.num_pattern_transfers) * BYTES_PER_TRANSFER
