"""All-to-all schedules: the direct all-to-all and the path-based baselines of Basu et al. (HPDC 2024, Sec. 4-5).

* :mod:`~directcoll.algorithms.alltoall.direct` (``direct``, Sec. 4 baseline): every rank sends each other
  rank its block in one step, and the network routes the N(N-1) messages.
* :mod:`~directcoll.algorithms.alltoall.routed`: the path-based schedule (Sec. 3.2.1) the baselines below
  build: one step, every pair's block split over explicit routes (``path_alltoall``), and its link loads.
* :mod:`~directcoll.algorithms.alltoall.dor` (``dor``): dimension-order routes on grids (Sec. 5.2, ref. [17]).
* :mod:`~directcoll.algorithms.alltoall.sssp` (``sssp``): Domke et al.'s congestion-weighted SSSP routes
  (Sec. 5.2, ref. [19]).
* :mod:`~directcoll.algorithms.alltoall.ewsp` (``ewsp``): equal weight over all shortest paths (Sec. 5.2, Fig. 8).
* :mod:`~directcoll.algorithms.alltoall.ilp` (``ilp-disjoint``): one path per pair chosen by a MIP (Sec. 5.2).

The paths themselves (shortest, disjoint) come from :mod:`directcoll.topology.paths` and routes from
:mod:`directcoll.topology.routing`; :mod:`directcoll.registry` lists the five algorithms.
"""
