"""Cost models: steps, bytes, deficiencies (Swing Sec. 2.2), T_L / T_B (Zhao et al. Sec. 3.2), alpha-beta-gamma."""

from directcoll.cost.analytic import CostParams, CostReport, analyze
from directcoll.cost.bounds import lower_bound_port_time

__all__ = ["CostParams", "CostReport", "analyze", "lower_bound_port_time"]
