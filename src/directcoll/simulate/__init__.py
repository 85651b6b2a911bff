"""Network simulation: the congestion-aware step model and the max-min fair flow model."""

from directcoll.simulate.params import SWING_SST, NetworkParams, network_params
from directcoll.simulate.step import SimulatedSchedule, StepLines, simulate, step_lines

__all__ = ["SWING_SST", "NetworkParams", "SimulatedSchedule", "StepLines", "network_params", "simulate", "step_lines"]
