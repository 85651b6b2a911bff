/* libdirectcoll: the tuning table, DIRECTCOLL_SCHEDULES (docs/runtime.md, "The native runtime").
 *
 * A JSON list of entries, or an object whose "entries" is that list; each entry
 *   {"collective": "allreduce", "ranks": 4, "min_bytes": 0, "max_bytes": 65536, "program": "swing4.dcp"}
 * (collective: allreduce, reduce_scatter, allgather, alltoall, broadcast or reduce; a rooted program serves the
 * root it was compiled for, which the program file records: other keys, such as a "root" written for people, are
 * skipped)
 * (max_bytes null or absent: no upper bound; min_bytes absent: 0; a relative program path is relative to the
 * table's folder). A small JSON reader, enough for this table: objects, lists, strings (escapes kept as-is except
 * \" and \\ and \/), numbers, true, false, null.
 */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dc_internal.h"

const char *dc_collective_name(uint32_t collective) {
    static const char *const names[DC_NCOLLECTIVES] = {"allreduce", "reduce_scatter", "allgather", "alltoall",
                                                       "broadcast", "reduce"};
    return collective < DC_NCOLLECTIVES ? names[collective] : "?";
}

typedef struct {
    const char *p, *end, *start;
    char *err;
    size_t errlen;
} reader;

static void ws(reader *r) {
    while (r->p < r->end && isspace((unsigned char)*r->p)) r->p++;
}

static int fail(reader *r, const char *what) {
    if (!r->err[0]) snprintf(r->err, r->errlen, "%s at byte %ld", what, (long)(r->p - r->start));
    return -1;
}

/* a string into a fresh buffer (out), r->p just past its closing quote */
static int string(reader *r, char **out) {
    ws(r);
    if (r->p >= r->end || *r->p != '"') return fail(r, "expected a string");
    const char *s = ++r->p;
    size_t n = 0;
    char *buf = malloc((size_t)(r->end - s) + 1);
    if (!buf) return fail(r, "out of memory");
    while (r->p < r->end && *r->p != '"') {
        if (*r->p == '\\' && r->p + 1 < r->end) {
            char e = r->p[1];
            buf[n++] = (e == '"' || e == '\\' || e == '/') ? e : e == 'n' ? '\n' : e == 't' ? '\t' : e;
            r->p += 2;
        } else {
            buf[n++] = *r->p++;
        }
    }
    if (r->p >= r->end) {
        free(buf);
        return fail(r, "an unterminated string");
    }
    r->p++;
    buf[n] = '\0';
    *out = buf;
    return 0;
}

/* skip any value (for keys the table does not use) */
static int skip(reader *r, int depth) {
    ws(r);
    if (r->p >= r->end || depth > 64) return fail(r, "expected a value");
    char c = *r->p;
    if (c == '"') {
        char *s = NULL;
        int rc = string(r, &s);
        free(s);
        return rc;
    }
    if (c == '{' || c == '[') {
        char close = c == '{' ? '}' : ']';
        r->p++;
        ws(r);
        if (r->p < r->end && *r->p == close) {
            r->p++;
            return 0;
        }
        for (;;) {
            if (c == '{') {
                char *k = NULL;
                if (string(r, &k) != 0) return -1;
                free(k);
                ws(r);
                if (r->p >= r->end || *r->p++ != ':') return fail(r, "expected ':'");
            }
            if (skip(r, depth + 1) != 0) return -1;
            ws(r);
            if (r->p < r->end && *r->p == ',') {
                r->p++;
                continue;
            }
            if (r->p < r->end && *r->p == close) {
                r->p++;
                return 0;
            }
            return fail(r, "expected ',' or a closing bracket");
        }
    }
    const char *s = r->p;
    while (r->p < r->end && (isalnum((unsigned char)*r->p) || strchr("+-.", *r->p))) r->p++;
    return r->p > s ? 0 : fail(r, "expected a value");
}

/* a number (null: *isnull = 1) */
static int number(reader *r, double *v, int *isnull) {
    ws(r);
    *isnull = 0;
    if (r->end - r->p >= 4 && strncmp(r->p, "null", 4) == 0) {
        r->p += 4;
        *isnull = 1;
        return 0;
    }
    char buf[64];
    size_t n = 0;
    while (r->p < r->end && n < sizeof buf - 1 && (isdigit((unsigned char)*r->p) || strchr("+-.eE", *r->p)))
        buf[n++] = *r->p++;
    buf[n] = '\0';
    char *endp = NULL;
    *v = strtod(buf, &endp);
    return n && endp && *endp == '\0' ? 0 : fail(r, "expected a number");
}

