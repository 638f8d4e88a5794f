/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_resp — libFuzzer target for the RESP request parser.
 *
 * The input is parsed as one stream (commands consumed until INCOMPLETE or ERROR), then fed
 * again in pseudo-random chunks through an exactly-sized heap buffer that moves on every append,
 * as a connection's read buffer does. Checks: every OK consumes 1..len bytes, every argument
 * lies inside the input or the parser's scratch block, and the chunked run yields exactly the
 * same commands and the same final status as the whole-input run. Both runs use two sets of
 * limits (tiny ones so the fuzzer hits every limit, and production-sized ones).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/resp.h"

struct cmd {
    size_t consumed, argc;
    uint64_t hash;
};

struct run {
    struct cmd *cmds;
    size_t n;
    int final; /* RESP_INCOMPLETE or RESP_ERROR */
};

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 1099511628211ull;
    return h;
}

static int inside(const char *p, size_t n, const char *base, size_t blen)
{
    if (n == 0)
        return 1; /* an empty argument's pointer is never dereferenced */
    return base && p >= base && n <= blen && (size_t)(p - base) <= blen - n;
}

/* Check one OK result and return its fingerprint. */
static struct cmd check_cmd(const struct resp_parser *ps, const char *data, size_t len,
                            size_t consumed, size_t argc, const struct resp_arg *argv)
{
    if (consumed == 0 || consumed > len)
        abort();
    if (argc > ps->lim.max_args)
        abort();
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < argc; i++) {
        const struct resp_arg *a = &argv[i];
        if (!inside(a->p, a->len, data, consumed) &&
            !inside(a->p, a->len, ps->scratch.p, ps->scratch.len))
            abort();
        if (a->len > ps->lim.max_bulk && a->len > ps->lim.max_inline)
            abort();
        h = fnv(h, &a->len, sizeof(a->len));
        if (a->len)
            h = fnv(h, a->p, a->len);
    }
    return (struct cmd){consumed, argc, h};
}

static void whole(const struct resp_limits *lim, const char *data, size_t len, struct run *out)
{
    struct resp_parser ps;
    resp_parser_init(&ps, lim);
    size_t off = 0;
    char err[128];
    for (;;) {
        size_t consumed, argc;
        struct resp_arg *argv;
        int r = resp_parse(&ps, data + off, len - off, &consumed, &argc, &argv, err, sizeof(err));
        if (r != RESP_OK) {
            if (consumed != 0 || (r == RESP_ERROR && err[0] == '\0'))
                abort();
            out->final = r;
            break;
        }
        out->cmds[out->n++] = check_cmd(&ps, data + off, len - off, consumed, argc, argv);
        off += consumed;
    }
    resp_parser_free(&ps);
}

/* xorshift: chunk sizes must be reproducible for a given input */
static uint64_t next_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static size_t chunk_size(uint64_t *rng, size_t left)
{
    uint64_t r = next_rand(rng);
    size_t n = (r & 7) == 0 ? (size_t)(r >> 8) % 512 + 1 : (size_t)(r >> 8) % 8 + 1;
    return n < left ? n : left;
}

/* Parse whatever the buffer holds; compares with the whole-input run. 1 when the stream ended. */
static int drain(struct resp_parser *ps, char **buf, size_t *have, const struct run *ref, size_t *k)
{
    char err[128];
    for (;;) {
        size_t consumed, argc;
        struct resp_arg *argv;
        int r = resp_parse(ps, *buf, *have, &consumed, &argc, &argv, err, sizeof(err));
        if (r == RESP_INCOMPLETE)
            return 0;
        if (r == RESP_ERROR) {
            if (*k != ref->n || ref->final != RESP_ERROR)
                abort(); /* an error on a prefix must be an error on the whole */
            return 1;
        }
        struct cmd c = check_cmd(ps, *buf, *have, consumed, argc, argv);
        if (*k >= ref->n || memcmp(&c, &ref->cmds[*k], sizeof(c)) != 0)
            abort();
        (*k)++;
        memmove(*buf, *buf + consumed, *have - consumed);
        *have -= consumed;
    }
}

static void chunked(const struct resp_limits *lim, const char *data, size_t len,
                    const struct run *ref)
{
    struct resp_parser ps;
    resp_parser_init(&ps, lim);
    uint64_t rng = fnv(1469598103934665603ull, data, len) | 1;
    char *buf = NULL;
    size_t have = 0, off = 0, k = 0;
    int ended = 0;
    while (off < len && !ended) {
        size_t n = chunk_size(&rng, len - off);
        /* exact-size block, so ASan flags any read past the bytes received so far */
        char *nb = malloc(have + n);
        if (!nb)
            abort();
        if (have)
            memcpy(nb, buf, have);
        memcpy(nb + have, data + off, n);
        free(buf);
        buf = nb;
        have += n;
        off += n;
        ended = drain(&ps, &buf, &have, ref, &k);
    }
    if (!ended && (k != ref->n || ref->final != RESP_INCOMPLETE))
        abort();
    free(buf);
    resp_parser_free(&ps);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const struct resp_limits lims[2] = {
        {.max_bulk = 16, .max_args = 4, .max_inline = 32},
        {.max_bulk = 16u << 20, .max_args = 1024, .max_inline = 64u << 10},
    };
    /* the input as its own exact-size block, so over-reads of the whole run are caught too */
    char *in = malloc(size ? size : 1);
    if (!in)
        return 0;
    if (size)
        memcpy(in, data, size);
    struct run ref = {.cmds = malloc((size + 1) * sizeof(struct cmd))};
    if (!ref.cmds) {
        free(in);
        return 0;
    }
    for (int i = 0; i < 2; i++) {
        ref.n = 0;
        whole(&lims[i], in, size, &ref);
        chunked(&lims[i], in, size, &ref);
    }
    free(ref.cmds);
    free(in);
    return 0;
}
