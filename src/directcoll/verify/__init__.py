"""Exact verification of schedules (DESIGN.md "Verification")."""

from directcoll.verify.exact import Failure, VerifyResult, verify

__all__ = ["Failure", "VerifyResult", "verify"]
