/* SPDX-License-Identifier: Apache-2.0 */
/* test_config.c — fencelockd's settings from a config file, FENCELOCK_* variables and flags
 * (src/server/config/: the table, one value's parser with its units, the sources), --flag=value,
 * --print-config, and the JSON log format's escaping
 * (src/common/log.c). Messages on stderr and --print-config's stdout are captured through a
 * temporary file. */
#include <stdlib.h>
#include <unistd.h>

#include "server/config/config_int.h"
#include "server/server.h"
#include "test.h"

#define OUT_MAX 65536

static char out_[OUT_MAX]; /* what the last parse() printed on stdout and stderr */
static char path_[64];     /* the last config file written */

/* fd 1 and 2 into a temporary file while f runs; its text into out_. */
static int capture_parse(struct srv_config *c, int argc, char **argv)
{
    char tmp[] = "/tmp/fl_test_config_out_XXXXXX";
    int fd = mkstemp(tmp);
    fflush(stdout);
    fflush(stderr);
    int o1 = dup(1), o2 = dup(2);
    dup2(fd, 1);
    dup2(fd, 2);
    srv_config_defaults(c);
    int rc = srv_config_parse(c, argc, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(o1, 1);
    dup2(o2, 2);
    close(o1);
    close(o2);
    ssize_t n = pread(fd, out_, OUT_MAX - 1, 0);
    out_[n > 0 ? n : 0] = 0;
    close(fd);
    unlink(tmp);
    return rc;
}

#define PARSE(c, ...)                                                                              \
    capture_parse((c), sizeof((char *[]){"fencelockd", __VA_ARGS__}) / sizeof(char *),             \
                  (char *[]){"fencelockd", __VA_ARGS__})

static const char *write_conf(const char *text)
{
    snprintf(path_, sizeof path_, "/tmp/fl_test_config_XXXXXX");
    int fd = mkstemp(path_);
    if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
        return "/nonexistent";
    close(fd);
    return path_;
}

static void clean_env(void)
{
    unsetenv("FENCELOCK_LISTEN");
    unsetenv("FENCELOCK_MAX_CLIENTS");
    unsetenv("FENCELOCK_CONFIG");
    unsetenv("FENCELOCK_PEER_PASSWORD");
    unsetenv("FENCELOCK_INSECURE_NO_AUTH");
    unsetenv("FENCELOCK_LISTN");
    if (path_[0])
        unlink(path_);
    path_[0] = 0;
}

TEST(test_file_sets_values_and_skips_comments_and_blank_lines)
{
    clean_env();
    struct srv_config c;
    const char *f = write_conf("# a comment\n\n  listen = 127.0.0.1:9100\n"
                               "max-clients=77   # why: a small box\n"
                               "data-dir = /tmp/dir#1\n"
                               "initial-cluster = 1=127.0.0.1:9101\n"
                               "log-format = json\r\n");
    CHECK(PARSE(&c, "--config", (char *)f) == 0);
    CHECK(!strcmp(c.listen_host, "127.0.0.1") && c.listen_port == 9100);
    CHECK_EQ_U64(c.max_clients, 77);
    CHECK(!strcmp(c.data_dir, "/tmp/dir#1")); /* a '#' after no blank is part of the value */
    CHECK_EQ_U64(c.n_peers, 1);
    CHECK(!strcmp(c.raft_address, "127.0.0.1:9101"));
    CHECK(c.log_format == LOG_JSON);
}

TEST(test_file_booleans_take_true_false_yes_no)
{
    clean_env();
    struct srv_config c;
    CHECK(PARSE(&c, "--config", (char *)write_conf("insecure-no-auth = yes\n")) == 0);
    CHECK(c.insecure_no_auth);
    clean_env();
    CHECK(PARSE(&c, "--config", (char *)write_conf("insecure-no-auth = false\n")) == 0);
    CHECK(!c.insecure_no_auth);
    clean_env();
    CHECK(PARSE(&c, "--config", (char *)write_conf("insecure-no-auth = maybe\n")) == -1);
    CHECK(strstr(out_, ":1: --insecure-no-auth wants true or false"));
}

TEST(test_env_overrides_file_and_flag_overrides_env)
{
    clean_env();
    struct srv_config c;
    const char *f = write_conf("listen = 127.0.0.1:9200\nmax-clients = 5\nmax-args = 9\n");
    setenv("FENCELOCK_LISTEN", "127.0.0.1:9201", 1);
    setenv("FENCELOCK_MAX_CLIENTS", "6", 1);
    CHECK(PARSE(&c, "--config", (char *)f, "--max-clients", "7") == 0);
    CHECK_EQ_U64(c.listen_port, 9201); /* env over file */
    CHECK_EQ_U64(c.max_clients, 7);    /* flag over env */
    CHECK_EQ_U64(c.max_args, 9);       /* file over default */
    CHECK(!strcmp(c.config_file, f));  /* for the start's log line */
    CHECK(!strcmp(c.config_env, "FENCELOCK_LISTEN, FENCELOCK_MAX_CLIENTS"));
    clean_env();
}

TEST(test_boolean_from_the_environment)
{
    clean_env();
    struct srv_config c;
    setenv("FENCELOCK_INSECURE_NO_AUTH", "true", 1);
    CHECK(PARSE(&c, "--listen", "0.0.0.0:7480") == 0); /* refused without it */
    CHECK(c.insecure_no_auth);
    setenv("FENCELOCK_INSECURE_NO_AUTH", "no", 1);
    CHECK(PARSE(&c, "--listen", "0.0.0.0:7480") == -1);
    CHECK(strstr(out_, "refusing to listen for clients on 0.0.0.0"));
    clean_env();
}

TEST(test_config_file_from_the_environment)
{
    clean_env();
    struct srv_config c;
    setenv("FENCELOCK_CONFIG", write_conf("max-args = 11\n"), 1);
    CHECK(PARSE(&c, "--id", "1") == 0);
    CHECK_EQ_U64(c.max_args, 11);
    clean_env();
}

TEST(test_empty_variable_counts_as_unset)
{
    clean_env();
    struct srv_config c;
    setenv("FENCELOCK_MAX_CLIENTS", "", 1);
    CHECK(PARSE(&c, "--id", "1") == 0);
    CHECK_EQ_U64(c.max_clients, 10000);
    clean_env();
}

TEST(test_unknown_key_is_refused_naming_file_and_line)
{
    clean_env();
    struct srv_config c;
    const char *f = write_conf("# x\nlisten = 127.0.0.1:9300\nmax-client = 5\n");
    CHECK(PARSE(&c, "--config", (char *)f) == -1);
    char want[128];
    snprintf(want, sizeof want, "%s:3: unknown key 'max-client'", f);
    CHECK(strstr(out_, want));
    clean_env();
    CHECK(PARSE(&c, "--config", (char *)write_conf("--listen = 127.0.0.1:1\n")) == -1);
    CHECK(strstr(out_, ":1: unknown key '--listen'"));
}

TEST(test_bad_value_is_refused_naming_file_and_line)
{
    clean_env();
    struct srv_config c;
    const char *f = write_conf("\n\nmax-clients = lots\n");
    CHECK(PARSE(&c, "--config", (char *)f) == -1);
    char want[128];
    snprintf(want, sizeof want, "%s:3: --max-clients wants a number", f);
    CHECK(strstr(out_, want));
    clean_env();
    CHECK(PARSE(&c, "--config", (char *)write_conf("listen = nowhere\n")) == -1);
    CHECK(strstr(out_, ":1: bad value for --listen: 'nowhere'"));
    clean_env();
    CHECK(PARSE(&c, "--config", (char *)write_conf("listen 127.0.0.1:1\n")) == -1);
    CHECK(strstr(out_, ":1: expected `key = value`"));
    clean_env();
    CHECK(PARSE(&c, "--config", (char *)write_conf("acl-file =\n")) == -1);
    CHECK(strstr(out_, ":1: bad value for --acl-file"));
}

TEST(test_key_given_twice_in_the_file_is_refused)
{
    clean_env();
    struct srv_config c;
    CHECK(PARSE(&c, "--config", (char *)write_conf("max-args = 5\n\nmax-args = 6\n")) == -1);
    CHECK(strstr(out_, ":3: max-args given twice (first on line 1)"));
}

TEST(test_bad_variable_is_refused_naming_it)
{
    clean_env();
    struct srv_config c;
    setenv("FENCELOCK_MAX_CLIENTS", "-3", 1);
    CHECK(PARSE(&c, "--id", "1") == -1);
    CHECK(strstr(out_, "environment FENCELOCK_MAX_CLIENTS: --max-clients wants a number"));
    clean_env();
}

TEST(test_unknown_variable_warns_and_starts)
{
    clean_env();
    struct srv_config c;
    setenv("FENCELOCK_LISTN", "127.0.0.1:1", 1);
    setenv("FENCELOCK_PEER_PASSWORD", "sekrit", 1);
    CHECK(PARSE(&c, "--id", "1") == 0);
    CHECK(strstr(out_, "warning: FENCELOCK_LISTN is not a setting"));
    CHECK(!strstr(out_, "PEER_PASSWORD"));
    clean_env();
}

TEST(test_missing_config_file_is_refused)
{
    clean_env();
    struct srv_config c;
    CHECK(PARSE(&c, "--config", "/nonexistent/fl.conf") == -1);
    CHECK(strstr(out_, "cannot read config file /nonexistent/fl.conf"));
    CHECK(PARSE(&c, "--config") == -1);
    CHECK(strstr(out_, "--config needs a value"));
}

TEST(test_print_config_shows_each_value_and_its_source)
{
    clean_env();
    struct srv_config c;
    const char *f = write_conf("listen = 127.0.0.1:9400\n# c\npeer-user = node\n"
                               "peer-password-file = /etc/fl/peer.pw\n");
    setenv("FENCELOCK_MAX_CLIENTS", "12", 1);
    setenv("FENCELOCK_PEER_PASSWORD", "sekrit", 1);
    CHECK(PARSE(&c, "--config", (char *)f, "--id", "3", "--print-config", "--insecure-no-auth") ==
          1);
    CHECK(strstr(out_, "\nlisten = 127.0.0.1:9400  # file:1\n"));
    CHECK(strstr(out_, "\npeer-password-file = /etc/fl/peer.pw  # file:4\n"));
    CHECK(strstr(out_, "\nmax-clients = 12  # env FENCELOCK_MAX_CLIENTS\n"));
    CHECK(strstr(out_, "\nid = 3  # flag\n"));
    CHECK(strstr(out_, "\ninsecure-no-auth = true  # flag\n"));
    CHECK(strstr(out_, "\nelection-ms = 400  # default\n"));
    CHECK(strstr(out_, "\nraft-listen = 127.0.0.1:7481  # default\n"));
    CHECK(strstr(out_, "\n# acl-file =  # default (unset)\n"));
    CHECK(strstr(out_, "FENCELOCK_PEER_PASSWORD is set (not shown)"));
    CHECK(!strstr(out_, "sekrit"));
    clean_env();
}

/* --print-config's output is a config file giving the same settings. */
TEST(test_print_config_output_reads_back)
{
    clean_env();
    struct srv_config c, d;
    CHECK(PARSE(&c, "--max-args", "13", "--join", "127.0.0.1:9500", "--print-config") == 1);
    static char copy[OUT_MAX];
    snprintf(copy, sizeof copy, "%s", out_);
    CHECK(PARSE(&d, "--config", (char *)write_conf(copy)) == 0);
    CHECK_EQ_U64(d.max_args, 13);
    CHECK_EQ_U64(d.n_join, 1);
    CHECK(!strcmp(d.join[0], "127.0.0.1:9500"));
    clean_env();
}

/* Every row is well formed: a unique "--name", a field its type fits, a default inside its
 * bounds that its own parser accepts (srv_config_defaults goes through it). */
TEST(test_every_row_is_well_formed_and_its_default_parses)
{
    for (size_t id = 0; id < cfg_n_rows; id++) {
        const struct cfg_row *r = &cfg_rows[id];
        CHECK(!strncmp(r->name, "--", 2) && r->help && *r->help);
        CHECK(cfg_id(r->name, strlen(r->name)) == (int)id); /* unique */
        char def[128];
        cfg_default_text(r, def, sizeof def);
        struct srv_config c;
        memset(&c, 0, sizeof c);
        switch (r->type) {
        case CFG_NUM:
            CHECK(r->size == 4 || r->size == 8);
            CHECK(r->min <= r->def && r->def <= r->max);
            CHECK(r->size == 8 || r->max <= UINT32_MAX);
            break;
        case CFG_BOOL:
            CHECK(r->size == sizeof(bool) && !r->def_text);
            break;
        case CFG_PATH:
            CHECK(r->size > 1);
            break;
        case CFG_TEXT:
            CHECK(r->parse != NULL && r->size == 0);
            break;
        }
        if (*def && cfg_set(&c, r, def, "") != 0) {
            fprintf(stderr, "  %s: default '%s' does not parse\n", r->name, def);
            CHECK(0);
        }
    }
}

TEST(test_sizes_take_binary_units)
{
    clean_env();
    struct srv_config c;
    CHECK(PARSE(&c, "--max-bulk", "512KiB", "--max-output=64MiB", "--max-input-total", "1GiB",
                "--max-data-bytes", "1TiB", "--max-value", "4096") == 0);
    CHECK_EQ_U64(c.max_bulk, 512u << 10);
    CHECK_EQ_U64(c.max_output, 64u << 20);
    CHECK_EQ_U64(c.max_input_total, 1u << 30);
    CHECK_EQ_U64(c.max_data_bytes, 1ull << 40);
    CHECK_EQ_U64(c.max_value, 4096);
    const char *bad[] = {"1KB", "64mib", "64 MiB", "1.5MiB", "MiB", "-1KiB", "99999999999999TiB"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(PARSE(&c, "--max-output", (char *)bad[i]) == -1);
        CHECK(strstr(out_, "--max-output wants a number in 1024..1099511627776 bytes (or with a "
                           "unit: 512KiB, 64MiB, 1GiB, 1TiB), got '"));
    }
    CHECK(PARSE(&c, "--max-bulk", "2GiB") == -1);    /* bounds after the conversion */
    CHECK(PARSE(&c, "--max-clients", "1KiB") == -1); /* a count takes no unit */
    CHECK(strstr(out_, "--max-clients wants a number in 1..1000000, got '1KiB'\n"));
}

TEST(test_durations_take_units_in_the_settings_own_unit)
{
    clean_env();
    struct srv_config c;
    CHECK(PARSE(&c, "--idle-timeout", "2m", "--max-wait=1h", "--election-ms", "500ms",
                "--heartbeat-ms", "40", "--auth-timeout", "10s", "--tcp-keepalive", "2m") == 0);
    CHECK_EQ_U64(c.idle_timeout, 120000);
    CHECK_EQ_U64(c.max_wait, 3600000);
    CHECK_EQ_U64(c.election_ms, 500);
    CHECK_EQ_U64(c.heartbeat_ms, 40);
    CHECK_EQ_U64(c.auth_timeout, 10000);
    CHECK_EQ_U64(c.tcp_keepalive, 120); /* seconds: its plain unit */
    CHECK(PARSE(&c, "--tcp-keepalive", "2000ms") == 0);
    CHECK_EQ_U64(c.tcp_keepalive, 2);
    CHECK(PARSE(&c, "--tcp-keepalive", "1500ms") == -1); /* not a whole second */
    CHECK(strstr(out_, "--tcp-keepalive wants a number in 0..86400 seconds"));
    CHECK(PARSE(&c, "--election-ms", "2d") == -1);
    CHECK(strstr(out_, "--election-ms wants a number in 10..60000 ms (or with a unit: 500ms, "
                       "10s, 2m, 1h), got '2d'\n"));
    CHECK(PARSE(&c, "--election-ms", "2m") == -1); /* 120000 is past 60000 */
}

TEST(test_units_in_the_file_and_the_environment)
{
    clean_env();
    struct srv_config c;
    setenv("FENCELOCK_AUTH_TIMEOUT", "5s", 1);
    const char *f = write_conf("max-output = 32MiB  # a comment\nidle-timeout = 90s\n");
    CHECK(PARSE(&c, "--config", (char *)f, "--print-config") == 1);
    CHECK_EQ_U64(c.max_output, 32u << 20);
    CHECK_EQ_U64(c.idle_timeout, 90000);
    CHECK_EQ_U64(c.auth_timeout, 5000);
    /* shown with the largest unit that divides the value, else in the plain unit */
    CHECK(strstr(out_, "\nmax-output = 32MiB  # file:1\n"));
    CHECK(strstr(out_, "\nidle-timeout = 90s  # file:2\n"));
    CHECK(strstr(out_, "\nauth-timeout = 5s  # env FENCELOCK_AUTH_TIMEOUT\n"));
    CHECK(strstr(out_, "\nheartbeat-ms = 40  # default\n"));
    unsetenv("FENCELOCK_AUTH_TIMEOUT");
    clean_env();
}

TEST(test_flag_equals_value)
{
    clean_env();
    struct srv_config c;
    CHECK(PARSE(&c, "--max-args=9", "--listen=127.0.0.1:9100", "--initial-cluster=1=127.0.0.1:9101",
                "--insecure-no-auth=true") == 0);
    CHECK_EQ_U64(c.max_args, 9);
    CHECK(c.listen_port == 9100 && c.n_peers == 1 && c.insecure_no_auth);
    CHECK(!strcmp(c.raft_address, "127.0.0.1:9101"));
    CHECK(PARSE(&c, "--listen=0.0.0.0:9100", "--insecure-no-auth=no") == -1);
    CHECK(strstr(out_, "refusing to listen for clients on 0.0.0.0"));
    CHECK(PARSE(&c, "--insecure-no-auth=maybe") == -1);
    CHECK(strstr(out_, "--insecure-no-auth wants true or false (yes or no), got 'maybe'"));
    CHECK(PARSE(&c, "--max-args=") == -1);
    CHECK(strstr(out_, "--max-args wants a number in 4..1048576, got ''"));
    CHECK(PARSE(&c, "--max-argz=3") == -1);
    CHECK(strstr(out_, "unknown flag --max-argz=3 (see --help)"));
    CHECK(PARSE(&c, "--config=/nonexistent/fl.conf") == -1);
    CHECK(strstr(out_, "cannot read config file /nonexistent/fl.conf"));
    CHECK(PARSE(&c, "--config=" /* an empty name */, "--id", "1") == -1);
    /* the value of `--flag=value` is never taken for the next argument's */
    CHECK(PARSE(&c, "--data-dir=/tmp/x", "--id", "2") == 0);
    CHECK(!strcmp(c.data_dir, "/tmp/x") && c.id == 2);
}

/* A flag --help lists but the settings table lacks could not come from a file. */
TEST(test_every_flag_in_help_is_a_setting)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    CHECK(f);
    srv_config_usage(f);
    fclose(f);
    const char *skip[] = {"--config", "--print-config", "--version", "--hash-password", "--help"};
    int seen = 0, bad = 0;
    for (char *p = buf; (p = strstr(p, "  --")); p += 4) {
        char flag[64];
        if (sscanf(p + 2, "%63[a-z-]", flag) != 1)
            continue;
        bool skipped = false;
        for (size_t i = 0; i < sizeof skip / sizeof skip[0]; i++)
            skipped |= !strcmp(flag, skip[i]);
        if (!skipped && cfg_id(flag, strlen(flag)) < 0) {
            fprintf(stderr, "  %s is in --help but not a setting\n", flag);
            bad++;
        }
        seen++;
    }
    free(buf);
    CHECK(seen > 40);
    CHECK(bad == 0);
}

