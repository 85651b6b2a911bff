"""Export schedules to the formats real executors run, and import them back (docs/architecture.md, ``export/``).

- :mod:`directcoll.export.msccl`: MSCCL XML for the NCCL MSCCL executor (``export_msccl``, ``import_msccl``).
"""

from directcoll.export.msccl import (
    LIMITS,
    Gpu,
    MscclExport,
    MscclFormatError,
    MscclLimitError,
    MscclLimits,
    MscclRoundingWarning,
    Program,
    Step,
    ThreadBlock,
    check_limits,
    export_msccl,
    import_msccl,
    parse_msccl,
    program_to_schedule,
    program_to_xml,
    to_msccl,
    validate_program,
)

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
