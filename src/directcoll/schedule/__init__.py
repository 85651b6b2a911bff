"""The schedule IR (docs/architecture.md, "Schedule IR"): columnar transfers over a block-addressed buffer, and passes
over it."""

from directcoll.schedule.io import from_dict, load, read_npz, save, to_dict, validate_dict
from directcoll.schedule.ir import COPY, REDUCE, Collective, Schedule, ScheduleBuilder, default_owner
from directcoll.schedule.ops import (
    StepSummary,
    concat,
    concurrent,
    from_reduce_scatter,
    offset_steps,
    relabel,
    reverse,
    step_summary,
)

__all__ = [
    "COPY",
    "REDUCE",
    "Collective",
    "Schedule",
    "ScheduleBuilder",
    "StepSummary",
    "concat",
    "concurrent",
    "default_owner",
    "from_dict",
    "from_reduce_scatter",
    "load",
    "offset_steps",
    "read_npz",
    "relabel",
    "reverse",
    "save",
    "step_summary",
    "to_dict",
    "validate_dict",
]
