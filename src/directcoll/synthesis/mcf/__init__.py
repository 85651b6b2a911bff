"""All-to-all as a maximum concurrent multi-commodity flow (Basu et al., HPDC 2024; Zhao et al. App. A.5).

One module per concept, in the paper's terms (the bounds on F live in :mod:`directcoll.cost.bounds`):

* :mod:`~directcoll.synthesis.mcf.network`: the flow network the LPs run on (host-to-NIC links, Sec. 3.2.2).
* :mod:`~directcoll.synthesis.mcf.formulations`: the link LPs (eq. 1-9, 10-14) and solving them with HiGHS.
* :mod:`~directcoll.synthesis.mcf.symmetry`: the LP reduced by the topology's automorphism group (BLISS, via
  :mod:`directcoll.topology.automorphism`): one source per node orbit, stabilizer-invariant flows.
* :mod:`~directcoll.synthesis.mcf.children`: the child LPs of the decomposed method (eq. 10-14).
* :mod:`~directcoll.synthesis.mcf.link`: ``alltoall_mcf``, the link-based MCF value F and its flows (Sec. 3.1).
* :mod:`~directcoll.synthesis.mcf.timestepped`: tsMCF on the time-expanded graph (Sec. 3.1.3, eq. 15-20).
* :mod:`~directcoll.synthesis.mcf.paths`: pMCF (Sec. 3.1.4, eq. 21-24) and MCF-extP (Sec. 3.2.1).
* :mod:`~directcoll.synthesis.mcf.bracket`: a certified bracket on F for graphs too large for the LP (Frank-Wolfe).
* :mod:`~directcoll.synthesis.mcf.certified`: split ratios on per-source DAGs against Frank-Wolfe's lengths,
  iterated to a requested certified gap; ``auto_method`` (symmetry first, exact while small).
* :mod:`~directcoll.synthesis.mcf.schedules`: the schedules lowered from them (Sec. 4), algorithm ``mcf``.
"""
