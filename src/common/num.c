/* SPDX-License-Identifier: Apache-2.0 */
/* num — the strict unsigned decimal parser (num.h). */
#include "common/num.h"

#include <string.h>

int num_parse_u64_in(const char *p, size_t len, uint64_t min, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;
    if (p == NULL || len == 0)
        return -1;
    for (size_t i = 0; i < len; i++) {
        unsigned d = (unsigned)((unsigned char)p[i] - '0');
        if (d > 9 || v > (UINT64_MAX - d) / 10) /* not a digit, or v * 10 + d overflows */
            return -1;
        v = v * 10 + d;
    }
    if (v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

int num_parse_u64(const char *p, size_t len, uint64_t *out)
{
    return num_parse_u64_in(p, len, 0, UINT64_MAX, out);
}

int num_parse_u64_str(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    return s ? num_parse_u64_in(s, strlen(s), min, max, out) : -1;
}
