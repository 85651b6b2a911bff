"""Exact verification of schedules (DESIGN.md "Verification").

Source: DESIGN.md, "Verification"; docs/verification.md.

>>> from directcoll.algorithms.ring import ring_allgather
>>> verify(ring_allgather(range(4))).ok
True
"""

from directcoll.verify.exact import Failure, VerifyResult, verify
from directcoll.verify.order import OrderResult, check_order, operand_order

__all__ = ["Failure", "OrderResult", "VerifyResult", "check_order", "operand_order", "verify"]