TEST(test_json_log_line_is_one_object)
{
    char tmp[] = "/tmp/fl_test_config_log_XXXXXX";
    int fd = mkstemp(tmp), o2 = dup(2);
    dup2(fd, 2);
    struct logger l = {.level = LOG_INFO, .id = 7, .format = LOG_JSON};
    LOGW(&l, "key \"%s\"\nend%s", "k\x01", "\x7f\xff");
    LOGD(&l, "dropped");
    dup2(o2, 2);
    close(o2);
    char buf[512];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    close(fd);
    unlink(tmp);
    CHECK(n > 0);
    buf[n] = 0;
    CHECK(!strncmp(buf, "{\"time\":\"", 9));
    CHECK(strstr(buf, "Z\",\"level\":\"warn\",\"node\":7,\"msg\":\"key "
                      "\\\"k\\u0001\\\"\\nend\\u007f\\u00ff\"}\n"));
    CHECK(strchr(buf, '\n') == buf + n - 1); /* one line, the debug one dropped */
}

/* A message whose escaped form outgrows the line is cut before an escape, never inside one,
 * and the line still ends in "..." and the closing quote. */
TEST(test_json_log_line_cut_keeps_escapes_whole)
{
    char tmp[] = "/tmp/fl_test_config_log_XXXXXX";
    int fd = mkstemp(tmp), o2 = dup(2);
    dup2(fd, 2);
    struct logger l = {.level = LOG_INFO, .id = 7, .format = LOG_JSON};
    char msg[3001];
    memset(msg, 0x01, sizeof msg - 1);
    msg[0] = 'x';
    msg[sizeof msg - 1] = 0;
    LOGI(&l, "%s", msg);
    dup2(o2, 2);
    close(o2);
    static char buf[16384];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    close(fd);
    unlink(tmp);
    CHECK(n > 0);
    buf[n] = 0;
    const char *m = strstr(buf, "\"msg\":\"x");
    const char *end = strstr(buf, "...\"}\n");
    CHECK(m && end && end + 6 == buf + n);
    if (!m || !end)
        return;
    m += strlen("\"msg\":\"x");
    CHECK((end - m) % 6 == 0 && end - m > 6 * 1000); /* whole \u0001 escapes, many of them */
    for (const char *p = m; p < end; p += 6)
        CHECK(!strncmp(p, "\\u0001", 6));
}

