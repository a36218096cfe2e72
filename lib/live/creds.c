/*
 * creds.c - the credential to send now: static tokens and certificates, token files re-read
 * when they rotate, and exec credential plugins (client.authentication.k8s.io/v1
 * ExecCredential, client-go plugin/pkg/client/auth/exec) cached until their expiry.
 */
#define _GNU_SOURCE 1 /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpusched/live.h"
#include "live/live_int.h"
#include "util/json_int.h"

extern char **environ;

#define EXEC_MAX_OUT (1u << 20)
#define EXEC_TIMEOUT_MS 60000
#define EXEC_SKEW_S 10

struct gs_live_state {
    /* gs_live_credentials, gs_live_invalidate and the rate limiter may be called by the
     * clients of several threads over one config (one informer thread per kind) */
    pthread_mutex_t mu;
    /* rate limiter: a token bucket (golang.org/x/time/rate's reservation model: a taker
     * that finds no token reserves one in the future and waits for it) */
    double qps, tokens;
    int burst;
    struct timespec last;
    /* token file */
    char *file_token;
    bool have_file;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
    /* exec plugin */
    gs_arena exec_arena;
    gs_live_execcred ec;
    bool have_exec;
    unsigned exec_runs;
    uint64_t generation;
};

gs_live_state *gs_live_state_new(void)
{
    gs_live_state *s = calloc(1, sizeof *s);
    if (s) {
        gs_arena_init(&s->exec_arena, 4096);
        pthread_mutex_init(&s->mu, NULL);
        s->qps = GS_LIVE_DEFAULT_QPS;
        s->burst = GS_LIVE_DEFAULT_BURST;
        s->tokens = s->burst;
        clock_gettime(CLOCK_MONOTONIC, &s->last);
    }
    return s;
}

void gs_live_state_free(gs_live_state *s)
{
    if (!s)
        return;
    free(s->file_token);
    gs_arena_free(&s->exec_arena);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

unsigned gs_live_exec_runs(const gs_live_config *cfg)
{
    pthread_mutex_lock(&cfg->state->mu);
    unsigned n = cfg->state->exec_runs;
    pthread_mutex_unlock(&cfg->state->mu);
    return n;
}

void gs_live_cfg_lock(gs_live_config *cfg) { pthread_mutex_lock(&cfg->state->mu); }
void gs_live_cfg_unlock(gs_live_config *cfg) { pthread_mutex_unlock(&cfg->state->mu); }

void gs_live_config_set_rate(gs_live_config *cfg, double qps, int burst)
{
    gs_live_state *s = cfg->state;
    pthread_mutex_lock(&s->mu);
    s->qps = qps;
    s->burst = burst > 0 ? burst : 1;
    s->tokens = s->burst;
    clock_gettime(CLOCK_MONOTONIC, &s->last);
    pthread_mutex_unlock(&s->mu);
}

long gs_live_rate_take(gs_live_config *cfg)
{
    gs_live_state *s = cfg->state;
    pthread_mutex_lock(&s->mu);
    long wait_ms = 0;
    if (s->qps > 0) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        double dt = (double)(now.tv_sec - s->last.tv_sec) + (double)(now.tv_nsec - s->last.tv_nsec) / 1e9;
        s->last = now;
        s->tokens += dt * s->qps;
        if (s->tokens > s->burst)
            s->tokens = s->burst;
        s->tokens -= 1;
        if (s->tokens < 0)
            wait_ms = (long)(-s->tokens / s->qps * 1000.0 + 0.999);
    }
    pthread_mutex_unlock(&s->mu);
    return wait_ms;
}

void gs_live_invalidate(gs_live_config *cfg)
{
    gs_live_state *s = cfg->state;
    pthread_mutex_lock(&s->mu);
    gs_live_invalidate_locked(cfg);
    pthread_mutex_unlock(&s->mu);
}

uint64_t gs_live_cred_generation_locked(const gs_live_config *cfg) { return cfg->state->generation; }

void gs_live_invalidate_locked(gs_live_config *cfg)
{
    gs_live_state *s = cfg->state;
    s->have_file = false;
    s->have_exec = false;
    gs_arena_reset(&s->exec_arena);
    memset(&s->ec, 0, sizeof s->ec);
    s->generation++;
}

/* ---------------------------------------------------------------- base64 */
static int b64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

