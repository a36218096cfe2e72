/* test_escape.c - escaping of input text for terminals, CI logs, JSON and XML, and the
 * atomic file writer's temporaries (issue 10, outputs and text). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "gpusched/util.h"

static char out[4096];

static const char *text(const char *s)
{
    gs_strbuf sb = GS_STRBUF_INIT;
    gs_strbuf_text(&sb, s);
    snprintf(out, sizeof out, "%s", gs_strbuf_cstr(&sb));
    gs_strbuf_free(&sb);
    return out;
}

static const char *lines(const char *s)
{
    gs_strbuf sb = GS_STRBUF_INIT;
    gs_strbuf_text_lines(&sb, s, strlen(s));
    snprintf(out, sizeof out, "%s", gs_strbuf_cstr(&sb));
    gs_strbuf_free(&sb);
    return out;
}

static const char *xml(const char *s)
{
    gs_strbuf sb = GS_STRBUF_INIT;
    gs_strbuf_xml(&sb, s);
    snprintf(out, sizeof out, "%s", gs_strbuf_cstr(&sb));
    gs_strbuf_free(&sb);
    return out;
}

static const char *json(const char *s, size_t n)
{
    gs_strbuf sb = GS_STRBUF_INIT;
    gs_strbuf_json_strn(&sb, s, n);
    snprintf(out, sizeof out, "%s", gs_strbuf_cstr(&sb));
    gs_strbuf_free(&sb);
    return out;
}

static void test_text_controls(void **state)
{
    (void)state;
    assert_string_equal(text("gpu-node-1"), "gpu-node-1");
    assert_string_equal(text("a\nb\tc\rd"), "a\\nb\\tc\\rd");
    assert_string_equal(text("bell\a nul-less \x01\x1f"), "bell\\x07 nul-less \\x01\\x1f");
    assert_string_equal(text("del\x7f"), "del\\x7f");
    /* ANSI: clear screen, colour, OSC 8 hyperlink, title set */
    assert_string_equal(text("\x1b[2J\x1b[31mred\x1b[0m"), "\\x1b[2J\\x1b[31mred\\x1b[0m");
    assert_string_equal(text("\x1b]0;pwned\x07"), "\\x1b]0;pwned\\x07");
    /* C1 controls (CSI U+009B, NEL U+0085) as UTF-8 */
    assert_string_equal(text("x\xc2\x9b" "31m\xc2\x85y"), "x\\u{9b}31m\\u{85}y");
    /* bidi override and line separators */
    assert_string_equal(text("a\xe2\x80\xae" "cba\xe2\x80\xa8z"), "a\\u{202e}cba\\u{2028}z");
    assert_string_equal(text("\xe2\x81\xa6x\xe2\x81\xa9"), "\\u{2066}x\\u{2069}");
    assert_string_equal(text(NULL), "");
}

