"""msccl-tools' simple ring allreduce (examples/mscclang/simple/allreduce_ring.py), read in directcoll.lang: only
the imports and the two lines that make the program differ (docs/language.md, "MSCCLang")."""

from directcoll.lang import XML, Buffer, Check, Program, chunk


def allreduce_ring(size, instances):
    # Logical topology: every rank linked to every other, as msccl-tools' fully_connected(size)
    topology = f"complete:{size}"

    with Program(topology, "allreduce", chunk_factor=size, name="allreduce_ring_inplace"):
        for r in range(size):
            index = r
            # (rank, buffer, index)
            c = chunk(r, Buffer.input, index)
            next = (r + 1) % size
            # Chunk travels around the ring being reduced
            while next != r:
                c1 = chunk(next, buffer=Buffer.input, index=r)
                # c1 += c
                c = c1.reduce(c)
                next = (next + 1) % size

            # Send the fully reduced chunk around the ring
            while next != (r - 1) % size:
                c = c.copy(next, buffer=Buffer.input, index=r)
                next = (next + 1) % size

        Check()
        XML()
