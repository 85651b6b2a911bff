"""Chunking a BFB schedule for MSCCL along its LP's loads (Zhao et al. App. E.2) when its exact loads need more
chunks than the export allows.

MSCCL addresses whole chunks, ``nchunksperloop = vector_blocks * q`` at most ``max_chunks``. A BFB schedule's
loads are the LPs' rationals over a common denominator (:mod:`directcoll.synthesis.bfb`); when that denominator
fits, the export uses it and every transfer carries a whole number of chunks exactly proportional to its LP
load. When it does not, rounding every piece end to the nearest 1/q (the generic pass,
:func:`directcoll.schedule.chunking.in_whole_chunks`) moves each piece independently, so a link serving many
sources can drift by one chunk per piece. Instead, the export rebuilds the schedule from its recorded topology
with ``chunks = q``: App. E.2's discrete chunked BFB schedule, each pattern's LP loads rounded to whole chunks
by largest remainder (each link at most one chunk above its LP load per pattern, every shard whole). The result
is exact in q chunks per block, so it verifies like any BFB schedule.

Source: Zhao et al. (NSDI'25) App. E.2 (discrete chunked BFB schedules, Theorem 20) and Sec. 7 (lowering to
MSCCL); docs/export.md, "Chunks".
"""

from __future__ import annotations

from directcoll.errors import DirectcollError
from directcoll.schedule.chunking import exact_chunks_per_block
from directcoll.schedule.ir import Collective, Schedule

#: collectives whose BFB schedules the registry rebuilds with ``chunks``
BFB_COLLECTIVES = (Collective.ALLGATHER, Collective.REDUCE_SCATTER, Collective.ALLREDUCE)


def bfb_along_loads(schedule: Schedule, chunks_per_block: int) -> Schedule | None:
    """The BFB schedule ``schedule`` was built as, rebuilt with ``chunks = chunks_per_block`` (App. E.2), when it
    is a BFB allgather, reduce-scatter or allreduce whose exact loads need more chunks per block than
    ``chunks_per_block`` and whose meta records its topology; else None (also when the rebuild fails, e.g. a
    ``file:PATH`` topology that is gone: the caller then rounds piece ends).

    Args:
        schedule: any schedule; only a BFB one (``meta["algorithm"] == "bfb"``) is rebuilt, with its recorded
            ``topology`` spec and ``size_bytes`` (LP (14)'s M, if any).
        chunks_per_block: q, the most chunks per block the export allows, >= 1.

    Returns:
        A Schedule of the same collective, ranks and blocks with ``denominator == chunks_per_block`` and
        ``meta["chunks"] == chunks_per_block``, or None.

    Raises:
        Nothing: a failed rebuild gives None.

    Source: Zhao et al. (NSDI'25) App. E.2 (rounding the LP relaxation of IP (13) to P chunks per shard).

    >>> from directcoll.registry import build
    >>> s = build("bfb", "links(circulant:8:1,3,offset=3,bandwidth=0.5x)", "allgather")
    >>> s.denominator, bfb_along_loads(s, 4).denominator, bfb_along_loads(s, 7)  # 7 chunks are exact already
    (7, 4, None)
    """
    meta = schedule.meta
    if (meta.get("algorithm") != "bfb" or schedule.collective not in BFB_COLLECTIVES or not meta.get("topology")
            or exact_chunks_per_block(schedule) <= chunks_per_block):
        return None
    from directcoll.registry import build

    options = {"size": meta["size_bytes"]} if meta.get("size_bytes") else {}
    try:
        rebuilt = build("bfb", meta["topology"], schedule.collective.value, chunks=chunks_per_block, **options)
    except DirectcollError:
        return None
    if (rebuilt.nranks, rebuilt.nblocks) != (schedule.nranks, schedule.nblocks):
        return None
    return rebuilt
