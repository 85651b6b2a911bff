/* libdirectcoll: reductions in C for every predefined operation on every predefined basic C datatype MPI defines
 * it for (MPI 4.1 standard, Sec. 6.9.2: the groups C integer, floating point, logical, complex, byte and
 * multi-language types). Integer sums and products wrap (computed in an unsigned type, as MPI libraries do, with no
 * signed overflow); MPI_CHAR, MPI_WCHAR, the pair types and Fortran types fall through to the MPI library.
 */
#include <complex.h>
#include <stdbool.h>
#include <string.h>

#include "dc_internal.h"

/* The kernels vectorize: GCC's -O2 (before 12, and 12's very cheap cost model) leaves these loops scalar, so this
 * file asks for -O3's vectorizer. Elementwise, no reassociation: results are bitwise those of the scalar loop. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif

/* One kernel: out[i] = a[i] OP b[i] for i < n. out is a (two operands: inout op= in) or disjoint from it, and never
 * overlaps b; a is the running value, b the incoming one (the order MPI's reductions are applied in). */
#define KERNEL(NAME, T, EXPR)                                                                                        \
    static void NAME(void *out_, const void *a_, const void *restrict b_, size_t n) {                               \
        T *out = out_; const T *a = a_; const T *restrict b = b_;                                                    \
        for (size_t i = 0; i < n; i++) out[i] = EXPR;                                                               \
    }

enum { G_INT = 1, G_FLOAT = 2, G_COMPLEX = 4, G_LOGICAL = 8, G_BYTE = 16, G_MULTI = 32 };

