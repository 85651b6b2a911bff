"""MSCCL XML: export a schedule to the NCCL MSCCL executor's algorithm format, and import MSCCL XML back into the IR.

- :mod:`~directcoll.export.msccl.format`: the format (Azure/msccl-executor-nccl ``msccl_parser.cc``, msccl-tools
  ``ir_to_xml``) and the executor's execution model: :class:`Program` and its elements, :func:`program_to_xml`,
  :func:`parse_msccl`, :func:`validate_program`, the errors.
- :mod:`~directcoll.export.msccl.limits`: the executor's limits (:class:`MscclLimits`, :data:`LIMITS`,
  :func:`check_limits`).
- Export, schedule -> program (:func:`to_msccl`, :func:`export_msccl`): :mod:`~directcoll.export.msccl.lower`
  (chunks, the walk over the IR steps), :mod:`~directcoll.export.msccl.layout` (buffers),
  :mod:`~directcoll.export.msccl.deps` (dependencies), :mod:`~directcoll.export.msccl.assemble` (channels,
  thread blocks, steps).
- Import, program -> schedule (:func:`import_msccl`, :func:`program_to_schedule`):
  :mod:`~directcoll.export.msccl.lift` (matching, replay, coordinates), :mod:`~directcoll.export.msccl.order`
  (happens-before, IR steps, data races).
"""

from directcoll.export.msccl.format import (
    Gpu,
    MscclFormatError,
    MscclLimitError,
    MscclRoundingWarning,
    Program,
    Step,
    ThreadBlock,
    parse_msccl,
    program_to_xml,
    validate_program,
)
from directcoll.export.msccl.lift import import_msccl, program_to_schedule
from directcoll.export.msccl.limits import LIMITS, MscclLimits, check_limits
from directcoll.export.msccl.lower import MscclExport, export_msccl, to_msccl

__all__ = [
    "LIMITS",
    "Gpu",
    "MscclExport",
    "MscclFormatError",
    "MscclLimitError",
    "MscclLimits",
    "MscclRoundingWarning",
    "Program",
    "Step",
    "ThreadBlock",
    "check_limits",
    "export_msccl",
    "import_msccl",
    "parse_msccl",
    "program_to_schedule",
    "program_to_xml",
    "to_msccl",
    "validate_program",
]
