"""Exact verification of schedules (DESIGN.md "Verification").

Source: DESIGN.md, "Verification"; docs/verification.md.

>>> from directcoll.algorithms.ring import ring_allgather
>>> verify(ring_allgather(range(4))).ok
True
"""

from directcoll.verify.exact import Failure, VerifyResult, verify

__all__ = ["Failure", "VerifyResult", "verify"]
