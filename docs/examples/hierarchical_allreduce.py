"""A hierarchical allreduce for a 2-level network in directcoll.lang: HammingMesh boards joined by fat trees
(Hoefler et al., SC'22; docs/language.md)."""

from directcoll.errors import UnsupportedShapeError
from directcoll.lang import Buffer, Program, algorithm, chunk


def snake(rows, cols):
    """The cells of a rows x cols grid in snake order: neighbours follow each other."""
    return [(i, j if i % 2 == 0 else cols - 1 - j) for i in range(rows) for j in range(cols)]


def reduce_scatter(ring, parts):
    """Ring reduce-scatter over the ranks of `ring`: part i = (index, size) ends summed at ring[i]."""
    m = len(ring)
    for s in range(m - 1):
        for i, (index, size) in enumerate(parts):
            src, dst = ring[(i + 1 + s) % m], ring[(i + 2 + s) % m]
            chunk(dst, Buffer.input, index, size).reduce(chunk(src, Buffer.input, index, size))


def allgather(ring, parts):
    """Ring allgather over the ranks of `ring`: part i goes from ring[i] to all of them."""
    m = len(ring)
    for s in range(m - 1):
        for i, (index, size) in enumerate(parts):
            chunk(ring[(i + s) % m], Buffer.input, index, size).copy(ring[(i + s + 1) % m])


@algorithm("lang-hierarchical", collectives=["allreduce"], topologies="hammingmesh:AxB:XxY",
           summary="hierarchical allreduce written in directcoll.lang: reduce-scatter on every board, allreduce "
                   "across boards between ranks at the same board position, allgather on every board")
def hierarchical_allreduce(topology):
    if topology.kind != "hammingmesh":
        raise UnsupportedShapeError(f"lang-hierarchical: needs boards, hammingmesh:AxB:XxY; got {topology.spec}")
    (a, b), (x, y) = ([int(v) for v in part.split("x")] for part in topology.spec.split(":")[1:3])
    boards, places = snake(x, y), snake(a, b)       # the boards of the grid, the places of a board
    g, boards_n = len(places), len(boards)

    def rank(board, place):                         # ranks are row-major over the whole a*x by b*y grid
        return (board[0] * a + place[0]) * (b * y) + board[1] * b + place[1]

    with Program(topology, "allreduce", chunk_factor=2 * g * boards_n, name="lang-hierarchical") as prog:
        for half, way in ((0, 1), (1, -1)):         # each half of the vector goes round the rings one way
            base = half * g * boards_n
            on_board = [[rank(board, place) for place in places][::way] for board in boards]
            shares = [(base + p * boards_n, boards_n) for p in range(g)]   # place p's share of the half
            for ring in on_board:                   # level 1: place p of every board sums share p of its board
                reduce_scatter(ring, shares)
            for p, place in enumerate(places[::way]):   # level 2: place p sums share p across the boards
                ring = [rank(board, place) for board in boards][::way]
                parts = [(base + p * boards_n + j, 1) for j in range(boards_n)]
                reduce_scatter(ring, parts)
                allgather(ring, parts)
            for ring in on_board:                   # level 1 again: every board gathers the shares
                allgather(ring, shares)
    return prog