static int entry(reader *r, dc_entry *e, const char *dir) {
    ws(r);
    if (r->p >= r->end || *r->p++ != '{') return fail(r, "expected an entry object");
    e->min_bytes = 0;
    e->max_bytes = -1;
    e->ranks = -1;
    e->collective = 99;
    char *prog = NULL;
    ws(r);
    if (r->p < r->end && *r->p == '}') {
        r->p++;
    } else {
        for (;;) {
            char *key = NULL;
            if (string(r, &key) != 0) goto fail;
            ws(r);
            if (r->p >= r->end || *r->p++ != ':') {
                free(key);
                fail(r, "expected ':'");
                goto fail;
            }
            int rc = 0, isnull = 0;
            double v = 0;
            if (strcmp(key, "collective") == 0) {
                char *name = NULL;
                rc = string(r, &name);
                if (rc == 0) {
                    for (uint32_t k = 0; k < DC_NCOLLECTIVES; k++)
                        if (strcmp(name, dc_collective_name(k)) == 0) e->collective = k;
                    if (e->collective == 99) rc = fail(r, "an unknown collective");
                }
                free(name);
            } else if (strcmp(key, "ranks") == 0) {
                rc = number(r, &v, &isnull);
                e->ranks = isnull ? -1 : (int)v;
            } else if (strcmp(key, "min_bytes") == 0) {
                rc = number(r, &v, &isnull);
                e->min_bytes = isnull ? 0 : v;
            } else if (strcmp(key, "max_bytes") == 0) {
                rc = number(r, &v, &isnull);
                e->max_bytes = isnull ? -1 : v;
            } else if (strcmp(key, "program") == 0) {
                free(prog);
                prog = NULL;
                rc = string(r, &prog);
            } else {
                rc = skip(r, 0);
            }
            free(key);
            if (rc != 0) goto fail;
            ws(r);
            if (r->p < r->end && *r->p == ',') {
                r->p++;
                continue;
            }
            if (r->p < r->end && *r->p == '}') {
                r->p++;
                break;
            }
            fail(r, "expected ',' or '}'");
            goto fail;
        }
    }
    if (!prog || e->ranks < 1 || e->collective == 99) {
        fail(r, "an entry needs collective, ranks >= 1 and program");
        goto fail;
    }
    if (prog[0] == '/' || !dir[0]) {
        e->path = prog;
    } else {
        e->path = malloc(strlen(dir) + strlen(prog) + 2);
        if (!e->path) goto fail;
        sprintf(e->path, "%s/%s", dir, prog);
        free(prog);
    }
    return 0;
fail:
    free(prog);
    return -1;
}

int dc_table_load(const char *path, dc_entry **entries, size_t *n, char *err, size_t errlen) {
    *entries = NULL;
    *n = 0;
    err[0] = '\0';
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open the tuning table %s", path);
        return -1;
    }
    char *text = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 4096 > cap) {
            cap = 2 * cap + 4096;
            char *t = realloc(text, cap);
            if (!t) break;
            text = t;
        }
        size_t got = fread(text + len, 1, cap - len, f);
        len += got;
        if (got == 0) break;
    }
    fclose(f);
    char dir[4096] = "";
    const char *slash = strrchr(path, '/');
    if (slash && (size_t)(slash - path) < sizeof dir) {
        memcpy(dir, path, (size_t)(slash - path));
        dir[slash - path] = '\0';
        if (!dir[0]) strcpy(dir, "/");
    }
    char inner[400] = "";
    reader r = {text, text + len, text, inner, sizeof inner};
    size_t cap_e = 0;
    int rc = -1;
    if (!text) goto done;
    ws(&r);
    if (r.p < r.end && *r.p == '{') {  /* {"entries": [...], ...}: find the list */
        r.p++;
        for (;;) {
            char *key = NULL;
            if (string(&r, &key) != 0) goto done;
            ws(&r);
            if (r.p >= r.end || *r.p++ != ':') {
                free(key);
                fail(&r, "expected ':'");
                goto done;
            }
            int found = strcmp(key, "entries") == 0;
            free(key);
            if (found) break;
            if (skip(&r, 0) != 0) goto done;
            ws(&r);
            if (r.p < r.end && *r.p == ',') {
                r.p++;
                continue;
            }
            fail(&r, "no \"entries\" list");
            goto done;
        }
        ws(&r);
    }
    if (r.p >= r.end || *r.p++ != '[') {
        fail(&r, "expected a list of entries");
        goto done;
    }
    ws(&r);
    if (r.p < r.end && *r.p == ']') {
        rc = 0;
        goto done;
    }
    for (;;) {
        if (*n == cap_e) {
            cap_e = cap_e ? 2 * cap_e : 8;
            dc_entry *v = realloc(*entries, cap_e * sizeof *v);
            if (!v) goto done;
            *entries = v;
        }
        memset(&(*entries)[*n], 0, sizeof **entries);
        if (entry(&r, &(*entries)[*n], dir) != 0) goto done;
        (*n)++;
        ws(&r);
        if (r.p < r.end && *r.p == ',') {
            r.p++;
            continue;
        }
        if (r.p < r.end && *r.p == ']') break;
        fail(&r, "expected ',' or ']'");
        goto done;
    }
    rc = 0;
done:
    free(text);
    if (rc != 0) {
        snprintf(err, errlen, "%s: %s", path, inner[0] ? inner : "cannot read it");
        for (size_t i = 0; i < *n; i++) free((*entries)[i].path);
        free(*entries);
        *entries = NULL;
        *n = 0;
    }
    return rc;
}
