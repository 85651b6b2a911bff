"""Swing (De Sensi et al., NSDI'24): the family in one package, one concept per module.

- :mod:`~directcoll.algorithms.swing.plans`: the block sets on one dimension (Eq. 2's peers, Fig. 3's extra rank
  on odd sides, the authors' libswing bitmaps) and their mirror (Sec. 4.1).
- :mod:`~directcoll.algorithms.swing.schedule`: the allreduce, reduce-scatter and allgather described step by step
  (:func:`swing_steps`: the power-of-two butterfly, the block-set product on other shapes, the latency-optimal
  variant, multiport) and their schedules (:func:`swing`, the registry's ``swing``).
- :mod:`~directcoll.algorithms.swing.pattern`: the same description read as step patterns (:func:`swing_pattern`,
  the registry's ``pattern=``), O(N) per step where the schedule holds O(N^2) pieces, and their memory
  (:func:`pattern_bytes`).
- :mod:`~directcoll.algorithms.swing.tree`: broadcast and reduce on Swing's peers (the registry's ``swing-tree``).

The butterfly machinery Swing shares with recursive doubling (peers, block remapping, the fold of non-power-of-two
shapes, the multiport parts) is :mod:`directcoll.algorithms.butterfly`.

Source: Swing (De Sensi et al., NSDI'24) Sec. 3-4, 6 and App. A; docs/architecture.md, "The layers, bottom up"
(a package per family).

>>> from directcoll.topology import parse
>>> swing(parse("torus:4x4")).num_steps, swing_pattern(parse("torus:4x4")).num_steps
(8, 8)
"""

from directcoll.algorithms.swing.pattern import pattern_bytes, swing_pattern
from directcoll.algorithms.swing.plans import libswing_1d_allgather, mirror_1d, swing_1d_allgather
from directcoll.algorithms.swing.schedule import VARIANTS, product_allgather, product_steps, swing, swing_steps
from directcoll.algorithms.swing.tree import build_swing_tree, swing_tree

__all__ = ["VARIANTS", "build_swing_tree", "libswing_1d_allgather", "mirror_1d", "pattern_bytes", "product_allgather",
           "product_steps", "swing", "swing_steps", "swing_1d_allgather", "swing_pattern", "swing_tree"]