#define KERNELS_ARITH(N, T, UT)                                                                                     \
    KERNEL(N##_sum, T, (T)((UT)a[i] + (UT)b[i]))                                                                    \
    KERNEL(N##_prod, T, (T)((UT)a[i] * (UT)b[i]))
#define KERNELS_ORDER(N, T)                                                                                          \
    KERNEL(N##_max, T, a[i] > b[i] ? a[i] : b[i])                                                                   \
    KERNEL(N##_min, T, a[i] > b[i] ? b[i] : a[i])
#define KERNELS_LOGICAL(N, T)                                                                                        \
    KERNEL(N##_land, T, (T)(a[i] && b[i]))                                                                          \
    KERNEL(N##_lor, T, (T)(a[i] || b[i]))                                                                           \
    KERNEL(N##_lxor, T, (T)(!a[i] != !b[i]))
#define KERNELS_BITS(N, T)                                                                                           \
    KERNEL(N##_band, T, (T)(a[i] & b[i]))                                                                           \
    KERNEL(N##_bor, T, (T)(a[i] | b[i]))                                                                            \
    KERNEL(N##_bxor, T, (T)(a[i] ^ b[i]))
#define KERNELS_INT(N, T, UT) KERNELS_ARITH(N, T, UT) KERNELS_ORDER(N, T) KERNELS_LOGICAL(N, T) KERNELS_BITS(N, T)
#define KERNELS_FLOAT(N, T) KERNELS_ARITH(N, T, T) KERNELS_ORDER(N, T)

KERNELS_INT(schar, signed char, unsigned)
KERNELS_INT(uchar, unsigned char, unsigned)
KERNELS_INT(short, short, unsigned)
KERNELS_INT(ushort, unsigned short, unsigned)
KERNELS_INT(int, int, unsigned)
KERNELS_INT(uint, unsigned, unsigned)
KERNELS_INT(long, long, unsigned long)
KERNELS_INT(ulong, unsigned long, unsigned long)
KERNELS_INT(llong, long long, unsigned long long)
KERNELS_INT(ullong, unsigned long long, unsigned long long)
KERNELS_INT(i8, int8_t, unsigned)
KERNELS_INT(i16, int16_t, unsigned)
KERNELS_INT(i32, int32_t, uint32_t)
KERNELS_INT(i64, int64_t, uint64_t)
KERNELS_INT(u8, uint8_t, unsigned)
KERNELS_INT(u16, uint16_t, unsigned)
KERNELS_INT(u32, uint32_t, uint32_t)
KERNELS_INT(u64, uint64_t, uint64_t)
KERNELS_FLOAT(flt, float)
KERNELS_FLOAT(dbl, double)
KERNELS_FLOAT(ldbl, long double)
KERNELS_ARITH(cflt, float complex, float complex)
KERNELS_ARITH(cdbl, double complex, double complex)
KERNELS_ARITH(cldbl, long double complex, long double complex)
KERNELS_LOGICAL(cbool, bool)

/* one row per datatype: its kernels in the order of OPS below (NULL where the group has none) */
#define ROW_INT(N) {N##_sum, N##_prod, N##_max, N##_min, N##_land, N##_lor, N##_lxor, N##_band, N##_bor, N##_bxor}
#define ROW_FLOAT(N) {N##_sum, N##_prod, N##_max, N##_min, NULL, NULL, NULL, NULL, NULL, NULL}
#define ROW_COMPLEX(N) {N##_sum, N##_prod, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL}
#define ROW_LOGICAL(N) {NULL, NULL, NULL, NULL, N##_land, N##_lor, N##_lxor, NULL, NULL, NULL}
#define ROW_BYTE(N) {NULL, NULL, NULL, NULL, NULL, NULL, NULL, N##_band, N##_bor, N##_bxor}

#define NOPS 10
typedef struct {
    MPI_Datatype type;
    const char *name;
    size_t size;
    int group;
    dc_reduce_fn fn[NOPS];
} type_row;

/* which groups each op is defined on (MPI 4.1, Sec. 6.9.2) */
static int op_groups(int k) {
    static const int groups[NOPS] = {
        G_INT | G_FLOAT | G_COMPLEX | G_MULTI, G_INT | G_FLOAT | G_COMPLEX | G_MULTI,  /* SUM, PROD */
        G_INT | G_FLOAT | G_MULTI, G_INT | G_FLOAT | G_MULTI,                          /* MAX, MIN */
        G_INT | G_LOGICAL, G_INT | G_LOGICAL, G_INT | G_LOGICAL,                       /* LAND, LOR, LXOR */
        G_INT | G_BYTE | G_MULTI, G_INT | G_BYTE | G_MULTI, G_INT | G_BYTE | G_MULTI}; /* BAND, BOR, BXOR */
    return groups[k];
}

static int op_index(MPI_Op op) {
    const MPI_Op ops[NOPS] = {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN, MPI_LAND, MPI_LOR, MPI_LXOR,
                              MPI_BAND, MPI_BOR, MPI_BXOR};
    for (int k = 0; k < NOPS; k++)
        if (op == ops[k]) return k;
    return -1;
}

const char *dc_op_name(MPI_Op op) {
    static const char *const names[NOPS] = {"MPI_SUM", "MPI_PROD", "MPI_MAX", "MPI_MIN", "MPI_LAND", "MPI_LOR",
                                            "MPI_LXOR", "MPI_BAND", "MPI_BOR", "MPI_BXOR"};
    int k = op_index(op);
    return k < 0 ? "a user-defined or other op" : names[k];
}

/* The table is built in a function: MPI's handles need not be constant expressions (Open MPI's are addresses).
 * Copies the row of datatype t into out; 0 when t is not a predefined basic type the executor serves. */
static int find_type_uncached(MPI_Datatype t, type_row *out);

/* find_type with the last type found remembered per thread (the row table is built on the stack per look-up, and a
 * program calls with the same datatype over and over): a cached handle is a predefined one, never reused. */
static int find_type(MPI_Datatype t, type_row *out) {
    static _Thread_local int have;
    static _Thread_local type_row last;
    if (have && last.type == t) {
        *out = last;
        return 1;
    }
    if (!find_type_uncached(t, out)) return 0;
    last = *out;
    have = 1;
    return 1;
}

static int find_type_uncached(MPI_Datatype t, type_row *out) {
#define I64_OR_I32(CT, OP) (sizeof(CT) == 8 ? i64_##OP : i32_##OP)
#define MULTI_ROW(MPI, NAME, CT)                                                                                     \
    {MPI, NAME, sizeof(CT), G_MULTI,                                                                                 \
     {I64_OR_I32(CT, sum), I64_OR_I32(CT, prod), I64_OR_I32(CT, max), I64_OR_I32(CT, min), NULL, NULL, NULL,        \
      I64_OR_I32(CT, band), I64_OR_I32(CT, bor), I64_OR_I32(CT, bxor)}}
    const type_row rows[] = {
        {MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR", sizeof(signed char), G_INT, ROW_INT(schar)},
        {MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", sizeof(unsigned char), G_INT, ROW_INT(uchar)},
        {MPI_SHORT, "MPI_SHORT", sizeof(short), G_INT, ROW_INT(short)},
        {MPI_UNSIGNED_SHORT, "MPI_UNSIGNED_SHORT", sizeof(unsigned short), G_INT, ROW_INT(ushort)},
        {MPI_INT, "MPI_INT", sizeof(int), G_INT, ROW_INT(int)},
        {MPI_UNSIGNED, "MPI_UNSIGNED", sizeof(unsigned), G_INT, ROW_INT(uint)},
        {MPI_LONG, "MPI_LONG", sizeof(long), G_INT, ROW_INT(long)},
        {MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG", sizeof(unsigned long), G_INT, ROW_INT(ulong)},
        {MPI_LONG_LONG_INT, "MPI_LONG_LONG", sizeof(long long), G_INT, ROW_INT(llong)},
        {MPI_UNSIGNED_LONG_LONG, "MPI_UNSIGNED_LONG_LONG", sizeof(unsigned long long), G_INT, ROW_INT(ullong)},
        {MPI_INT8_T, "MPI_INT8_T", 1, G_INT, ROW_INT(i8)},
        {MPI_INT16_T, "MPI_INT16_T", 2, G_INT, ROW_INT(i16)},
        {MPI_INT32_T, "MPI_INT32_T", 4, G_INT, ROW_INT(i32)},
        {MPI_INT64_T, "MPI_INT64_T", 8, G_INT, ROW_INT(i64)},
        {MPI_UINT8_T, "MPI_UINT8_T", 1, G_INT, ROW_INT(u8)},
        {MPI_UINT16_T, "MPI_UINT16_T", 2, G_INT, ROW_INT(u16)},
        {MPI_UINT32_T, "MPI_UINT32_T", 4, G_INT, ROW_INT(u32)},
        {MPI_UINT64_T, "MPI_UINT64_T", 8, G_INT, ROW_INT(u64)},
        {MPI_FLOAT, "MPI_FLOAT", sizeof(float), G_FLOAT, ROW_FLOAT(flt)},
        {MPI_DOUBLE, "MPI_DOUBLE", sizeof(double), G_FLOAT, ROW_FLOAT(dbl)},
        {MPI_LONG_DOUBLE, "MPI_LONG_DOUBLE", sizeof(long double), G_FLOAT, ROW_FLOAT(ldbl)},
        {MPI_C_FLOAT_COMPLEX, "MPI_C_FLOAT_COMPLEX", sizeof(float complex), G_COMPLEX, ROW_COMPLEX(cflt)},
        {MPI_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX", sizeof(double complex), G_COMPLEX, ROW_COMPLEX(cdbl)},
        {MPI_C_LONG_DOUBLE_COMPLEX, "MPI_C_LONG_DOUBLE_COMPLEX", sizeof(long double complex), G_COMPLEX,
         ROW_COMPLEX(cldbl)},
        {MPI_C_BOOL, "MPI_C_BOOL", sizeof(bool), G_LOGICAL, ROW_LOGICAL(cbool)},
        {MPI_BYTE, "MPI_BYTE", 1, G_BYTE, ROW_BYTE(uchar)},
        MULTI_ROW(MPI_AINT, "MPI_AINT", MPI_Aint),
        MULTI_ROW(MPI_OFFSET, "MPI_OFFSET", MPI_Offset),
        MULTI_ROW(MPI_COUNT, "MPI_COUNT", MPI_Count),
    };
#undef MULTI_ROW
#undef I64_OR_I32
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        if (rows[i].type == MPI_DATATYPE_NULL || rows[i].type != t) continue;
        int size = 0;  /* the C type must be the one MPI describes */
        if (PMPI_Type_size(t, &size) != MPI_SUCCESS || (size_t)size != rows[i].size) return 0;
        *out = rows[i];
        return 1;
    }
    return 0;
}

int dc_known_type(MPI_Datatype datatype, const char **name) {
    type_row row;
    if (find_type(datatype, &row)) {
        *name = row.name;
        return 1;
    }
    *name = datatype == MPI_CHAR ? "MPI_CHAR" : datatype == MPI_WCHAR ? "MPI_WCHAR" : "a derived or unsupported type";
    return 0;
}

dc_reduce_fn dc_reduction(MPI_Op op, MPI_Datatype datatype, const char **why) {
    int k = op_index(op);
    type_row row;
    if (!find_type(datatype, &row)) {
        *why = "a derived, non-contiguous or unsupported datatype";
        return NULL;
    }
    if (k < 0) {
        *why = "a user-defined or non-reduction op";
        return NULL;
    }
    if (!(op_groups(k) & row.group) || row.fn[k] == NULL) {
        *why = "an op MPI does not define on the datatype";
        return NULL;
    }
    return row.fn[k];
}
