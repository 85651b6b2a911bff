"""Topology families, one module per kind of graph, one pure generator function per family.

- :mod:`~directcoll.topology.families.grids`: torus, mesh, HyperX, hypercube, HammingMesh, twisted torus and
  twisted hypercube (the topologies with a grid shape).
- :mod:`~directcoll.topology.families.circulants`: ring, circulant, Theorem 22's circulant, ShiftedRing.
- :mod:`~directcoll.topology.families.kautz_digraphs`: generalized Kautz, Kautz, de Bruijn, their automorphisms.
- :mod:`~directcoll.topology.families.regular`: complete, complete bipartite, Hamming and distance-regular graphs.
- :mod:`~directcoll.topology.families.random_graphs`: Jellyfish and Xpander, seeded.
- :mod:`~directcoll.topology.families.trees`: the double binary tree.
- :mod:`~directcoll.topology.families.base`: what they share (sizing, argument checks, link arrays).

Spec strings name them through :data:`directcoll.topology.table.FAMILIES` (``directcoll topology families``).
"""

from directcoll.topology.families.circulants import (
    circulant,
    circulant_opt4,
    ring,
    shifted_ring,
    shifted_ring_stride,
    theorem22_m,
)
from directcoll.topology.families.grids import (
    hammingmesh,
    hypercube,
    hyperx,
    mesh,
    torus,
    twisted_hypercube,
    twisted_torus,
    twisted_torus_grid,
)
from directcoll.topology.families.kautz_digraphs import (
    automorphisms,
    de_bruijn,
    generalized_kautz,
    kautz,
    pi_automorphisms,
)
from directcoll.topology.families.random_graphs import jellyfish, xpander
from directcoll.topology.families.regular import (
    bipartite,
    bipartite_minus_matching,
    complete,
    hamming,
    linegraph_petersen,
    odd_graph,
    petersen,
)
from directcoll.topology.families.trees import double_binary_tree, double_binary_tree_parents

__all__ = [
    "automorphisms",
    "bipartite",
    "bipartite_minus_matching",
    "circulant",
    "circulant_opt4",
    "complete",
    "de_bruijn",
    "double_binary_tree",
    "double_binary_tree_parents",
    "generalized_kautz",
    "hamming",
    "hammingmesh",
    "hypercube",
    "hyperx",
    "jellyfish",
    "kautz",
    "linegraph_petersen",
    "mesh",
    "odd_graph",
    "petersen",
    "pi_automorphisms",
    "ring",
    "shifted_ring",
    "shifted_ring_stride",
    "theorem22_m",
    "torus",
    "twisted_hypercube",
    "twisted_torus",
    "twisted_torus_grid",
    "xpander",
]