/* Go's base64.StdEncoding: padding required, '\r' and '\n' ignored, nothing else. */
int gs_live_base64_decode(gs_arena *a, const char *s, size_t n, char **out, size_t *out_len,
                          size_t *bad_at)
{
    char *o = gs_arena_alloc(a, n / 4 * 3 + 4);
    if (!o) {
        *bad_at = 0;
        return -1;
    }
    size_t ol = 0, q = 0, pad = 0;
    uint32_t acc = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\r' || c == '\n')
            continue;
        if (pad) { /* only '=' may follow a '=' and the quantum must end */
            if (c != '=' || q == 0) {
                *bad_at = i;
                return -1;
            }
            pad++;
            if (++q == 4) {
                q = 0;
                pad = 4; /* complete: anything but line breaks after it is bad */
            }
            continue;
        }
        if (c == '=') {
            if (q < 2) {
                *bad_at = i;
                return -1;
            }
            pad = 1;
            if (q == 2) {
                o[ol++] = (char)(acc >> 4);
            } else {
                o[ol++] = (char)(acc >> 10);
                o[ol++] = (char)(acc >> 2);
            }
            if (++q == 4) {
                q = 0;
                pad = 4;
            }
            continue;
        }
        int v = b64_value(c);
        if (v < 0) {
            *bad_at = i;
            return -1;
        }
        acc = acc << 6 | (uint32_t)v;
        if (++q == 4) {
            o[ol++] = (char)(acc >> 16);
            o[ol++] = (char)(acc >> 8);
            o[ol++] = (char)acc;
            q = 0;
            acc = 0;
        }
    }
    if (q != 0) {
        *bad_at = n;
        return -1;
    }
    o[ol] = '\0';
    *out = o;
    *out_len = ol;
    return 0;
}

/* ---------------------------------------------------------------- token files */
static int token_file(gs_live_config *cfg, gs_error *err)
{
    gs_live_state *s = cfg->state;
    struct stat st;
    if (stat(cfg->token_file, &st) != 0) {
        if (s->have_file)
            return 0; /* mid-rotation (a symlink swap): keep the last token, as client-go does */
        return gs_error_set(err, GS_ERR_IO, cfg->token_file, 0, 0, NULL, "cannot read token file: %s",
                            strerror(errno));
    }
    if (s->have_file && st.st_dev == s->dev && st.st_ino == s->ino && st.st_size == s->size &&
        st.st_mtim.tv_sec == s->mtime.tv_sec && st.st_mtim.tv_nsec == s->mtime.tv_nsec)
        return 0;
    size_t len = 0;
    gs_error e;
    char *t = gs_read_file(cfg->token_file, 1u << 20, &len, &e);
    if (!t) {
        if (s->have_file)
            return 0;
        return gs_error_set(err, GS_ERR_IO, cfg->token_file, 0, 0, NULL, "cannot read token file: %s", e.msg);
    }
    size_t b = 0;
    while (b < len && (t[b] == ' ' || t[b] == '\n' || t[b] == '\r' || t[b] == '\t'))
        b++;
    while (len > b && (t[len - 1] == ' ' || t[len - 1] == '\n' || t[len - 1] == '\r' || t[len - 1] == '\t'))
        len--;
    if (len == b) {
        free(t);
        return gs_error_set(err, GS_ERR_INVALID, cfg->token_file, 0, 0, NULL, "read empty token from file");
    }
    memmove(t, t + b, len - b);
    t[len - b] = '\0';
    free(s->file_token);
    s->file_token = t;
    s->have_file = true;
    s->dev = st.st_dev;
    s->ino = st.st_ino;
    s->size = st.st_size;
    s->mtime = st.st_mtim;
    s->generation++;
    return 0;
}

/* ---------------------------------------------------------------- exec plugins */
static const gs_jv *jstr(const gs_jv *o, const char *key)
{
    const gs_jv *v = gs_json_get(o, key);
    return v && v->t == GS_JSTR ? v : NULL;
}

static int jat(gs_error *err, const char *name, const char *data, const gs_jv *v, const char *fmt,
               const char *a1, const char *a2)
{
    int line = 0, col = 0;
    if (v)
        gs_json_where(data, 1, v, &line, &col);
    gs_error_set(err, GS_ERR_INVALID, name, line, col, NULL, fmt, a1, a2);
    return -1;
}

