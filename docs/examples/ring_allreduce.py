"""Ring allreduce in directcoll.lang: MSCCLang's ring, with one ring per direction (docs/language.md)."""

from directcoll.lang import Buffer, Program, algorithm, chunk


@algorithm("lang-ring", collectives=["allreduce"], variants=["bidirectional", "unidirectional"],
           summary="ring allreduce written in directcoll.lang: a reduce-scatter and an allgather around the ring, "
                   "one ring per direction on its half of the vector")
def ring_allreduce(topology, *, variant):
    n = topology.num_compute
    directions = [+1, -1] if variant == "bidirectional" else [+1]
    with Program(topology, "allreduce", chunk_factor=n * len(directions), name="lang-ring") as prog:
        for part, d in enumerate(directions):       # ring `part` moves chunks part*n .. part*n + n - 1
            for step in range(n - 1):               # reduce-scatter: chunk i collects every rank's share
                for i in range(n):
                    rank = (i + d * step) % n
                    index = part * n + i
                    chunk((rank + d) % n, Buffer.input, index).reduce(chunk(rank, Buffer.input, index))
            for step in range(n - 1):               # allgather: the sum goes around once more
                for i in range(n):
                    rank = (i + d * (step - 1)) % n
                    index = part * n + i
                    chunk(rank, Buffer.input, index).copy((rank + d) % n, Buffer.input, index)
    return prog
