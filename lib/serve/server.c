/*
 * server.c - the webhook's HTTP(S) server on libmicrohttpd and GnuTLS (contract in
 * serve.h).
 *
 * Threads: libmicrohttpd runs a pool of `threads` workers, each with its own epoll loop
 * over its share of the connections; a request is decided on the worker that owns its
 * connection. Handlers never block on another connection, so a slow or stalled client
 * costs a connection slot and its buffered body, never a worker. Nor do they block on
 * the disk: with an audit log, the worker appends the decision's line, suspends the
 * connection and moves on; one syncer thread fdatasyncs for every line waiting (group
 * commit) and resumes their connections, whose answers then leave. The answer never
 * leaves before its line is durable, and a worker never waits for a sync.
 *
 * What bounds what:
 *  - headers and the read buffer: the per-connection memory pool (64 KiB);
 *  - a body: max_body, checked against Content-Length before a byte is read (413
 *    at once; the connection is closed after the answer), and while chunked bodies
 *    arrive (the rest is read and dropped, up to 16 x max_body, then the connection is
 *    closed, and the answer is 413);
 *  - all bodies in flight together: a budget (body_budget, default 64 x max_body, at
 *    least 64 MiB); a
 *    request that would exceed it is answered 503 at once;
 *  - connections: max_connections, beyond which new connections are closed at accept;
 *  - idle or stalled clients: the connection timeout, reset by every byte received.
 *
 * TLS and reload: GnuTLS asks a retrieve callback for the certificate at every
 * handshake. The callback hands out the current bundle (chain + key), read under a
 * mutex; a reload loads and checks the new files completely, then swaps the pointer.
 * Handshakes that already took the old bundle keep using it, so it is retired, not
 * freed, until the server stops (a reload costs a few KiB; the retired list is capped
 * and the oldest bundles are freed past the cap, long after their handshakes ended).
 * The callback has no closure argument, hence one TLS server per process.
 *
 * Graceful stop: gs_server_drain() takes the listening socket back from libmicrohttpd
 * (no new connections), makes /readyz answer 503, and waits for the requests in flight;
 * gs_server_stop() then closes what is left.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gpusched/serve.h"
#include "serve/serve_int.h"

#define CONN_MEMORY_LIMIT (64u * 1024u)
#define CONN_MEMORY_INCREMENT (16u * 1024u)
#define MAX_CHAIN 16
#define MAX_RETIRED 64
/* TLS 1.2 and 1.3 only; AEAD ciphers only (no CBC, no SHA-1 MAC); forward-secret key
 * exchange only (ECDHE; no static RSA, no DHE with its costly and often weak groups).
 * What remains: `gnutls-cli --priority '<this>' -l` (docs/reliability.md). */
#define TLS_PRIORITIES                                                                            \
    "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-CIPHER-ALL:+AES-256-GCM:+AES-128-GCM:"         \
    "+CHACHA20-POLY1305:-MAC-ALL:+AEAD:-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA"
#define PEM_MAX (1024u * 1024u)
#define SLOW_BODY_GRACE_NS (2ull * 1000000000ull) /* the minimum rate applies after this */
#define REAPER_TICK_NS (100ull * 1000000ull)
#define AUDIT_RETRY_NS (1000ull * 1000000ull)
#define AUDIT_MIN_FREE (16u * 1024u) /* free bytes the audit log's disk needs to be ready */

/* Read a whole PEM file: a regular file only, opened with O_NONBLOCK so that a FIFO or a
 * device at the path (a mistake, or an attack on the SIGHUP reload) never blocks the
 * caller. NUL-terminated. */
static char *read_pem(const char *path, size_t *len_out, gs_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        gs_error_set(err, GS_ERR_IO, path, 0, 0, NULL, "cannot open: %s", strerror(errno));
        return NULL;
    }
    struct stat st;
    const char *why = NULL;
    if (fstat(fd, &st) != 0)
        why = strerror(errno);
    else if (!S_ISREG(st.st_mode))
        why = "not a regular file (a FIFO, a device or a directory)";
    else if (st.st_size > (off_t)PEM_MAX)
        why = "larger than 1 MiB";
    if (why) {
        close(fd);
        gs_error_set(err, GS_ERR_IO, path, 0, 0, NULL, "cannot read: %s", why);
        return NULL;
    }
    size_t cap = (size_t)st.st_size + 1, len = 0;
    char *buf = malloc(cap);
    if (!buf) {
        close(fd);
        gs_fail(err, GS_ERR_NOMEM, "out of memory");
        return NULL;
    }
    for (;;) {
        ssize_t n = read(fd, buf + len, cap - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            close(fd);
            free(buf);
            gs_error_set(err, GS_ERR_IO, path, 0, 0, NULL, "cannot read: %s", strerror(e));
            return NULL;
        }
        len += (size_t)n;
        if (n == 0 || len == cap - 1)
            break;
    }
    close(fd);
    buf[len] = '\0';
    *len_out = len;
    return buf;
}

/* ---------------------------------------------------------------- certificates */
typedef struct cert_bundle {
    gnutls_pcert_st chain[MAX_CHAIN];
    unsigned nchain;
    gnutls_privkey_t key;
    struct cert_bundle *older; /* retired list, newest first */
} cert_bundle;

static pthread_mutex_t tls_mu = PTHREAD_MUTEX_INITIALIZER;
static cert_bundle *tls_current;  /* what handshakes get now */
static bool tls_in_use;           /* a TLS server exists in this process */

static void bundle_free(cert_bundle *b)
{
    if (!b)
        return;
    for (unsigned i = 0; i < b->nchain; i++)
        gnutls_pcert_deinit(&b->chain[i]);
    if (b->key)
        gnutls_privkey_deinit(b->key);
    free(b);
}

static int tls_fail(gs_error *err, const char *file, const char *what, int rc)
{
    return gs_error_set(err, GS_ERR_INVALID, file, 0, 0, NULL, "%s: %s", what, gnutls_strerror(rc));
}

/* Are the private key and the first certificate's public key the same key? */
static int key_matches(cert_bundle *b, const char *key_file, gs_error *err)
{
    gnutls_pubkey_t from_key = NULL;
    gnutls_datum_t a = {NULL, 0}, c = {NULL, 0};
    int rc = gnutls_pubkey_init(&from_key);
    if (rc >= 0)
        rc = gnutls_pubkey_import_privkey(from_key, b->key, 0, 0);
    if (rc >= 0)
        rc = gnutls_pubkey_export2(from_key, GNUTLS_X509_FMT_DER, &a);
    if (rc >= 0)
        rc = gnutls_pubkey_export2(b->chain[0].pubkey, GNUTLS_X509_FMT_DER, &c);
    int out = 0;
    if (rc < 0)
        out = tls_fail(err, key_file, "cannot compare the key with the certificate", rc);
    else if (a.size != c.size || memcmp(a.data, c.data, a.size) != 0)
        out = gs_error_set(err, GS_ERR_INVALID, key_file, 0, 0, NULL,
                           "the private key does not belong to the certificate");
    gnutls_free(a.data);
    gnutls_free(c.data);
    if (from_key)
        gnutls_pubkey_deinit(from_key);
    return out;
}

