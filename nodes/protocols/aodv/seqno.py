"""Destination sequence numbers with wrap-around comparison (RFC 3561 section 6.1).

RFC 3561 section 6.1: "Comparing sequence numbers ... is done using signed 32-bit arithmetic,
this is necessary to accomplish sequence number rollover. If the sequence numbers are in a
valid range, the result of subtracting the currently stored value from the value of the
incoming AODV message is positive if the incoming information is newer."

Zero means "unknown" (the 'U' flag of a RREQ); like AODV-UU we never produce 0 by incrementing:
0xFFFFFFFF + 1 wraps to 1.
"""

from __future__ import annotations

SEQ_MOD: int = 1 << 32
_HALF: int = 1 << 31


def seq_diff(a: int, b: int) -> int:
    """``a - b`` as a signed 32-bit integer (positive when ``a`` is newer than ``b``)."""
    d = (a - b) & 0xFFFF_FFFF
    return d - SEQ_MOD if d >= _HALF else d


def seq_gt(a: int, b: int) -> bool:
    """``a`` is strictly newer than ``b``."""
    return seq_diff(a, b) > 0


def seq_ge(a: int, b: int) -> bool:
    """``a`` is newer than or equal to ``b``."""
    return seq_diff(a, b) >= 0


def seq_max(a: int, b: int) -> int:
    """The newer of two sequence numbers."""
    return a if seq_ge(a, b) else b


def seq_inc(a: int) -> int:
    """``a + 1`` modulo 2**32, skipping 0 (reserved for "unknown")."""
    n = (a + 1) & 0xFFFF_FFFF
    return n if n else 1
