/* SPDX-License-Identifier: Apache-2.0 */
/* timefmt — RFC 3339 with milliseconds (timefmt.h). Digits are written by hand, so the length
 * is fixed and no format width depends on what gmtime_r returned. */
#include "common/timefmt.h"

#include <string.h>
#include <time.h>

#define YEAR_MAX 9999

/* The w low decimal digits of v into p, zero-padded. */
static char *digits(char *p, unsigned v, int w)
{
    for (int i = w - 1; i >= 0; i--, v /= 10)
        p[i] = (char)('0' + v % 10);
    return p + w;
}

int time_rfc3339(char out[TIME_RFC3339_BUF], uint64_t ms)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    if ((uint64_t)t != ms / 1000 || !gmtime_r(&t, &tm) || tm.tm_year + 1900 > YEAR_MAX) {
        memcpy(out, TIME_RFC3339_NONE, TIME_RFC3339_BUF);
        return -1;
    }
    char *p = digits(out, (unsigned)(tm.tm_year + 1900), 4);
    *p++ = '-';
    p = digits(p, (unsigned)tm.tm_mon + 1, 2);
    *p++ = '-';
    p = digits(p, (unsigned)tm.tm_mday, 2);
    *p++ = 'T';
    p = digits(p, (unsigned)tm.tm_hour, 2);
    *p++ = ':';
    p = digits(p, (unsigned)tm.tm_min, 2);
    *p++ = ':';
    p = digits(p, (unsigned)tm.tm_sec, 2);
    *p++ = '.';
    p = digits(p, (unsigned)(ms % 1000), 3);
    *p++ = 'Z';
    *p = '\0';
    return 0;
}