static cert_bundle *bundle_load(const char *cert_file, const char *key_file, gs_error *err)
{
    size_t cert_len = 0, key_len = 0;
    char *cert_pem = read_pem(cert_file, &cert_len, err);
    if (!cert_pem)
        return NULL;
    char *key_pem = read_pem(key_file, &key_len, err);
    if (!key_pem) {
        free(cert_pem);
        return NULL;
    }
    cert_bundle *b = calloc(1, sizeof *b);
    int rc = -1;
    if (!b) {
        gs_fail(err, GS_ERR_NOMEM, "out of memory loading the certificate");
        goto done;
    }
    gnutls_datum_t cd = {(unsigned char *)cert_pem, (unsigned)cert_len};
    unsigned n = MAX_CHAIN;
    int grc = gnutls_pcert_list_import_x509_raw(b->chain, &n, &cd, GNUTLS_X509_FMT_PEM,
                                                GNUTLS_X509_CRT_LIST_IMPORT_FAIL_IF_EXCEED);
    if (grc < 0 || n == 0) {
        tls_fail(err, cert_file, "not a PEM certificate chain (at most 16 certificates)",
                 grc < 0 ? grc : GNUTLS_E_NO_CERTIFICATE_FOUND);
        goto done;
    }
    b->nchain = n;
    grc = gnutls_privkey_init(&b->key);
    if (grc >= 0) {
        gnutls_datum_t kd = {(unsigned char *)key_pem, (unsigned)key_len};
        grc = gnutls_privkey_import_x509_raw(b->key, &kd, GNUTLS_X509_FMT_PEM, NULL, 0);
    }
    if (grc < 0) {
        tls_fail(err, key_file, "not a PEM private key (unencrypted PKCS#8, PKCS#1 or SEC1)", grc);
        goto done;
    }
    if (key_matches(b, key_file, err) < 0)
        goto done;
    rc = 0;
done:
    free(cert_pem);
    explicit_bzero(key_pem, key_len);
    free(key_pem);
    if (rc < 0) {
        bundle_free(b);
        return NULL;
    }
    return b;
}

static int cert_callback(gnutls_session_t session, const gnutls_datum_t *req_ca_dn, int nreqs,
                         const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                         gnutls_pcert_st **pcert, unsigned int *pcert_length, gnutls_privkey_t *pkey)
{
    (void)session;
    (void)req_ca_dn;
    (void)nreqs;
    (void)pk_algos;
    (void)pk_algos_length;
    pthread_mutex_lock(&tls_mu);
    cert_bundle *b = tls_current;
    pthread_mutex_unlock(&tls_mu);
    if (!b)
        return -1;
    *pcert = b->chain;
    *pcert_length = b->nchain;
    *pkey = b->key;
    return 0;
}

/* ---------------------------------------------------------------- server state */
enum { RS_RECEIVING = 0, RS_WAIT_SYNC, RS_READY };

/* What a connection is doing, for its deadlines (all under conn_mu). */
enum {
    CP_IDLE = 0, /* between requests (or before the first): no byte of a request seen yet */
    CP_HEADERS,  /* the request line arrived, the headers did not end yet */
    CP_BODY,     /* receiving the body of a review */
    CP_BUSY,     /* being decided, waiting for the audit sync, or answering: no deadline */
};

typedef struct conn_slot {
    struct conn_slot *prev, *next;
    int fd;
    int phase;
    bool first;        /* no request finished on this connection yet */
    bool closing;      /* shut down by the server; MHD closes it on its worker */
    uint64_t t_phase;  /* when the current phase began */
    uint64_t deadline; /* 0 = none */
    size_t body_len;   /* body bytes received in CP_BODY */
} conn_slot;

typedef struct req_ctx {
    gs_review_endpoint ep;
    int route;         /* the handler's route (with a handler instead of a webhook) */
    char *body;
    size_t len, cap;
    size_t reserved;   /* bytes taken from the body budget */
    conn_slot *slot;   /* the connection's deadlines (NULL if it could not be tracked) */
    char *caller;      /* verified client certificate subject (mTLS), malloc'ed */
    size_t dropped;    /* bytes read and dropped after the body passed max_body */
    bool too_large;
    /* a decided review whose answer waits for the audit log sync (connection suspended) */
    int state;
    struct MHD_Connection *conn;
    uint64_t audit_seq;
    uint64_t t0;       /* when the decision started */
    gs_review rv;      /* kept for the metrics until the answer leaves */
    bool have_rv;
    char *answer;      /* response body (malloc'ed) and status */
    size_t answer_len;
    unsigned answer_code;
    struct req_ctx *next_pending;
} req_ctx;

struct gs_server {
    struct MHD_Daemon *mhd;
    int listen_fd;        /* ours until MHD_quiesce_daemon gives it back, then closed */
    uint16_t port;
    bool tls;
    char *cert_file, *key_file;
    cert_bundle *retired; /* bundles replaced by reloads, newest first */
    unsigned nretired;
    size_t max_body;
    size_t body_budget;
    size_t body_overdraft; /* beyond the budget, for a fast body while slower ones are shed */
    atomic_size_t body_used;
    atomic_int in_flight; /* requests with a req_ctx */
    atomic_bool draining;  /* listener closed or closing */
    atomic_bool unready;   /* /readyz 503 (drain period or draining) */
    atomic_bool audit_failing; /* the last audit write or sync failed; not recovered yet */
    bool audit_ignore;     /* answer reviews whose audit line failed */
    char *client_ca_pem;   /* mTLS trust (kept alive for libmicrohttpd) */
    /* connection deadlines: every connection has a slot; the reaper enforces them */
    pthread_mutex_t conn_mu;
    pthread_cond_t conn_cv;
    conn_slot *conns;
    unsigned nconns;
    unsigned max_conn_soft; /* above this a new connection evicts an old header-waiter */
    uint64_t header_ns, body_ns, idle_ns;
    uint64_t min_rate;
    pthread_t reaper;
    bool reaper_running;
    bool reaper_stop;
    const gs_webhook *webhook;
    const gs_serve_handler *handler; /* instead of the webhook */
    gs_metrics *metrics;
    gs_audit *audit;
    const char *ruleset;
    gs_serve_log_fn log;
    void *log_user;
    /* the audit syncer: answers wait in `pending` for the sync covering their line */
    pthread_mutex_t sync_mu;
    pthread_cond_t sync_cv;
    pthread_t syncer;
    bool syncer_running;
    bool syncer_stop;
    req_ctx *pending;
    atomic_uint_fast64_t audit_log_ns; /* last audit failure logged (one line a second) */
    atomic_uint_fast64_t audit_unlogged;
};

