"""Network simulation: the congestion-aware step model and the max-min fair flow model."""

from directcoll.simulate.flow import FlowResult, flow_times, simulate_flow
from directcoll.simulate.params import SWING_SST, NetworkParams, network_params, params_from_file, resolve_network
from directcoll.simulate.step import SimulatedSchedule, StepLines, simulate, step_lines

__all__ = [
    "SWING_SST",
    "FlowResult",
    "NetworkParams",
    "SimulatedSchedule",
    "StepLines",
    "flow_times",
    "network_params",
    "params_from_file",
    "resolve_network",
    "simulate",
    "simulate_flow",
    "step_lines",
]
