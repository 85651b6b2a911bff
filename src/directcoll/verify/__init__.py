"""Exact verification of schedules (docs/verification.md).

Source: docs/verification.md; docs/architecture.md, "Verification".

>>> from directcoll.algorithms.ring import ring_allgather
>>> verify(ring_allgather(range(4))).ok
True
"""

from directcoll.verify.exact import Failure, VerifyResult, verify
from directcoll.verify.order import OrderResult, check_order, operand_order

__all__ = ["Failure", "OrderResult", "VerifyResult", "check_order", "operand_order", "verify"]