static void server_log(gs_server *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void server_log(gs_server *s, const char *fmt, ...)
{
    if (!s->log)
        return;
    /* %s arguments (request uids, messages quoting the review) escaped: one line, no
     * control characters (gs_strbuf_textf) */
    gs_strbuf line = GS_STRBUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    gs_strbuf_vtextf(&line, fmt, ap);
    va_end(ap);
    if (!line.oom && line.len > 1020) { /* at most ~1 KiB, cut at a character boundary */
        size_t n = 1020;
        while (n > 0 && ((unsigned char)line.buf[n] & 0xC0) == 0x80)
            n--;
        line.len = n;
        line.buf[n] = '\0';
        gs_strbuf_puts(&line, "...");
    }
    s->log(s->log_user, line.oom ? "out of memory formatting a log line" : gs_strbuf_cstr(&line));
    gs_strbuf_free(&line);
}

/* Audit failures come with every review once the disk fails: log one line a second. */
static void log_audit_failure(gs_server *s, const char *msg, const char *uid)
{
    uint64_t now = gs_serve_now_ns();
    uint64_t last = atomic_load(&s->audit_log_ns);
    if (last && now - last < 1000000000u) {
        atomic_fetch_add(&s->audit_unlogged, 1);
        return;
    }
    if (!atomic_compare_exchange_strong(&s->audit_log_ns, &last, now)) {
        atomic_fetch_add(&s->audit_unlogged, 1);
        return;
    }
    uint64_t more = atomic_exchange(&s->audit_unlogged, 0);
    server_log(s, "audit log: %s (review %s answered %s; %llu more since the last report; "
                  "reopening it every second)",
               msg, uid && uid[0] ? uid : "?", s->audit_ignore ? "without its line" : "500",
               (unsigned long long)more);
}

static bool reserve(gs_server *s, size_t n)
{
    size_t cur = atomic_load_explicit(&s->body_used, memory_order_relaxed);
    do {
        if (cur + n > s->body_budget || cur + n < cur)
            return false;
    } while (!atomic_compare_exchange_weak(&s->body_used, &cur, cur + n));
    return true;
}

static void release(gs_server *s, size_t n)
{
    if (n)
        atomic_fetch_sub(&s->body_used, n);
}

/* ---------------------------------------------------------------- connection deadlines */
static conn_slot *conn_slot_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? (conn_slot *)ci->socket_context : NULL;
}

/* With conn_mu held: shut the connection's socket down. Its worker sees the end of the
 * stream and closes the connection the usual way (the slot lives until
 * MHD_CONNECTION_NOTIFY_CLOSED, which libmicrohttpd calls before it closes the socket,
 * and which takes conn_mu: the descriptor shut down here is always still this one). */
static void conn_kill(gs_server *s, conn_slot *k, gs_conn_close_reason why)
{
    k->closing = true;
    k->deadline = 0;
    if (k->fd >= 0)
        shutdown(k->fd, SHUT_RDWR);
    gs_metrics_observe_conn_closed(s->metrics, why);
}

/* Move c to `phase`; a deadline `in_ns` from now (0: none). */
static void conn_phase(gs_server *s, conn_slot *k, int phase, uint64_t in_ns)
{
    if (!k)
        return;
    uint64_t now = gs_serve_now_ns();
    pthread_mutex_lock(&s->conn_mu);
    k->phase = phase;
    k->t_phase = now;
    k->body_len = 0;
    if (!k->closing)
        k->deadline = in_ns ? now + in_ns : 0;
    pthread_mutex_unlock(&s->conn_mu);
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    gs_server *s = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        conn_slot *k = calloc(1, sizeof *k);
        *socket_context = k;
        gs_metrics_set_connections(s->metrics, 1);
        if (!k)
            return; /* untracked: only libmicrohttpd's idle timeout applies */
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        k->fd = ci ? (int)ci->connect_fd : -1;
        uint64_t now = gs_serve_now_ns();
        k->phase = CP_IDLE;
        k->first = true;
        k->t_phase = now;
        k->deadline = now + s->header_ns; /* TLS handshake and headers of the first request */
        pthread_mutex_lock(&s->conn_mu);
        k->next = s->conns;
        if (s->conns)
            s->conns->prev = k;
        s->conns = k;
        if (++s->nconns > s->max_conn_soft) {
            /* in the reserve: make room by closing the connection that has waited longest
             * for its headers (a slowloris holds its slot that way), preferring those that
             * never finished a request over idle keep-alive ones; a probe needs its slot
             * for milliseconds only */
            conn_slot *victim = NULL;
            int vrank = 0;
            for (conn_slot *o = k->next; o; o = o->next) {
                if (o->closing || (o->phase != CP_IDLE && o->phase != CP_HEADERS))
                    continue;
                int rank = o->phase == CP_HEADERS || o->first ? 2 : 1;
                if (rank > vrank || (rank == vrank && o->t_phase < victim->t_phase)) {
                    victim = o;
                    vrank = rank;
                }
            }
            if (victim)
                conn_kill(s, victim, GS_CLOSE_EVICTED);
            else
                k->deadline = now + 1000000000ull; /* nothing to evict: one second to be quick */
        }
        pthread_mutex_unlock(&s->conn_mu);
        return;
    }
    if (toe != MHD_CONNECTION_NOTIFY_CLOSED)
        return;
    conn_slot *k = *socket_context;
    *socket_context = NULL;
    gs_metrics_set_connections(s->metrics, -1);
    if (!k)
        return;
    pthread_mutex_lock(&s->conn_mu);
    if (k->prev)
        k->prev->next = k->next;
    else
        s->conns = k->next;
    if (k->next)
        k->next->prev = k->prev;
    s->nconns--;
    pthread_mutex_unlock(&s->conn_mu);
    free(k);
}

/* The request line arrived: the headers' deadline runs from here (or earlier). */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void)uri;
    gs_server *s = cls;
    conn_slot *k = conn_slot_of(c);
    if (k) {
        uint64_t now = gs_serve_now_ns();
        pthread_mutex_lock(&s->conn_mu);
        if (k->phase == CP_IDLE) {
            k->phase = CP_HEADERS;
            k->t_phase = now;
            uint64_t d = now + s->header_ns;
            if (!k->closing && (!k->deadline || d < k->deadline))
                k->deadline = d;
        }
        pthread_mutex_unlock(&s->conn_mu);
    }
    return NULL;
}

static void audit_set_failing(gs_server *s, bool failing)
{
    if (atomic_exchange(&s->audit_failing, failing) != failing)
        gs_metrics_set_audit_ok(s->metrics, !failing);
}

/* The reaper: enforces the deadlines and the minimum body rate, and, while the audit log
 * fails, reopens it every second until it takes lines again. */