int gs_live_execcred_parse(const char *name, const char *api_version, const char *out, size_t len,
                           gs_arena *a, gs_live_execcred *ec, gs_error *err)
{
    memset(ec, 0, sizeof *ec);
    gs_json_limits lim = {.max_depth = 32, .max_string = 1u << 20, .unique_keys = true};
    gs_jv root;
    if (gs_json_parse(name, 1, out, len, &lim, a, &root, err))
        return -1;
    if (root.t != GS_JOBJ)
        return jat(err, name, out, &root, "exec plugin: the output must be an ExecCredential object%s%s", "", "");
    const gs_jv *kind = jstr(&root, "kind"), *api = jstr(&root, "apiVersion");
    if (!kind || strcmp(kind->s, "ExecCredential"))
        return jat(err, name, out, kind ? kind : &root, "exec plugin: kind is \"%s\", expected ExecCredential%s",
                   kind ? kind->s : "", "");
    if (!api || strcmp(api->s, api_version))
        return jat(err, name, out, api ? api : &root,
                   "exec plugin is configured to use API version %s, plugin returned version %s", api_version,
                   api ? api->s : "(none)");
    const gs_jv *st = gs_json_get(&root, "status");
    if (!st || st->t != GS_JOBJ)
        return jat(err, name, out, st ? st : &root, "exec plugin didn't return a status field%s%s", "", "");
    const gs_jv *tok = jstr(st, "token"), *cert = jstr(st, "clientCertificateData"),
                *key = jstr(st, "clientKeyData"), *exp = gs_json_get(st, "expirationTimestamp");
    if (tok && !tok->n)
        tok = NULL;
    if (cert && !cert->n)
        cert = NULL;
    if (key && !key->n)
        key = NULL;
    if (!tok && !cert && !key)
        return jat(err, name, out, st, "exec plugin didn't return a token or cert/key pair%s%s", "", "");
    if (!cert != !key)
        return jat(err, name, out, cert ? cert : key, "exec plugin returned only %s, not both%s",
                   cert ? "a certificate" : "a key", "");
    if (exp && exp->t != GS_JNULL) {
        int64_t t = 0;
        if (exp->t != GS_JSTR || gs_parse_rfc3339(exp->s, &t))
            return jat(err, name, out, exp, "exec plugin: expirationTimestamp is not an RFC 3339 time%s%s", "", "");
        ec->expires = (time_t)t;
    }
    ec->token = tok ? gs_arena_strdup(a, tok->s) : NULL;
    if (cert) {
        ec->cert_pem = gs_arena_strndup(a, cert->s, cert->n);
        ec->key_pem = gs_arena_strndup(a, key->s, key->n);
        ec->cert_len = cert->n;
        ec->key_len = key->n;
        if (!ec->cert_pem || !ec->key_pem)
            return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    }
    if (tok && !ec->token)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    return 0;
}

/* KUBERNETES_EXEC_INFO: the ExecCredential with its spec (and the cluster when asked). */
static char *exec_info(const gs_live_config *cfg)
{
    gs_strbuf sb = GS_STRBUF_INIT;
    gs_strbuf_puts(&sb, "KUBERNETES_EXEC_INFO={\"kind\":\"ExecCredential\",\"apiVersion\":");
    gs_strbuf_json_str(&sb, cfg->exec.api_version);
    gs_strbuf_puts(&sb, ",\"spec\":{\"interactive\":false");
    if (cfg->exec.provide_cluster_info) {
        gs_strbuf_puts(&sb, ",\"cluster\":{\"server\":");
        gs_strbuf_json_str(&sb, cfg->server);
        if (cfg->tls_server_name) {
            gs_strbuf_puts(&sb, ",\"tls-server-name\":");
            gs_strbuf_json_str(&sb, cfg->tls_server_name);
        }
        if (cfg->insecure_skip_tls_verify)
            gs_strbuf_puts(&sb, ",\"insecure-skip-tls-verify\":true");
        if (cfg->ca_pem) {
            gs_strbuf_puts(&sb, ",\"certificate-authority-data\":\"");
            static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
            const unsigned char *p = (const unsigned char *)cfg->ca_pem;
            for (size_t i = 0; i < cfg->ca_len; i += 3) {
                uint32_t v = (uint32_t)p[i] << 16;
                if (i + 1 < cfg->ca_len)
                    v |= (uint32_t)p[i + 1] << 8;
                if (i + 2 < cfg->ca_len)
                    v |= p[i + 2];
                char q[4] = {tab[v >> 18 & 63], tab[v >> 12 & 63], i + 1 < cfg->ca_len ? tab[v >> 6 & 63] : '=',
                             i + 2 < cfg->ca_len ? tab[v & 63] : '='};
                gs_strbuf_add(&sb, q, 4);
            }
            gs_strbuf_putc(&sb, '"');
        }
        if (cfg->proxy_url) {
            gs_strbuf_puts(&sb, ",\"proxy-url\":");
            gs_strbuf_json_str(&sb, cfg->proxy_url);
        }
        gs_strbuf_putc(&sb, '}');
    }
    gs_strbuf_puts(&sb, "}}");
    if (sb.oom) {
        gs_strbuf_free(&sb);
        return NULL;
    }
    return gs_strbuf_detach(&sb);
}

