"""Schedule synthesis: BFB LPs (Zhao et al. Sec. 6.1), expansions (Sec. 5), the topology finder (Sec. 5.4)."""

from directcoll.synthesis.bfb import bfb_allgather, bfb_cost, bfb_reduce_scatter, build_bfb
from directcoll.synthesis.expansions import expanded_schedule, predict

__all__ = ["bfb_allgather", "bfb_cost", "bfb_reduce_scatter", "build_bfb", "expanded_schedule", "predict"]