static void *reaper_main(void *arg)
{
    gs_server *s = arg;
    uint64_t next_audit = 0;
    pthread_mutex_lock(&s->conn_mu);
    while (!s->reaper_stop) {
        uint64_t now = gs_serve_now_ns();
        for (conn_slot *k = s->conns; k; k = k->next) {
            if (k->closing)
                continue;
            if (k->phase == CP_BODY && s->min_rate) {
                uint64_t el = now - k->t_phase;
                if (el > SLOW_BODY_GRACE_NS && (double)k->body_len * 1e9 < (double)s->min_rate * (double)el) {
                    conn_kill(s, k, GS_CLOSE_SLOW_BODY);
                    continue;
                }
            }
            if (k->deadline && now >= k->deadline)
                conn_kill(s, k, k->phase == CP_BODY ? GS_CLOSE_BODY_TIMEOUT : GS_CLOSE_HEADER_TIMEOUT);
        }
        if (s->audit && atomic_load(&s->audit_failing) && now >= next_audit) {
            pthread_mutex_unlock(&s->conn_mu);
            gs_error err;
            gs_error_clear(&err);
            bool ok = gs_audit_recover(s->audit, AUDIT_MIN_FREE, &err) == 0;
            gs_metrics_observe_audit_reopen(s->metrics, ok);
            if (ok) {
                audit_set_failing(s, false);
                server_log(s, "audit log: reopened, taking lines again");
            }
            next_audit = gs_serve_now_ns() + AUDIT_RETRY_NS;
            pthread_mutex_lock(&s->conn_mu);
            continue;
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t ns = (uint64_t)ts.tv_nsec + REAPER_TICK_NS;
        ts.tv_sec += (time_t)(ns / 1000000000u);
        ts.tv_nsec = (long)(ns % 1000000000u);
        pthread_cond_timedwait(&s->conn_cv, &s->conn_mu, &ts);
    }
    pthread_mutex_unlock(&s->conn_mu);
    return NULL;
}

static void reaper_stop(gs_server *s)
{
    pthread_mutex_lock(&s->conn_mu);
    bool running = s->reaper_running;
    s->reaper_stop = true;
    pthread_cond_signal(&s->conn_cv);
    pthread_mutex_unlock(&s->conn_mu);
    if (running)
        pthread_join(s->reaper, NULL);
    s->reaper_running = false;
}

/* The body budget is spent and the connection `self` needs `more` bytes: close the
 * slowest body in progress if it is slower than self (bytes per second so far), and let
 * self take the bytes from the overdraft while the victim's bytes come back. False when
 * self is the slowest (it is then closed itself). */
static bool shed_for(gs_server *s, conn_slot *self, size_t more)
{
    if (!self)
        return false;
    uint64_t now = gs_serve_now_ns();
    pthread_mutex_lock(&s->conn_mu);
    double self_el = (double)(now - self->t_phase) + 1e6;
    double self_rate = (double)self->body_len / self_el;
    conn_slot *victim = NULL;
    double vrate = 0;
    for (conn_slot *o = s->conns; o; o = o->next) {
        if (o == self || o->closing || o->phase != CP_BODY)
            continue;
        double r = (double)o->body_len / ((double)(now - o->t_phase) + 1e6);
        if (!victim || r < vrate) {
            victim = o;
            vrate = r;
        }
    }
    bool shed = victim && vrate < self_rate;
    if (shed)
        conn_kill(s, victim, GS_CLOSE_SHED);
    pthread_mutex_unlock(&s->conn_mu);
    if (!shed)
        return false;
    size_t cur = atomic_load_explicit(&s->body_used, memory_order_relaxed);
    do {
        if (cur + more > s->body_budget + s->body_overdraft || cur + more < cur)
            return false;
    } while (!atomic_compare_exchange_weak(&s->body_used, &cur, cur + more));
    return true;
}

/* ---------------------------------------------------------------- responses */
static enum MHD_Result send_buffer(gs_server *s, struct MHD_Connection *c, unsigned code,
                                   const char *ctype, gs_strbuf *sb)
{
    if (sb->oom) {
        gs_strbuf_free(sb);
        return MHD_NO;
    }
    size_t len = sb->len;
    char *buf = gs_strbuf_detach(sb);
    if (!buf) {
        buf = malloc(1);
        if (!buf)
            return MHD_NO;
        len = 0;
    }
    struct MHD_Response *r = MHD_create_response_from_buffer(len, buf, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(buf);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    if (atomic_load_explicit(&s->unready, memory_order_relaxed))
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close"); /* go elsewhere */
    enum MHD_Result rc = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result send_status(gs_server *s, struct MHD_Connection *c, unsigned code,
                                   const char *message)
{
    gs_metrics_observe_http_error(s->metrics, (int)code);
    /* messages quote error texts cut to fixed buffers: keep the body UTF-8 */
    gs_strbuf msg = GS_STRBUF_INIT;
    gs_serve_utf8_repair(message, strlen(message), &msg);
    gs_strbuf sb = GS_STRBUF_INIT;
    gs_serve_status_body((int)code, msg.oom ? "" : gs_strbuf_cstr(&msg), &sb);
    gs_strbuf_free(&msg);
    return send_buffer(s, c, code, "application/json", &sb);
}

static enum MHD_Result send_text(gs_server *s, struct MHD_Connection *c, unsigned code,
                                 const char *text)
{
    gs_strbuf sb = GS_STRBUF_INIT;
    gs_strbuf_puts(&sb, text);
    return send_buffer(s, c, code, "text/plain; charset=utf-8", &sb);
}

static int64_t unix_ms_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Queue r's stored answer (after the audit sync) and count the review. */
static enum MHD_Result send_stored(gs_server *s, struct MHD_Connection *c, req_ctx *r)
{
    if (r->have_rv) {
        gs_metrics_observe_review(s->metrics, &r->rv, gs_serve_now_ns() - r->t0);
        gs_review_free(&r->rv);
        r->have_rv = false;
    }
    gs_strbuf sb = GS_STRBUF_INIT;
    sb.buf = r->answer;
    sb.len = r->answer_len;
    sb.cap = r->answer_len + 1;
    r->answer = NULL;
    return send_buffer(s, c, r->answer_code, "application/json", &sb);
}

/* With sync_mu held: may this answer wait for the syncer? */
static bool syncer_takes(gs_server *s) { return s->syncer_running && !s->syncer_stop; }

/* The whole body is here: decide, audit, answer. With an audit log the answer is kept
 * in r, the connection suspended, and the syncer thread resumes it once the line is
 * durable; the worker goes on with other connections meanwhile. */
static enum MHD_Result answer_review(gs_server *s, struct MHD_Connection *c, req_ctx *r)
{
    uint64_t t0 = gs_serve_now_ns();
    gs_review rv;
    gs_error err;
    gs_error_clear(&err);
    if (gs_review_run(s->webhook, r->ep, r->body ? r->body : "", r->len, &rv, &err) != 0) {
        char msg[GS_ERR_MSG_MAX + GS_ERR_PATH_MAX + 64];
        unsigned code = err.code == GS_ERR_PARSE || err.code == GS_ERR_INVALID ? 400
                        : err.code == GS_ERR_LIMIT                            ? 413
                        : err.code == GS_ERR_NOMEM                            ? 503
                                                                              : 500;
        if (err.line > 0)
            snprintf(msg, sizeof msg, "request body line %d, column %d: %s", err.line, err.col, err.msg);
        else
            snprintf(msg, sizeof msg, "%s%s%s", err.path, err.path[0] ? ": " : "", err.msg);
        if (code >= 500)
            server_log(s, "review failed: %s", msg);
        return send_status(s, c, code, msg);
    }
    gs_strbuf out = GS_STRBUF_INIT;
    gs_review_encode(&rv, &out);
    if (!s->audit) {
        gs_metrics_observe_review(s->metrics, &rv, gs_serve_now_ns() - t0);
        gs_review_free(&rv);
        return send_buffer(s, c, MHD_HTTP_OK, "application/json", &out);
    }
    gs_strbuf line = GS_STRBUF_INIT;
    gs_audit_format(&rv, unix_ms_now(), s->ruleset, r->caller, (gs_serve_now_ns() - t0) / 1000u, &line);
    uint64_t seq = 0;
    int arc = line.oom || out.oom ? gs_fail(&err, GS_ERR_NOMEM, "out of memory formatting the audit line")
                                  : gs_audit_append(s->audit, line.buf, line.len, &seq, &err);
    gs_strbuf_free(&line);
    char uid[128];
    snprintf(uid, sizeof uid, "%s", rv.req.uid ? rv.req.uid : "");
    if (arc == 0) {
        r->t0 = t0;
        r->rv = rv;
        r->have_rv = true;
        r->answer_len = out.len;
        r->answer = gs_strbuf_detach(&out);
        r->answer_code = MHD_HTTP_OK;
        r->audit_seq = seq;
        r->conn = c;
        pthread_mutex_lock(&s->sync_mu);
        if (syncer_takes(s)) {
            r->state = RS_WAIT_SYNC;
            MHD_suspend_connection(c);
            r->next_pending = s->pending;
            s->pending = r;
            pthread_cond_signal(&s->sync_cv);
            pthread_mutex_unlock(&s->sync_mu);
            return MHD_YES;
        }
        pthread_mutex_unlock(&s->sync_mu);
        /* no syncer (stopping): wait here */
        if (gs_audit_sync(s->audit, seq, &err) == 0)
            return send_stored(s, c, r);
        audit_set_failing(s, true);
        log_audit_failure(s, err.msg, uid);
        if (s->audit_ignore) {
            gs_metrics_observe_audit_lost(s->metrics);
            return send_stored(s, c, r);
        }
        gs_review_free(&r->rv);
        r->have_rv = false;
        free(r->answer);
        r->answer = NULL;
    } else {
        audit_set_failing(s, true);
        log_audit_failure(s, err.msg, uid);
        if (s->audit_ignore && !out.oom) {
            /* the operator chose answers over audit lines: answer, count the lost line */
            gs_metrics_observe_audit_lost(s->metrics);
            gs_metrics_observe_review(s->metrics, &rv, gs_serve_now_ns() - t0);
            gs_review_free(&rv);
            return send_buffer(s, c, MHD_HTTP_OK, "application/json", &out);
        }
        gs_review_free(&rv);
        gs_strbuf_free(&out);
    }
    /* no durable record, no decision: the API server applies its failurePolicy */
    gs_metrics_observe_audit_error(s->metrics);
    return send_status(s, c, 500, "the decision could not be written to the audit log");
}

/* The whole body is here, for a handler's endpoint: its answer as it gives it. */
static enum MHD_Result answer_handler(gs_server *s, struct MHD_Connection *c, req_ctx *r)
{
    gs_strbuf out = GS_STRBUF_INIT;
    const char *ctype = "application/json";
    unsigned code = s->handler->handle(s->handler->user, r->route, r->body ? r->body : "", r->len, &out, &ctype);
    if (out.oom) {
        gs_strbuf_free(&out);
        return send_status(s, c, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory");
    }
    if (code != MHD_HTTP_OK)
        gs_metrics_observe_http_error(s->metrics, (int)code);
    return send_buffer(s, c, code, ctype ? ctype : "application/json", &out);
}

/* The syncer thread: takes every waiting answer, makes the audit log durable up to the
 * newest of their lines (one fdatasync for all of them), and resumes the connections. */
static void *syncer_main(void *arg)
{
    gs_server *s = arg;
    pthread_mutex_lock(&s->sync_mu);
    for (;;) {
        while (!s->pending && !s->syncer_stop)
            pthread_cond_wait(&s->sync_cv, &s->sync_mu);
        if (!s->pending) {
            s->syncer_running = false; /* under the mutex: later answers sync inline */
            break;
        }
        req_ctx *list = s->pending;
        s->pending = NULL;
        pthread_mutex_unlock(&s->sync_mu);
        uint64_t newest = 0;
        for (req_ctx *r = list; r; r = r->next_pending)
            if (r->audit_seq > newest)
                newest = r->audit_seq;
        gs_error err;
        gs_error_clear(&err);
        gs_audit_sync(s->audit, newest, &err);
        while (list) {
            req_ctx *r = list;
            list = r->next_pending; /* r may be freed once its connection resumes */
            gs_error e;
            if (gs_audit_sync(s->audit, r->audit_seq, &e) != 0) {
                audit_set_failing(s, true);
                log_audit_failure(s, e.msg, r->rv.req.uid);
                if (s->audit_ignore) {
                    gs_metrics_observe_audit_lost(s->metrics); /* answer anyway */
                } else {
                    gs_metrics_observe_audit_error(s->metrics);
                    gs_review_free(&r->rv);
                    r->have_rv = false;
                    free(r->answer);
                    gs_strbuf sb = GS_STRBUF_INIT;
                    gs_serve_status_body(500, "the decision could not be written to the audit log", &sb);
                    gs_metrics_observe_http_error(s->metrics, 500);
                    r->answer_len = sb.len;
                    r->answer = gs_strbuf_detach(&sb);
                    r->answer_code = 500;
                }
            }
            r->state = RS_READY;
            MHD_resume_connection(r->conn);
        }
        pthread_mutex_lock(&s->sync_mu);
    }
    pthread_mutex_unlock(&s->sync_mu);
    return NULL;
}

static void syncer_stop(gs_server *s)
{
    pthread_mutex_lock(&s->sync_mu);
    bool running = s->syncer_running;
    s->syncer_stop = true;
    pthread_cond_signal(&s->sync_cv);
    pthread_mutex_unlock(&s->sync_mu);
    if (running)
        pthread_join(s->syncer, NULL);
}

static bool is_json_type(const char *ct)
{
    /* "application/json", optionally with parameters ("; charset=utf-8") */
    size_t n = strlen("application/json");
    return strncasecmp(ct, "application/json", n) == 0 &&
           (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ');
}

/* mTLS: the subject of a client certificate that the --client-ca bundle verifies for
 * client authentication, malloc'ed; NULL with *why set when there is none. */
static char *verified_caller(struct MHD_Connection *c, const char **why)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    gnutls_session_t sess = ci ? (gnutls_session_t)ci->tls_session : NULL;
    *why = "no TLS session";
    if (!sess)
        return NULL;
    unsigned int n = 0;
    const gnutls_datum_t *certs = gnutls_certificate_get_peers(sess, &n);
    if (!certs || n == 0) {
        *why = "no client certificate";
        return NULL;
    }
    gnutls_typed_vdata_st data = {GNUTLS_DT_KEY_PURPOSE_OID, (unsigned char *)GNUTLS_KP_TLS_WWW_CLIENT, 0};
    unsigned int status = 0;
    if (gnutls_certificate_verify_peers(sess, &data, 1, &status) < 0 || status != 0) {
        *why = "the client certificate does not verify against --client-ca (for client authentication)";
        return NULL;
    }
    gnutls_x509_crt_t crt;
    char *out = NULL;
    if (gnutls_x509_crt_init(&crt) >= 0) {
        gnutls_datum_t dn = {NULL, 0};
        if (gnutls_x509_crt_import(crt, &certs[0], GNUTLS_X509_FMT_DER) >= 0 &&
            gnutls_x509_crt_get_dn3(crt, &dn, 0) >= 0) {
            out = strndup((const char *)dn.data, dn.size);
            gnutls_free(dn.data);
        }
        gnutls_x509_crt_deinit(crt);
    }
    if (!out)
        *why = "cannot read the client certificate's subject";
    return out;
}

/* First call for a request: headers are complete, no body byte has been read. */
static enum MHD_Result begin_request(gs_server *s, struct MHD_Connection *c, const char *url,
                                     const char *method, const char *version, void **con_cls)
{
    conn_slot *slot = conn_slot_of(c);
    conn_phase(s, slot, CP_BUSY, 0);
    bool get = !strcmp(method, MHD_HTTP_METHOD_GET) || !strcmp(method, MHD_HTTP_METHOD_HEAD);
    bool post = !strcmp(method, MHD_HTTP_METHOD_POST);
    /* RFC 9112 section 3.2: a client MUST send Host in HTTP/1.1; a server MUST answer 400 */
    if (version && !strcmp(version, MHD_HTTP_VERSION_1_1) &&
        !MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST))
        return send_status(s, c, MHD_HTTP_BAD_REQUEST, "HTTP/1.1 request without a Host header");
    int ep = s->handler                   ? s->handler->route(s->handler->user, url)
             : !strcmp(url, "/validate") ? GS_ENDPOINT_VALIDATE
             : !strcmp(url, "/mutate")   ? GS_ENDPOINT_MUTATE
                                         : -1;
    if (!strcmp(url, "/healthz") || !strcmp(url, "/readyz") || !strcmp(url, "/metrics")) {
        if (!get) {
            gs_metrics_observe_http_error(s->metrics, 405);
            gs_strbuf sb = GS_STRBUF_INIT;
            gs_serve_status_body(405, "use GET", &sb);
            return send_buffer(s, c, MHD_HTTP_METHOD_NOT_ALLOWED, "application/json", &sb);
        }
        if (!strcmp(url, "/healthz"))
            return send_text(s, c, MHD_HTTP_OK, "ok\n");
        if (!strcmp(url, "/readyz")) {
            if (atomic_load(&s->unready))
                return send_text(s, c, MHD_HTTP_SERVICE_UNAVAILABLE, "shutting down\n");
            if (atomic_load(&s->audit_failing) && !s->audit_ignore)
                return send_text(s, c, MHD_HTTP_SERVICE_UNAVAILABLE,
                                 "audit log failing: reviews are answered 500 until it is reopened\n");
            if (s->handler && s->handler->ready) {
                gs_strbuf why = GS_STRBUF_INIT;
                if (!s->handler->ready(s->handler->user, &why)) {
                    if (!why.len)
                        gs_strbuf_puts(&why, "not ready");
                    gs_strbuf_putc(&why, '\n');
                    return send_buffer(s, c, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain; charset=utf-8", &why);
                }
                gs_strbuf_free(&why);
            }
            return send_text(s, c, MHD_HTTP_OK, "ok\n");
        }
        gs_strbuf sb = GS_STRBUF_INIT;
        if (s->handler) {
            if (s->handler->metrics)
                s->handler->metrics(s->handler->user, &sb);
            gs_metrics_render_transport(s->metrics, s->handler->metrics_prefix, &sb);
        } else {
            gs_metrics_render(s->metrics, &sb);
        }
        return send_buffer(s, c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", &sb);
    }
    if (ep < 0)
        return send_status(s, c, MHD_HTTP_NOT_FOUND,
                           s->handler ? "no such endpoint"
                                      : "no such endpoint: POST /validate, POST /mutate, GET /healthz, /readyz, /metrics");
    if (!post) {
        char msg[160];
        snprintf(msg, sizeof msg, "use POST with %s",
                 s->handler ? (s->handler->what ? s->handler->what : "a JSON body") : "an AdmissionReview");
        return send_status(s, c, MHD_HTTP_METHOD_NOT_ALLOWED, msg);
    }
    char *caller = NULL;
    if (s->client_ca_pem) {
        const char *why = NULL;
        caller = verified_caller(c, &why);
        if (!caller) {
            gs_metrics_observe_conn_closed(s->metrics, GS_CLOSE_UNAUTHENTICATED);
            char msg[200];
            snprintf(msg, sizeof msg, "client certificate required: %s", why);
            return send_status(s, c, MHD_HTTP_UNAUTHORIZED, msg);
        }
    }
    const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (ct && !is_json_type(ct)) {
        free(caller);
        return send_status(s, c, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE,
                           s->handler ? "Content-Type must be application/json"
                                      : "Content-Type must be application/json (an AdmissionReview)");
    }
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl) {
        int64_t v;
        size_t cl_len = strlen(cl);
        if (cl_len == 0 || strspn(cl, "0123456789") != cl_len || gs_parse_i64(cl, cl_len, &v) != 0) {
            /* libmicrohttpd refuses such a Content-Length with its own error page (400,
             * or 413 for too many digits) before calling us; should a version call us
             * anyway, a second answer would be a second status line. A framing error is
             * unrecoverable: close. Counted as an incomplete request. (0.9.75 itself
             * writes its error's status line and headers twice: docs/reliability.md.) */
            free(caller);
            conn_phase(s, slot, CP_HEADERS, s->header_ns);
            return MHD_NO;
        }
        if ((uint64_t)v > s->max_body) {
            free(caller);
            char msg[160];
            snprintf(msg, sizeof msg, "request body of %lld bytes exceeds the limit of %zu bytes",
                     (long long)v, s->max_body);
            return send_status(s, c, MHD_HTTP_CONTENT_TOO_LARGE, msg);
        }
    }
    /* the body's bytes are taken from the budget as they arrive (take_body), not as
     * announced: a client announcing 1 MiB and sending nothing holds nothing */
    req_ctx *r = calloc(1, sizeof *r);
    if (!r) {
        free(caller);
        return send_status(s, c, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory");
    }
    r->ep = s->handler ? GS_ENDPOINT_VALIDATE : (gs_review_endpoint)ep;
    r->route = ep;
    r->slot = slot;
    r->caller = caller;
    conn_phase(s, slot, CP_BODY, s->body_ns);
    *con_cls = r;
    atomic_fetch_add(&s->in_flight, 1);
    gs_metrics_set_in_flight(s->metrics, 1);
    return MHD_YES;
}

/* A chunk of body: keep it, or drop it once the body passed the limit. */
static enum MHD_Result take_body(gs_server *s, req_ctx *r, const char *data, size_t n)
{
    if (r->slot) {
        pthread_mutex_lock(&s->conn_mu);
        r->slot->body_len += n;
        pthread_mutex_unlock(&s->conn_mu);
    }
    if (r->too_large || n > s->max_body - r->len) {
        r->too_large = true;
        r->dropped += n;
        /* read and drop the rest so the 413 can be sent; a client that keeps sending
         * far beyond the limit gets its connection closed instead */
        return r->dropped > 16 * s->max_body ? MHD_NO : MHD_YES;
    }
    if (r->len + n > r->cap) {
        /* grow with the bytes that arrived (at most doubling), within max_body */
        size_t cap = r->cap ? r->cap : 16 * 1024;
        while (cap < r->len + n)
            cap *= 2;
        if (cap > s->max_body)
            cap = s->max_body;
        size_t more = cap > r->reserved ? cap - r->reserved : 0;
        if (more && !reserve(s, more) && !shed_for(s, r->slot, more)) {
            /* over the budget and this is the slowest body: close it */
            if (r->slot) {
                pthread_mutex_lock(&s->conn_mu);
                if (!r->slot->closing)
                    conn_kill(s, r->slot, GS_CLOSE_SHED);
                pthread_mutex_unlock(&s->conn_mu);
            }
            return MHD_NO;
        }
        r->reserved += more;
        char *nb = realloc(r->body, cap + 1);
        if (!nb)
            return MHD_NO;
        r->body = nb;
        r->cap = cap;
    }
    memcpy(r->body + r->len, data, n);
    r->len += n;
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    gs_server *s = cls;
    req_ctx *r = *con_cls;
    if (!r)
        return begin_request(s, c, url, method, version, con_cls);
    if (r->state == RS_READY)
        return send_stored(s, c, r); /* resumed by the syncer */
    if (r->state == RS_WAIT_SYNC)
        return MHD_YES; /* not ours to answer yet */
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        return take_body(s, r, upload_data, n);
    }
    conn_phase(s, r->slot, CP_BUSY, 0); /* the whole body is here */
    if (r->too_large) {
        char msg[160];
        snprintf(msg, sizeof msg, "request body exceeds the limit of %zu bytes", s->max_body);
        return send_status(s, c, MHD_HTTP_CONTENT_TOO_LARGE, msg);
    }
    return s->handler ? answer_handler(s, c, r) : answer_review(s, c, r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)toe;
    gs_server *s = cls;
    conn_slot *k = conn_slot_of(c);
    if (k) {
        /* the request line came, our handler never ran: libmicrohttpd refused the request
         * with its own error page (malformed HTTP), or the client left mid-headers */
        pthread_mutex_lock(&s->conn_mu);
        bool incomplete = k->phase == CP_HEADERS && !k->closing;
        pthread_mutex_unlock(&s->conn_mu);
        if (incomplete)
            gs_metrics_observe_incomplete_request(s->metrics);
        /* keep-alive: the next request's headers get the idle time plus their own */
        conn_phase(s, k, CP_IDLE, s->idle_ns + s->header_ns);
        pthread_mutex_lock(&s->conn_mu);
        k->first = false;
        pthread_mutex_unlock(&s->conn_mu);
    }
    req_ctx *r = *con_cls;
    if (!r)
        return;
    *con_cls = NULL;
    release(s, r->reserved);
    if (r->have_rv)
        gs_review_free(&r->rv);
    free(r->answer);
    free(r->body);
    free(r->caller);
    free(r);
    atomic_fetch_sub(&s->in_flight, 1);
    gs_metrics_set_in_flight(s->metrics, -1);
}

/* ---------------------------------------------------------------- lifecycle */
static unsigned default_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 64 ? 64 : (unsigned)n;
}

gs_server *gs_server_start(const gs_serve_opts *o, gs_error *err)
{
    if (!o || (!o->webhook && !(o->handler && o->handler->route && o->handler->handle)) || !o->metrics) {
        gs_fail(err, GS_ERR_USAGE, "gs_server_start needs a webhook (or a handler) and a metrics registry");
        return NULL;
    }
    bool tls = o->tls_cert || o->tls_key;
    if (tls && (!o->tls_cert || !o->tls_key)) {
        gs_fail(err, GS_ERR_USAGE, "TLS needs both a certificate and a key file");
        return NULL;
    }
    if (tls && MHD_is_feature_supported(MHD_FEATURE_HTTPS_CERT_CALLBACK) != MHD_YES) {
        gs_fail(err, GS_ERR_USAGE, "this libmicrohttpd has no TLS certificate callback support");
        return NULL;
    }
    gs_server *s = calloc(1, sizeof *s);
    if (!s) {
        gs_fail(err, GS_ERR_NOMEM, "out of memory");
        return NULL;
    }
    s->listen_fd = -1;
    s->tls = tls;
    s->max_body = o->max_body ? o->max_body : GS_SERVE_MAX_BODY_DEFAULT;
    s->body_budget = o->body_budget ? o->body_budget
                     : s->max_body * 64 > (64u << 20) ? s->max_body * 64 : (64u << 20);
    if (s->body_budget < s->max_body)
        s->body_budget = s->max_body;
    s->body_overdraft = 4 * s->max_body;
    s->header_ns = (uint64_t)(o->header_timeout_s ? o->header_timeout_s : 5) * 1000000000ull;
    s->body_ns = (uint64_t)(o->body_timeout_s ? o->body_timeout_s : 10) * 1000000000ull;
    s->idle_ns = (uint64_t)(o->timeout_s ? o->timeout_s : 10) * 1000000000ull;
    s->min_rate = o->min_body_rate ? o->min_body_rate : 1024;
    s->audit_ignore = o->audit_ignore_failures;
    s->webhook = o->webhook;
    s->handler = o->handler;
    s->metrics = o->metrics;
    s->audit = o->audit;
    s->ruleset = o->ruleset;
    s->log = o->log;
    s->log_user = o->log_user;
    atomic_init(&s->body_used, 0);
    atomic_init(&s->in_flight, 0);
    atomic_init(&s->draining, false);
    atomic_init(&s->unready, false);
    atomic_init(&s->audit_failing, false);
    pthread_mutex_init(&s->conn_mu, NULL);
    pthread_cond_init(&s->conn_cv, NULL);
    atomic_init(&s->audit_log_ns, 0);
    atomic_init(&s->audit_unlogged, 0);
    pthread_mutex_init(&s->sync_mu, NULL);
    pthread_cond_init(&s->sync_cv, NULL);

    if (o->client_ca && !tls) {
        gs_fail(err, GS_ERR_USAGE, "a client CA (mTLS) needs TLS: give a certificate and a key too");
        goto fail_early;
    }
    if (o->client_ca) {
        size_t n = 0;
        s->client_ca_pem = read_pem(o->client_ca, &n, err);
        if (!s->client_ca_pem)
            goto fail_early;
        gnutls_x509_crt_t *list = NULL;
        unsigned nlist = 0;
        gnutls_datum_t d = {(unsigned char *)s->client_ca_pem, (unsigned)n};
        int grc = gnutls_x509_crt_list_import2(&list, &nlist, &d, GNUTLS_X509_FMT_PEM, 0);
        for (unsigned i = 0; grc >= 0 && i < nlist; i++)
            gnutls_x509_crt_deinit(list[i]);
        gnutls_free(list);
        if (grc < 0 || nlist == 0) {
            tls_fail(err, o->client_ca, "not a PEM CA certificate bundle",
                     grc < 0 ? grc : GNUTLS_E_NO_CERTIFICATE_FOUND);
            goto fail_early;
        }
    }
    if (tls) {
        pthread_mutex_lock(&tls_mu);
        bool busy = tls_in_use;
        tls_in_use = true;
        pthread_mutex_unlock(&tls_mu);
        if (busy) {
            gs_fail(err, GS_ERR_USAGE, "a TLS server is already running in this process");
            tls = false; /* not ours to release */
            s->tls = false;
            goto fail_early;
        }
        s->cert_file = strdup(o->tls_cert);
        s->key_file = strdup(o->tls_key);
        cert_bundle *b = s->cert_file && s->key_file ? bundle_load(s->cert_file, s->key_file, err) : NULL;
        if (!b) {
            if (!s->cert_file || !s->key_file)
                gs_fail(err, GS_ERR_NOMEM, "out of memory");
            goto fail;
        }
        pthread_mutex_lock(&tls_mu);
        tls_current = b;
        pthread_mutex_unlock(&tls_mu);
    }

    bool v6 = false;
    s->listen_fd = gs_tcp_listen(o->host, o->port, 1024, &s->port, &v6, err);
    if (s->listen_fd < 0)
        goto fail;

    unsigned threads = o->threads ? o->threads : default_threads();
    unsigned timeout = o->timeout_s ? o->timeout_s : 10;
    unsigned maxconn = o->max_connections ? o->max_connections : 1000;
    unsigned reserve_slots = maxconn / 16 > 16 ? maxconn / 16 : 16;
    unsigned per_ip = o->max_connections_per_ip ? o->max_connections_per_ip : (maxconn + 1) / 2;
    s->max_conn_soft = maxconn;
    s->reaper_running = pthread_create(&s->reaper, NULL, reaper_main, s) == 0;
    if (!s->reaper_running) {
        gs_fail(err, GS_ERR_NOMEM, "cannot start the connection deadline thread");
        goto fail;
    }
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ITC;
    if (v6)
        flags |= MHD_USE_IPv6;
    if (tls)
        flags |= MHD_USE_TLS;
    if (s->audit) {
        flags |= MHD_ALLOW_SUSPEND_RESUME;
        s->syncer_running = pthread_create(&s->syncer, NULL, syncer_main, s) == 0;
        if (!s->syncer_running) {
            gs_fail(err, GS_ERR_NOMEM, "cannot start the audit log thread");
            goto fail;
        }
    }
    struct MHD_OptionItem opts[24];
    int k = 0;
    opts[k++] = (struct MHD_OptionItem){MHD_OPTION_LISTEN_SOCKET, s->listen_fd, NULL};
    opts[k++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)timeout, NULL};
    opts[k++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT, (intptr_t)(maxconn + reserve_slots), NULL};
    opts[k++] = (struct MHD_OptionItem){MHD_OPTION_PER_IP_CONNECTION_LIMIT, (intptr_t)per_ip, NULL};
    opts[k++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, s};
    opts[k++] = (struct MHD_OptionItem){MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)on_uri, s};
    opts[k++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)CONN_MEMORY_LIMIT, NULL};
    opts[k++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_MEMORY_INCREMENT, (intptr_t)CONN_MEMORY_INCREMENT,
                                        NULL};
    opts[k++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, s};
    if (threads > 1)
        opts[k++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, (intptr_t)threads, NULL};
    if (tls) {
        opts[k++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_CERT_CALLBACK, 0, (void *)cert_callback};
        opts[k++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)TLS_PRIORITIES};
        if (s->client_ca_pem)
            opts[k++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_TRUST, 0, s->client_ca_pem};
    }
    opts[k++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    s->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s, MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
    if (!s->mhd) {
        gs_fail(err, GS_ERR_IO, "libmicrohttpd did not start (threads %u, TLS %s)", threads, tls ? "on" : "off");
        goto fail;
    }
    return s;
fail:
    syncer_stop(s);
    reaper_stop(s);
    if (s->listen_fd >= 0)
        close(s->listen_fd);
    if (tls) {
        pthread_mutex_lock(&tls_mu);
        bundle_free(tls_current);
        tls_current = NULL;
        tls_in_use = false;
        pthread_mutex_unlock(&tls_mu);
    }
fail_early:
    pthread_cond_destroy(&s->sync_cv);
    pthread_mutex_destroy(&s->sync_mu);
    pthread_cond_destroy(&s->conn_cv);
    pthread_mutex_destroy(&s->conn_mu);
    free(s->client_ca_pem);
    free(s->cert_file);
    free(s->key_file);
    free(s);
    return NULL;
}

