/* libdirectcoll: declarations shared by its sources (docs/runtime.md, "The native runtime").
 *
 * The library is built by directcoll.runtime.native against the MPI that mpicc names; dc_build.h, generated at
 * build time, records that MPI's library version string (DC_BUILT_MPI_VERSION) for the run-time ABI check.
 */
#ifndef DC_INTERNAL_H
#define DC_INTERNAL_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

/* a little-endian unsigned field of n bytes at p (program files) */
static inline uint64_t dc_le(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

/* ---- allocations of a call's setup (dc_alloc.c) ---------------------------------------------------------------- */
/* malloc, calloc and realloc for everything a call may allocate before its ranks agree to run it (communicator
 * state, plans, channels' bookkeeping): after the agreement nothing is allocated. For tests only,
 * $DIRECTCOLL_TEST_FAIL_ALLOC=R:N makes the N-th of them on the rank R of MPI_COMM_WORLD fail (R:N+ that one and
 * every later one, R:%N every N-th), as if memory ran out there (docs/runtime.md, "Failing safe"). */
void *dc_malloc(size_t n);
void *dc_calloc(size_t n, size_t size);
void *dc_realloc(void *p, size_t n);

/* ---- the program format (docs/runtime.md, "Program files") ---------------------------------------------------- */
#define DC_MAGIC "DCPROG\r\n"
#define DC_FORMAT_VERSION 2u
/* broadcast and reduce (rooted) record their root in the file (dc_program.root) */
enum dc_collective { DC_ALLREDUCE = 0, DC_REDUCE_SCATTER = 1, DC_ALLGATHER = 2, DC_ALLTOALL = 3, DC_BROADCAST = 4,
                     DC_REDUCE_TO_ROOT = 5 };
#define DC_NCOLLECTIVES 6
/* the collective's name in tuning tables and messages ("allreduce", ..., "broadcast", "reduce"); "?" if unknown */
const char *dc_collective_name(uint32_t collective);
enum { DC_COPY = 0, DC_REDUCE = 1 };

typedef struct dc_program {
    unsigned char *data;   /* the whole file, validated */
    size_t size;
    uint32_t collective, nranks, nblocks, nscratch, nsteps;
    int64_t denominator;
    char *name;            /* the algorithm, for the debug log */
    const unsigned char *owner;      /* nblocks u32 (reduce-scatter / allgather), else NULL */
    uint32_t root;         /* broadcast and reduce: the root rank the program is compiled for; else 0 */
    const unsigned char *rank_offsets; /* nranks + 1 u64 */
    uint64_t checksum;     /* FNV-1a 64 of the file before its trailer */
} dc_program;

/* Load and validate a program file; on failure NULL and a message in err. */
dc_program *dc_program_load(const char *path, char *err, size_t errlen);
void dc_program_free(dc_program *p);

/* ---- block coordinates to elements (dc_coord.c) ---------------------------------------------------------------- */
/* Element offset of every block boundary of the work buffer for a vector of count elements (nblocks + nscratch + 1
 * entries), exactly as directcoll.runtime.program.boundaries rounds them; 0, or -1 when out of memory. */
int dc_boundaries(const dc_program *p, int64_t count, int64_t *bounds);
/* Element offset of block coordinate x (a numerator over the denominator), as program._elements rounds it. */
int64_t dc_element(const dc_program *p, const int64_t *bounds, int64_t x);

/* ---- sets of disjoint element intervals [v[2i], v[2i+1]), sorted (dc_ivset.c) ---------------------------------- */
typedef struct {
    int64_t *v;
    size_t n, cap;
} dc_ivset;
int dc_iv_add(dc_ivset *s, int64_t lo, int64_t hi);
/* Call part(arg, a, b, inside) for the consecutive parts of [lo, hi) inside (1) and outside (0) the set, in order. */
int dc_iv_walk(const dc_ivset *s, int64_t lo, int64_t hi, int (*part)(void *, int64_t, int64_t, int), void *arg);
void dc_iv_free(dc_ivset *s);

/* ---- a compiled plan: one program for one (count, datatype) on one rank --------------------------------------- */
typedef struct dc_seg {      /* a run of elements: region 0 = the user's buffer, 1 = the scratch blocks, 2 = sendbuf
                                (all-to-all: recvbuf, its relayed and scratch blocks, sendbuf) */
    int region;
    int init;                /* a reduction's destination run recvbuf does not hold yet (from_send): written as
                                sendbuf (op) the incoming elements, three operands, instead of a copy and then op= */
    int64_t off, len;
} dc_seg;

/* A received message whose pieces read overlapping ranges of the sender's buffer travels as the union of those
 * ranges, once, in ascending order (runtime/program.py, message_layout); its receiver applies piece k from message
 * offset at[k] (slices of the message, in piece order, that together feed the destination runs in order). */
typedef struct dc_slice {
    int64_t at, len;
} dc_slice;

/* Messages longer than DC_SEGMENT_BYTES travel as ceil(bytes / DC_SEGMENT_BYTES) messages of DC_SEGMENT_BYTES /
 * extent elements each (the last shorter), on both ends alike, so a receiver can reduce a segment while the next
 * is in flight and while it is still in cache (docs/benchmarks.md, "Native runtime": 64-1024 KiB measured). */
#define DC_SEGMENT_BYTES ((int64_t)512 * 1024)
/* The segment size plans are built with: DC_SEGMENT_BYTES, or $DIRECTCOLL_SEGMENT_BYTES (read with the tuning
 * table, for tests and measurements). */
extern int64_t dc_segment_bytes;
/* Segments of a step's reduced receives in flight at once (each in its own slot of the staging buffer). */
#define DC_WINDOW 2

typedef struct dc_msg {
    int peer, op;            /* op: DC_COPY or DC_REDUCE (receives and local operations) */
    int nseg;                /* messages it travels as (DC_SEGMENT_BYTES); 1 for local operations */
    int64_t seglen;          /* elements per segment (the last one: the rest) */
    MPI_Datatype *segtype;   /* nseg > 1, direct with several runs: the derived type of every segment, else NULL */
    int direct;              /* sent from / received into the user's or scratch buffer without staging */
    int region;              /* the region of a direct message */
    MPI_Datatype type;       /* derived type of a direct message of several runs, else MPI_DATATYPE_NULL */
    int64_t off;             /* a direct message of one run: its first element in its region */
    int64_t len;             /* elements in the message */
    int64_t stage;           /* staged: where its elements lie in the staging buffer */
    size_t nsrc, ndst;
    dc_seg *src, *dst;       /* the runs read (sends, local) and written (receives, local), in message order */
    size_t nslice;           /* a receive of overlapping pieces (always staged): the slices of the message its
                                destination runs read in turn; 0: the runs read the message in order */
    dc_slice *slice;
} dc_msg;

typedef struct dc_step {
    size_t nsend, nrecv, nlocal, ninit;
    int writes;              /* it writes memory before or while its messages move (staged sends and local
                                operations packed, receives, cells copied from sendbuf): the sends of earlier steps
                                still in flight must complete first */
    int defer;               /* over MPI: its sends may complete after the step (nothing it writes once its messages
                                are posted, receives and local operations applied after them included, overlaps what
                                its sends read), so it waits for its receives only */
    int pipelined;           /* its reduced receives are applied segment by segment as they arrive, DC_WINDOW in
                                flight through window slots: no reduced cell is also sent in place, copied into
                                (received or local) in the step, and no peer sends it a second message */
    size_t nreq;             /* the most requests it has outstanding at once */
    dc_msg *send, *recv, *local;
    dc_seg *init;            /* from_send: cells reduced into before recvbuf held them, copied from sendbuf first */
    int shm_reduce;          /* shared-memory transport: its reduced receives are reduced from the cells into place
                                during the step (dc_shm_attach), else staged and applied after it */
    int shm_ordered;         /* ... and two of them reduce into one cell: in message order */
} dc_step;

typedef struct dc_plan {
    struct dc_plan *next;
    const dc_program *program;
    int from_send;           /* an allreduce, reduce-scatter or reduce not in place: reads sendbuf (region 2) until
                                its buffer (recvbuf; the work buffer; a reduce's non-root: the work buffer) is
                                written */
    size_t nfinal;
    dc_seg *final;           /* from_send: cells no step writes, copied from sendbuf at the end */
    int64_t count;
    MPI_Datatype datatype;
    MPI_Aint extent;
    int64_t scratch_elems, stage_elems;
    int64_t window;          /* the first element of the window slots in the staging buffer (DC_WINDOW slots of
                                DC_SEGMENT_BYTES) */
    char *scratch, *stage;
    char *work;              /* reduce-scatter: the copy of sendbuf the schedule works in; all-to-all with
                                MPI_IN_PLACE: the copy of recvbuf it sends from; a reduce's non-root rank: the
                                buffer it reduces in (recvbuf is not significant there) (count elements) */
    MPI_Request *reqs;       /* room for the most requests in flight at once (a step's, and the sends of earlier
                                steps not waited for yet), MPI_REQUEST_NULL between calls */
    int *peers;              /* per request: 2 peer + 1 for a send, 2 peer for a receive */
    int *idx;                /* room for nreqs indices (MPI_Testsome) */
    size_t nreqs;
    size_t nsteps;
    dc_step *steps;
    struct dc_shm *shm;      /* the shared-memory transport it runs over (dc_shm_attach), NULL: MPI point-to-point */
    const char *shm_why;     /* why not, when it was offered one (a static string), else NULL */
} dc_plan;

/* Build the plan of program p for rank on count elements of datatype; NULL and a message in err on failure. */
dc_plan *dc_plan_build(const dc_program *p, int rank, int64_t count, MPI_Datatype datatype, MPI_Aint extent,
                       int from_send, char *err, size_t errlen);
void dc_plan_free(dc_plan *plan);

/* ---- the all-to-all layout (dc_alltoall.c; runtime/program.py, compile_alltoall) ------------------------------ */
typedef struct dc_a2a {
    int rank;
    int64_t n, k, m, count;  /* N ranks, k blocks per pair, m = count / N elements per pair, count: one sendbuf */
    int64_t nblocks, nall;   /* N^2 k data blocks; data and scratch blocks */
    const int64_t *bounds;   /* dc_boundaries */
    int64_t *roff;           /* per block outside the rank's send and receive parts: its offset in the scratch
                                region (blocks it relays, scratch blocks, in block order); -1 if never touched */
} dc_a2a;
/* Walk the rank's section and lay out the blocks outside its send and receive parts that it touches (a->roff,
 * allocated here); the scratch region's length in elements, or -1 when out of memory. */
int64_t dc_a2a_layout(const dc_program *p, dc_a2a *a);
/* Where coordinate element x lies on the rank: region (0 recvbuf, 1 scratch, 2 sendbuf) and offset; returns the
 * end of its block (the coordinate element where the next run starts). */
int64_t dc_a2a_place(const dc_a2a *a, int64_t x, int *region, int64_t *off);

/* ---- reductions ----------------------------------------------------------------------------------------------- */
/* out[i] = a[i] op b[i] for i < n: out is a (two operands, a op= b) or disjoint from it; b overlaps neither. */
typedef void (*dc_reduce_fn)(void *out, const void *a, const void *restrict b, size_t n);
/* The kernel of op on datatype, or NULL with the reason (not predefined, not defined by MPI for the type). */
dc_reduce_fn dc_reduction(MPI_Op op, MPI_Datatype datatype, const char **why);
/* Whether datatype is a predefined basic type the executor serves; its name either way ("derived" if none). */
int dc_known_type(MPI_Datatype datatype, const char **name);
const char *dc_op_name(MPI_Op op);

/* ---- running a plan (dc_exec.c) ------------------------------------------------------------------------------- */
/* A wait hook's return when its deadline passed (the requests are left as they are; abandon then handles them). */
#define DC_DEADLINE (-1)
/* The step number a wait hook sees for the agreement before the first message (dc_cache_plan). */
#define DC_SETUP_STEP ((size_t)-1)
/* What a run lets its caller do (dc_entry.c): step(ctx, t) before step t posts its messages; wait(ctx, t, n, reqs,
 * peers) in place of PMPI_Waitall (its nonzero return ends the run with that code; peers[i] is 2 peer + 1 for a
 * send, NULL for a collective request); abandon(ctx, n, reqs) once a run fails, in place of cancelling every
 * request still in flight and waiting for it (it must leave every request MPI_REQUEST_NULL). A step may wait
 * several times (its pipelined reductions wait segment by segment; the sends of earlier steps). Any may be NULL. */
typedef struct dc_hooks {
    void (*step)(void *ctx, size_t t);
    int (*wait)(void *ctx, size_t t, int n, MPI_Request *reqs, const int *peers);
    void (*abandon)(void *ctx, int n, MPI_Request *reqs);
    void *ctx;
} dc_hooks;
/* Run plan on buf (with from_send, sendbuf holds the input) over comm; hooks may be NULL. MPI_SUCCESS, or an MPI
 * error (or a wait hook's code) with no request of the run left in flight. Allocates nothing. */
int dc_execute(MPI_Comm comm, const dc_plan *plan, char *buf, const void *sendbuf, dc_reduce_fn fn,
               const dc_hooks *hooks);

/* ---- the plans of a communicator, and the ranks' agreement to run them (dc_plans.c) ---------------------------- */
typedef struct dc_cached dc_cached;
typedef struct dc_cache {
    dc_cached *head;         /* most recently used first */
    size_t n, max;           /* plans kept, and the most kept (the least recently used is dropped) */
    int mine[2], all[2];     /* the agreement's operands (they outlive a deadline: MPI may still write them) */
    int broken;              /* an agreement did not complete before its deadline: no further call is served */
} dc_cache;
/* The plan of program p on this rank (rank of comm) for a call on count elements of datatype (from_send: not in
 * place), and whether every rank runs it. Found in the cache: no message. Not found: built (with from_send 0 and 1
 * at a reduce's root, so that every rank finds or misses its plans in the same calls), attached to shm (when not
 * NULL), then the ranks agree with one small reduction on comm (hooks->wait when given, with DC_SETUP_STEP) that
 * each built its plan and on the transport; kept when all did. NULL when the call cannot be served: with *rc =
 * MPI_SUCCESS every rank of comm returns NULL in this call (why says why), else *rc is MPI's error or the wait
 * hook's code. Collective on a miss; the misses are the same calls on every rank. */
dc_plan *dc_cache_plan(dc_cache *c, MPI_Comm comm, const dc_program *p, int rank, int64_t count,
                       MPI_Datatype datatype, MPI_Aint extent, int from_send, struct dc_shm *shm, const dc_hooks *hooks,
                       int *rc, char *why, size_t len);
void dc_cache_clear(dc_cache *c);

/* ---- the shared-memory transport (dc_shm.c; docs/runtime.md, "The shared-memory transport") ------------------ */
enum { DC_TRANSPORT_MPI = 0, DC_TRANSPORT_AUTO = 1, DC_TRANSPORT_SHM = 2 };
/* Cells of a channel and their bytes, and the most bytes of channels a node's segment may take (all of its ranks'
 * N (N - 1) channels together); $DIRECTCOLL_SHM_CELLS and $DIRECTCOLL_SHM_CELL_BYTES override the first two. */
#define DC_SHM_CELLS 4
#define DC_SHM_CELL_BYTES ((size_t)64 * 1024)
#define DC_SHM_BUDGET ((size_t)256 * 1024 * 1024)
typedef struct dc_shm dc_shm;
/* Collective over comm (every rank calls it, whatever it wants): the channels of comm's ranks in one segment
 * (MPI_Win_allocate_shared) when every rank wants them (want: DC_TRANSPORT_*, not MPI), all are on one node and the
 * segment fits the budget; else NULL and the reason in why. */
dc_shm *dc_shm_open(MPI_Comm comm, int want, size_t cell_bytes, int cells, size_t budget, char *why, size_t len);
/* Collective (frees the window) unless MPI is finalized; NULL is nothing. */
void dc_shm_close(dc_shm *sh);
/* Let plan (of rank) run over sh: sets plan->shm and its steps' shm_ fields, and makes room in sh for its steps'
 * messages; NULL, or why it cannot (it then stays on MPI point-to-point, unless another rank's plan of the call could
 * not use them either: dc_cache_plan agrees on it). */
const char *dc_shm_attach(dc_shm *sh, dc_plan *plan, int rank);
/* Move step st's messages through the channels (dc_execute: after the step's staging, before it applies what was
 * staged); MPI_SUCCESS. Allocates nothing (dc_shm_attach made the room). */
int dc_shm_step(dc_shm *sh, const dc_plan *plan, const dc_step *st, char *const base[3], dc_reduce_fn fn);

/* ---- the tuning table (a minimal JSON reader) ----------------------------------------------------------------- */
typedef struct dc_entry {
    uint32_t collective;
    int ranks;
    double min_bytes, max_bytes;   /* inclusive; max < 0: unbounded */
    char *path;
    dc_program *program;           /* NULL when it failed to load (error holds why) */
    char error[256];
} dc_entry;

/* Parse the tuning table at path; on failure -1 and a message in err. Paths are resolved against its folder. */
int dc_table_load(const char *path, dc_entry **entries, size_t *n, char *err, size_t errlen);

#endif
