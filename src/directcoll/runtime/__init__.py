"""Running schedules for real: per-rank programs and executors over MPI (mpi4py)."""

from directcoll.runtime.program import RankProgram, StepProgram, compile_programs

__all__ = ["RankProgram", "StepProgram", "compile_programs"]