uint16_t gs_server_port(const gs_server *s) { return s ? s->port : 0; }
bool gs_server_tls(const gs_server *s) { return s && s->tls; }

int gs_server_reload_tls(gs_server *s, gs_error *err)
{
    if (!s->tls)
        return gs_fail(err, GS_ERR_USAGE, "the server runs plain HTTP: there is no certificate to reload");
    cert_bundle *b = bundle_load(s->cert_file, s->key_file, err);
    if (!b) {
        gs_metrics_observe_cert_reload(s->metrics, false);
        return -1;
    }
    pthread_mutex_lock(&tls_mu);
    cert_bundle *old = tls_current;
    tls_current = b;
    pthread_mutex_unlock(&tls_mu);
    /* retire the old bundle: handshakes in progress may still hold it */
    old->older = s->retired;
    s->retired = old;
    if (++s->nretired > MAX_RETIRED) {
        cert_bundle *p = s->retired;
        for (unsigned i = 1; i < MAX_RETIRED && p; i++)
            p = p->older;
        if (p) {
            cert_bundle *drop = p->older;
            p->older = NULL;
            while (drop) {
                cert_bundle *next = drop->older;
                bundle_free(drop);
                drop = next;
                s->nretired--;
            }
        }
    }
    gs_metrics_observe_cert_reload(s->metrics, true);
    return 0;
}

