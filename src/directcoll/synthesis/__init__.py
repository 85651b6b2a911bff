"""Schedule synthesis: BFB LPs (Zhao et al. Sec. 6.1), expansions (Sec. 5), the topology finder (Sec. 5.4) and
the all-to-all multi-commodity flow LPs (Basu et al.; Zhao et al. App. A.5)."""

from directcoll.synthesis.bfb import bfb_allgather, bfb_cost, bfb_reduce_scatter, build_bfb
from directcoll.synthesis.expansion_predictions import predict
from directcoll.synthesis.expansions import expanded_schedule
from directcoll.synthesis.finder import find_topology
from directcoll.synthesis.mcf.link import alltoall_mcf

__all__ = ["alltoall_mcf", "bfb_allgather", "bfb_cost", "bfb_reduce_scatter", "build_bfb", "expanded_schedule",
           "find_topology", "predict"]
