/* args.c - the CLI option parser (forms and rules in args.h). */
#include "args.h"

#include <stdio.h>
#include <string.h>

#include "gpusched/util.h"

void cli_args_init(cli_args *a, int argc, char **argv, int first, const cli_opt *opts,
                   size_t nopts)
{
    a->argc = argc;
    a->argv = argv;
    a->next = first;
    a->positional_only = false;
    a->opts = opts;
    a->nopts = nopts;
}

static const cli_opt *find_long(const cli_args *a, const char *name, size_t len)
{
    for (size_t i = 0; i < a->nopts; i++) {
        const char *ln = a->opts[i].long_name;
        if (ln && strlen(ln) == len && memcmp(ln, name, len) == 0)
            return &a->opts[i];
    }
    return NULL;
}

static const cli_opt *find_short(const cli_args *a, char c)
{
    for (size_t i = 0; i < a->nopts; i++)
        if (a->opts[i].short_name && a->opts[i].short_name == c)
            return &a->opts[i];
    return NULL;
}

/* The value of an option that takes one: inline (after '=' or the short letter) or the
 * next argument. */
static int take_value(cli_args *a, const cli_opt *o, const char *inline_value,
                      const char *spelled, const char **value, gs_error *err)
{
    if (inline_value) {
        *value = inline_value;
        return o->id;
    }
    if (a->next >= a->argc) {
        gs_fail(err, GS_ERR_USAGE, "option '%s' needs a value", spelled);
        return CLI_ARG_ERROR;
    }
    *value = a->argv[a->next++];
    return o->id;
}

int cli_args_next(cli_args *a, const char **value, gs_error *err)
{
    *value = NULL;
    if (a->next >= a->argc)
        return CLI_ARG_END;
    const char *arg = a->argv[a->next++];
    if (a->positional_only || arg[0] != '-' || arg[1] == '\0') {
        *value = arg;
        return CLI_ARG_POSITIONAL;
    }
    if (arg[1] == '-') {
        if (arg[2] == '\0') {
            a->positional_only = true;
            return cli_args_next(a, value, err);
        }
        const char *name = arg + 2;
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const cli_opt *o = find_long(a, name, len);
        if (!o) {
            gs_fail(err, GS_ERR_USAGE, "unknown option '--%.*s'", (int)len, name);
            return CLI_ARG_ERROR;
        }
        if (!o->takes_value) {
            if (eq) {
                gs_fail(err, GS_ERR_USAGE, "option '--%s' takes no value", o->long_name);
                return CLI_ARG_ERROR;
            }
            return o->id;
        }
        char spelled[80];
        snprintf(spelled, sizeof spelled, "--%s", o->long_name);
        return take_value(a, o, eq ? eq + 1 : NULL, spelled, value, err);
    }
    /* short option: exactly one letter, possibly with its value attached */
    const cli_opt *o = find_short(a, arg[1]);
    if (!o) {
        gs_fail(err, GS_ERR_USAGE, "unknown option '-%c'", arg[1]);
        return CLI_ARG_ERROR;
    }
    if (!o->takes_value) {
        if (arg[2] != '\0') {
            gs_fail(err, GS_ERR_USAGE, "unknown option '%s'", arg);
            return CLI_ARG_ERROR;
        }
        return o->id;
    }
    char spelled[4] = {'-', arg[1], '\0', '\0'};
    return take_value(a, o, arg[2] ? arg + 2 : NULL, spelled, value, err);
}

int cli_parse_int(const char *what, const char *s, int64_t min, int64_t max, int64_t *out,
                  gs_error *err)
{
    int64_t v;
    if (gs_parse_i64(s, strlen(s), &v) != 0 || v < min || v > max)
        return gs_fail(err, GS_ERR_USAGE, "%s: expected an integer from %lld to %lld, got \"%s\"",
                       what, (long long)min, (long long)max, s);
    *out = v;
    return 0;
}

int cli_parse_choice(const char *what, const char *s, const char *const *choices, gs_error *err)
{
    for (int i = 0; choices[i]; i++)
        if (strcmp(s, choices[i]) == 0)
            return i;
    char list[256];
    size_t n = 0;
    list[0] = '\0';
    for (int i = 0; choices[i] && n < sizeof list; i++)
        n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", choices[i]);
    gs_fail(err, GS_ERR_USAGE, "%s: unknown value \"%s\" (expected one of: %s)", what, s, list);
    return -1;
}

int cli_parse_listen(const char *s, char *host_out, size_t host_cap, uint16_t *port_out, const char *example,
                     gs_error *err)
{
    const char *colon = strrchr(s, ':');
    if (!colon)
        return gs_fail(err, GS_ERR_USAGE, "--listen: expected ADDR:PORT, got \"%s\"", s);
    const char *host = s;
    size_t hlen = (size_t)(colon - s);
    if (hlen >= 2 && host[0] == '[' && host[hlen - 1] == ']') {
        host++;
        hlen -= 2;
    } else if (memchr(host, ':', hlen)) {
        return gs_fail(err, GS_ERR_USAGE, "--listen: write IPv6 addresses in brackets: %s", example);
    }
    if (hlen >= host_cap)
        return gs_fail(err, GS_ERR_USAGE, "--listen: address too long");
    if (hlen == 0) {
        snprintf(host_out, host_cap, "0.0.0.0");
    } else {
        memcpy(host_out, host, hlen);
        host_out[hlen] = '\0';
    }
    int64_t port = 0;
    if (cli_parse_int("--listen port", colon + 1, 0, 65535, &port, err) != 0)
        return -1;
    *port_out = (uint16_t)port;
    return 0;
}