void gs_server_set_unready(gs_server *s)
{
    if (s)
        atomic_store(&s->unready, true);
}

unsigned gs_server_drain(gs_server *s, unsigned timeout_ms)
{
    if (!s)
        return 0;
    atomic_store(&s->unready, true);
    if (!atomic_exchange(&s->draining, true) && s->mhd) {
        MHD_socket fd = MHD_quiesce_daemon(s->mhd);
        if (fd != MHD_INVALID_SOCKET)
            close(fd);
        s->listen_fd = -1;
    }
    uint64_t deadline = gs_serve_now_ns() + (uint64_t)timeout_ms * 1000000u;
    for (;;) {
        int n = atomic_load(&s->in_flight);
        if (n <= 0)
            return 0;
        if (gs_serve_now_ns() >= deadline)
            return (unsigned)n;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

void gs_server_stop(gs_server *s)
{
    if (!s)
        return;
    atomic_store(&s->unready, true);
    if (!atomic_exchange(&s->draining, true) && s->mhd) {
        MHD_socket fd = MHD_quiesce_daemon(s->mhd);
        if (fd != MHD_INVALID_SOCKET)
            close(fd);
        s->listen_fd = -1;
    }
    /* answers waiting for the audit sync are resumed first: stopping the daemon with
     * suspended connections is not allowed */
    syncer_stop(s);
    if (s->mhd)
        MHD_stop_daemon(s->mhd);
    reaper_stop(s); /* after the daemon: no connection is left to shut down */
    pthread_cond_destroy(&s->sync_cv);
    pthread_mutex_destroy(&s->sync_mu);
    pthread_cond_destroy(&s->conn_cv);
    pthread_mutex_destroy(&s->conn_mu);
    free(s->client_ca_pem);
    if (s->tls) {
        pthread_mutex_lock(&tls_mu);
        bundle_free(tls_current);
        tls_current = NULL;
        tls_in_use = false;
        pthread_mutex_unlock(&tls_mu);
        while (s->retired) {
            cert_bundle *next = s->retired->older;
            bundle_free(s->retired);
            s->retired = next;
        }
    }
    free(s->cert_file);
    free(s->key_file);
    free(s);
}