static void test_text_utf8(void **state)
{
    (void)state;
    /* valid multi-byte text passes unchanged */
    const char *ok = "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x9a\x80 \xc2\xa0nbsp \xef\xbf\xbd";
    assert_string_equal(text(ok), ok);
    assert_string_equal(lines(ok), ok);
    /* invalid UTF-8: lone continuation, truncated, overlong, surrogate, above U+10FFFF */
    assert_string_equal(text("a\x80z"), "a\\x80z");
    assert_string_equal(text("a\xc3"), "a\\xc3");
    assert_string_equal(text("\xc0\xaf"), "\\xc0\\xaf");
    assert_string_equal(text("\xed\xa0\x80"), "\\xed\\xa0\\x80");
    assert_string_equal(text("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");
    assert_string_equal(text("\xe6\x97z"), "\\xe6\\x97z");
    assert_string_equal(text("\xff\xfe"), "\\xff\\xfe");
}

static void test_text_workflow_commands(void **state)
{
    (void)state;
    /* a GitHub Actions command needs "::" at the start of a line, after blanks */
    assert_string_equal(text("::error file=a::pwned"), "\\x3a:error file=a::pwned");
    assert_string_equal(text("  ::warning::x"), "  \\x3a:warning::x");
    assert_string_equal(text("\xc2\xa0\xe3\x80\x80::add-mask::x"), "\xc2\xa0\xe3\x80\x80\\x3a:add-mask::x");
    assert_string_equal(text("node a::b"), "node a::b");
    assert_string_equal(text(":a"), ":a");
    /* a newline cannot start one inside a one-line value */
    assert_string_equal(text("x\n::error::y"), "x\\n::error::y");
    /* the legacy form anywhere in a line */
    assert_string_equal(text("see ##[error]x"), "see ##\\x5berror]x");
    assert_string_equal(text("#[a] ##b ["), "#[a] ##b [");
    /* documents: layout kept, every line guarded */
    assert_string_equal(lines("a: 1\n::error::x\n\t::debug::y\nok::\n"),
                        "a: 1\n\\x3a:error::x\n\t\\x3a:debug::y\nok::\n");
    assert_string_equal(lines("a\rb\x1b[0m\n"), "a\\rb\\x1b[0m\n");
    assert_string_equal(lines("\n::x"), "\n\\x3a:x");
}

static void test_textf(void **state)
{
    (void)state;
    gs_strbuf sb = GS_STRBUF_INIT;
    gs_strbuf_textf(&sb, "%s/%s: %d %u %zu %lld %.2f %x %c %% %5s|%-4s|%.3s|%*s", "ns\x1b", "a\nb", -3, 7u,
                    (size_t)9, -12345678901LL, 1.5, 255u, 'q', "ab", "c", "abcdef", 3, "z");
    assert_string_equal(gs_strbuf_cstr(&sb), "ns\\x1b/a\\nb: -3 7 9 -12345678901 1.50 ff q %    ab|c   |abc|  z");
    gs_strbuf_reset(&sb);
    gs_strbuf_textf(&sb, "%s", "::error::x");
    assert_string_equal(gs_strbuf_cstr(&sb), "\\x3a:error::x");
    gs_strbuf_free(&sb);
}

static void test_xml(void **state)
{
    (void)state;
    assert_string_equal(xml("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&apos;");
    /* characters XML 1.0 forbids never reach the document */
    assert_string_equal(xml("x\x01y\x1b[1m\x7f"), "x\\x01y\\x1b[1m\\x7f");
    assert_string_equal(xml("\xef\xbf\xbe\xef\xbf\xbf"), "\\u{fffe}\\u{ffff}");
    assert_string_equal(xml("bad\xff"), "bad\\xff");
    assert_string_equal(xml("line1\nline2\t\r"), "line1\nline2\t\\r");
    assert_string_equal(xml("ok\n::error::x"), "ok\n\\x3a:error::x");
    assert_string_equal(xml("caf\xc3\xa9"), "caf\xc3\xa9");
}

static void test_json(void **state)
{
    (void)state;
    assert_string_equal(json("a\"b\\c\n\x01", 7), "\"a\\\"b\\\\c\\n\\u0001\"");
    assert_string_equal(json("\x7f\xc2\x9b", 3), "\"\\u007f\\u009b\"");
    assert_string_equal(json("\xe2\x80\xa8\xe2\x80\xa9", 6), "\"\\u2028\\u2029\"");
    assert_string_equal(json("x\xffy\xc3", 4), "\"x\\ufffdy\\ufffd\"");
    assert_string_equal(json("caf\xc3\xa9 \xf0\x9f\x9a\x80", 10), "\"caf\xc3\xa9 \xf0\x9f\x9a\x80\"");
    assert_string_equal(json("a\0b", 3), "\"a\\u0000b\"");
    assert_string_equal(json("##[error]x #[ ##", 16), "\"##\\u005berror]x #[ ##\"");
    gs_strbuf sb = GS_STRBUF_INIT;
    gs_strbuf_json_str(&sb, NULL);
    assert_string_equal(gs_strbuf_cstr(&sb), "\"\"");
    gs_strbuf_free(&sb);
}

/* ---------------------------------------------------------------- gs_write_file_atomic */
static char dir[256];

static int setup_dir(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/gs-test-atomic-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown_dir(void **state)
{
    (void)state;
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        char p[512];
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            if (unlink(p) != 0)
                rmdir(p);
        }
        closedir(d);
    }
    return rmdir(dir);
}

static int count_entries(void)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

static char *slurp(const char *path)
{
    gs_error err;
    return gs_read_file(path, 1 << 20, NULL, &err);
}

static void test_atomic_symlink(void **state)
{
    (void)state;
    char victim[300], target[300], planted[400];
    snprintf(victim, sizeof victim, "%s/victim", dir);
    snprintf(target, sizeof target, "%s/out.json", dir);
    FILE *f = fopen(victim, "w");
    assert_non_null(f);
    fputs("precious\n", f);
    fclose(f);
    /* the temporary name of the old writer, and a few guesses of the same shape */
    snprintf(planted, sizeof planted, "%s.tmp.%ld", target, (long)getpid());
    assert_int_equal(symlink(victim, planted), 0);
    snprintf(planted, sizeof planted, "%s.tmp", target);
    assert_int_equal(symlink(victim, planted), 0);
    gs_error err;
    gs_error_clear(&err);
    assert_int_equal(gs_write_file_atomic(target, "{}\n", 3, &err), 0);
    char *v = slurp(victim), *t = slurp(target);
    assert_string_equal(v, "precious\n");
    assert_string_equal(t, "{}\n");
    free(v);
    free(t);
    /* victim, out.json, the two planted links: no temporary left */
    assert_int_equal(count_entries(), 4);
    /* replacing again keeps the count */
    assert_int_equal(gs_write_file_atomic(target, "[]\n", 3, &err), 0);
    assert_int_equal(count_entries(), 4);
    /* a symlink at the target itself is replaced, not followed */
    char link[300];
    snprintf(link, sizeof link, "%s/link.json", dir);
    assert_int_equal(symlink(victim, link), 0);
    assert_int_equal(gs_write_file_atomic(link, "x\n", 2, &err), 0);
    v = slurp(victim);
    assert_string_equal(v, "precious\n");
    free(v);
    struct stat st;
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISREG(st.st_mode));
}