static bool env_overridden(const gs_live_exec *ex, const char *entry)
{
    const char *eq = strchr(entry, '=');
    size_t n = eq ? (size_t)(eq - entry) : strlen(entry);
    if (n == 20 && !strncmp(entry, "KUBERNETES_EXEC_INFO", 20))
        return true;
    for (size_t i = 0; i < ex->nenv; i++)
        if (!strncmp(ex->env[i], entry, n) && ex->env[i][n] == '=')
            return true;
    return false;
}

static int run_plugin(gs_live_config *cfg, gs_strbuf *out, gs_strbuf *errout, gs_error *err)
{
    const gs_live_exec *ex = &cfg->exec;
    size_t nenv = 0;
    for (char **e = environ; e && *e; e++)
        nenv++;
    char **envp = calloc(nenv + ex->nenv + 2, sizeof *envp);
    char **argv = calloc(ex->nargs + 2, sizeof *argv);
    char *info = exec_info(cfg);
    int rc = -1, po[2] = {-1, -1}, pe[2] = {-1, -1};
    pid_t pid = -1;
    posix_spawn_file_actions_t fa;
    bool fa_ok = false;
    if (!envp || !argv || !info) {
        gs_fail(err, GS_ERR_NOMEM, "out of memory");
        goto done;
    }
    size_t k = 0;
    for (char **e = environ; e && *e; e++)
        if (!env_overridden(ex, *e))
            envp[k++] = *e;
    for (size_t i = 0; i < ex->nenv; i++)
        envp[k++] = ex->env[i];
    envp[k++] = info;
    argv[0] = ex->command;
    for (size_t i = 0; i < ex->nargs; i++)
        argv[i + 1] = ex->args[i];
    if (pipe2(po, O_CLOEXEC) || pipe2(pe, O_CLOEXEC)) {
        gs_fail(err, GS_ERR_IO, "exec plugin %s: pipe: %s", ex->command, strerror(errno));
        goto done;
    }
    if (posix_spawn_file_actions_init(&fa)) {
        gs_fail(err, GS_ERR_NOMEM, "out of memory");
        goto done;
    }
    fa_ok = true;
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, po[1], 1);
    posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
    int se = strchr(ex->command, '/') ? posix_spawn(&pid, ex->command, &fa, NULL, argv, envp)
                                      : posix_spawnp(&pid, ex->command, &fa, NULL, argv, envp);
    close(po[1]);
    close(pe[1]);
    po[1] = pe[1] = -1;
    if (se) {
        pid = -1;
        gs_fail(err, GS_ERR_IO, "exec: executable %s %s%s%s", ex->command,
                se == ENOENT ? "not found" : strerror(se), ex->install_hint ? "\n\n" : "",
                ex->install_hint ? ex->install_hint : "");
        goto done;
    }
    cfg->state->exec_runs++;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    struct pollfd pf[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
    int open_fds = 2;
    while (open_fds) {
        clock_gettime(CLOCK_MONOTONIC, &t1);
        long left = EXEC_TIMEOUT_MS - ((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000);
        if (left <= 0) {
            kill(pid, SIGKILL);
            gs_fail(err, GS_ERR_IO, "exec plugin %s did not finish within %d s", ex->command, EXEC_TIMEOUT_MS / 1000);
            goto reap;
        }
        int pr = poll(pf, 2, (int)left);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr < 0) {
            kill(pid, SIGKILL);
            gs_fail(err, GS_ERR_IO, "exec plugin %s: poll: %s", ex->command, strerror(errno));
            goto reap;
        }
        for (int i = 0; i < 2; i++) {
            if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            char buf[4096];
            ssize_t r = read(pf[i].fd, buf, sizeof buf);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0) {
                pf[i].fd = -1;
                open_fds--;
                continue;
            }
            gs_strbuf *sb = i == 0 ? out : errout;
            if (sb->len + (size_t)r > EXEC_MAX_OUT) {
                kill(pid, SIGKILL);
                gs_fail(err, GS_ERR_LIMIT, "exec plugin %s wrote more than %u bytes", ex->command, EXEC_MAX_OUT);
                goto reap;
            }
            gs_strbuf_add(sb, buf, (size_t)r);
        }
    }
    rc = 0;
