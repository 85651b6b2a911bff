"""Schedule synthesis by linear programming (Zhao et al., BFB: Sec. 6.1)."""

from directcoll.synthesis.bfb import bfb_allgather, bfb_reduce_scatter, build_bfb

__all__ = ["bfb_allgather", "bfb_reduce_scatter", "build_bfb"]