/* The settings read by these tests must not depend on the caller's shell (the CLI's
 * FENCELOCK_TLS_CA, say): every FENCELOCK_ variable goes before the first test. */
static void scrub_env(void)
{
    char names[64][128];
    size_t n = 0;
    for (char **e = environ; *e && n < 64; e++)
        if (!strncmp(*e, "FENCELOCK_", 10) && strcspn(*e, "=") < sizeof names[0])
            snprintf(names[n++], sizeof names[0], "%.*s", (int)strcspn(*e, "="), *e);
    for (size_t i = 0; i < n; i++)
        unsetenv(names[i]);
}

int main(void)
{
    scrub_env();
    RUN(test_file_sets_values_and_skips_comments_and_blank_lines);
    RUN(test_file_booleans_take_true_false_yes_no);
    RUN(test_env_overrides_file_and_flag_overrides_env);
    RUN(test_boolean_from_the_environment);
    RUN(test_config_file_from_the_environment);
    RUN(test_empty_variable_counts_as_unset);
    RUN(test_unknown_key_is_refused_naming_file_and_line);
    RUN(test_bad_value_is_refused_naming_file_and_line);
    RUN(test_key_given_twice_in_the_file_is_refused);
    RUN(test_bad_variable_is_refused_naming_it);
    RUN(test_unknown_variable_warns_and_starts);
    RUN(test_missing_config_file_is_refused);
    RUN(test_print_config_shows_each_value_and_its_source);
    RUN(test_print_config_output_reads_back);
    RUN(test_every_flag_in_help_is_a_setting);
    RUN(test_every_row_is_well_formed_and_its_default_parses);
    RUN(test_sizes_take_binary_units);
    RUN(test_durations_take_units_in_the_settings_own_unit);
    RUN(test_units_in_the_file_and_the_environment);
    RUN(test_flag_equals_value);
    RUN(test_json_log_line_is_one_object);
    RUN(test_json_log_line_cut_keeps_escapes_whole);
    clean_env();
    TEST_MAIN_END();
}