reap:;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (rc == 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
        const char *tail = gs_strbuf_cstr(errout);
        size_t tl = strlen(tail);
        while (tl && (tail[tl - 1] == '\n' || tail[tl - 1] == '\r'))
            tl--;
        if (tl > 300) {
            tail += tl - 300;
            tl = 300;
        }
        if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && tl == 0)
            /* a libc (or valgrind) whose posix_spawn reports a failed exec as exit 127 */
            gs_fail(err, GS_ERR_IO, "exec: executable %s not found%s%s", ex->command,
                    ex->install_hint ? "\n\n" : "", ex->install_hint ? ex->install_hint : "");
        else if (WIFEXITED(status))
            gs_fail(err, GS_ERR_IO, "exec: executable %s failed with exit code %d%s%.*s", ex->command,
                    WEXITSTATUS(status), tl ? ": " : "", (int)tl, tail);
        else
            gs_fail(err, GS_ERR_IO, "exec: executable %s was killed by signal %d", ex->command, WTERMSIG(status));
        rc = -1;
    }
    if (out->oom || errout->oom) {
        gs_fail(err, GS_ERR_NOMEM, "out of memory");
        rc = -1;
    }
done:
    if (fa_ok)
        posix_spawn_file_actions_destroy(&fa);
    for (int i = 0; i < 2; i++) {
        if (po[i] >= 0)
            close(po[i]);
        if (pe[i] >= 0)
            close(pe[i]);
    }
    free(info);
    free(envp);
    free(argv);
    return rc;
}

static int exec_cred(gs_live_config *cfg, time_t now, gs_error *err)
{
    gs_live_state *s = cfg->state;
    if (s->have_exec && (!s->ec.expires || now + EXEC_SKEW_S < s->ec.expires))
        return 0;
    gs_strbuf out = GS_STRBUF_INIT, eo = GS_STRBUF_INIT;
    int rc = run_plugin(cfg, &out, &eo, err);
    if (!rc) {
        gs_arena_reset(&s->exec_arena);
        char name[GS_ERR_FILE_MAX];
        snprintf(name, sizeof name, "exec plugin %s", cfg->exec.command);
        rc = gs_live_execcred_parse(name, cfg->exec.api_version, gs_strbuf_cstr(&out), out.len,
                                    &s->exec_arena, &s->ec, err);
        s->have_exec = rc == 0;
        s->generation++;
    }
    gs_strbuf_free(&out);
    gs_strbuf_free(&eo);
    return rc;
}

int gs_live_credentials(gs_live_config *cfg, time_t now, gs_live_cred *out, gs_error *err)
{
    pthread_mutex_lock(&cfg->state->mu);
    int rc = gs_live_credentials_locked(cfg, now, out, err);
    pthread_mutex_unlock(&cfg->state->mu);
    return rc;
}

int gs_live_credentials_locked(gs_live_config *cfg, time_t now, gs_live_cred *out, gs_error *err)
{
    memset(out, 0, sizeof *out);
    if (!now)
        now = time(NULL);
    gs_live_state *s = cfg->state;
    out->cert_pem = cfg->cert_pem;
    out->key_pem = cfg->key_pem;
    out->cert_len = cfg->cert_len;
    out->key_len = cfg->key_len;
    switch (cfg->auth) {
    case GS_LIVE_AUTH_NONE:
        break;
    case GS_LIVE_AUTH_TOKEN:
        out->token = cfg->token;
        break;
    case GS_LIVE_AUTH_TOKEN_FILE:
        if (token_file(cfg, err))
            return -1;
        out->token = s->file_token;
        break;
    case GS_LIVE_AUTH_BASIC:
        out->username = cfg->username;
        out->password = cfg->password;
        break;
    case GS_LIVE_AUTH_EXEC:
        if (exec_cred(cfg, now, err))
            return -1;
        out->token = s->ec.token;
        out->expires = s->ec.expires;
        if (s->ec.cert_pem) {
            out->cert_pem = s->ec.cert_pem;
            out->key_pem = s->ec.key_pem;
            out->cert_len = s->ec.cert_len;
            out->key_len = s->ec.key_len;
        }
        break;
    }
    out->generation = s->generation;
    return 0;
}