static void test_atomic_failure_leaves_nothing(void **state)
{
    (void)state;
    char sub[300];
    snprintf(sub, sizeof sub, "%s/a-directory", dir);
    assert_int_equal(mkdir(sub, 0755), 0);
    int before = count_entries();
    gs_error err;
    gs_error_clear(&err);
    /* rename over a directory fails after the data was written */
    assert_int_not_equal(gs_write_file_atomic(sub, "data", 4, &err), 0);
    assert_int_equal(err.code, GS_ERR_IO);
    assert_int_equal(count_entries(), before);
    /* a directory that does not exist */
    char missing[300];
    snprintf(missing, sizeof missing, "%s/nope/out.txt", dir);
    assert_int_not_equal(gs_write_file_atomic(missing, "data", 4, &err), 0);
    assert_int_equal(count_entries(), before);
}

static void test_atomic_mode(void **state)
{
    (void)state;
    char target[300];
    snprintf(target, sizeof target, "%s/mode.txt", dir);
    gs_error err;
    mode_t old = umask(022);
    assert_int_equal(gs_write_file_atomic(target, "m", 1, &err), 0);
    struct stat st;
    assert_int_equal(stat(target, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0644);
    umask(077);
    assert_int_equal(gs_write_file_atomic(target, "m", 1, &err), 0);
    assert_int_equal(stat(target, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    umask(old);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text_controls),
        cmocka_unit_test(test_text_utf8),
        cmocka_unit_test(test_text_workflow_commands),
        cmocka_unit_test(test_textf),
        cmocka_unit_test(test_xml),
        cmocka_unit_test(test_json),
        cmocka_unit_test_setup_teardown(test_atomic_symlink, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_atomic_failure_leaves_nothing, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_atomic_mode, setup_dir, teardown_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
