/*
 * kubeconfig.c - kubeconfig files and the in-cluster service account, resolved as kubectl
 * (client-go tools/clientcmd: loader.go, client_config.go, validation.go) resolves them.
 * The YAML goes through the library's one tree reader (util/yaml_tree_int.h), so every
 * error names the file and the line:col of the node at fault.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gpusched/live.h"
#include "live/live_int.h"
#include "util/yaml_tree_int.h"

#define KC_MAX_FILE (16u << 20)
#define KC_MAX_FILES 64
#define SA_DIR_DEFAULT "/var/run/secrets/kubernetes.io/serviceaccount"

/* One named entry of clusters[], users[] or contexts[], from the first file naming it. */
typedef struct kc_entry {
    const char *name;
    const gs_yn *name_node;
    const gs_yn *value;   /* the cluster/user/context mapping (NULL when absent) */
    const char *file;     /* the kubeconfig that named it */
    const char *dir;      /* its directory, for relative paths */
} kc_entry;

typedef GS_VEC(kc_entry) kc_list;

typedef struct kc_load {
    gs_arena tmp;         /* trees and file names, for the load only */
    kc_list clusters, users, contexts;
    const char *current;  /* current-context, from the first file setting it */
    const gs_yn *current_node;
    const char *current_file;
    const char *first_file;
    unsigned nfiles;
} kc_load;

/* ---------------------------------------------------------------- tree helpers */
static const gs_yn *yget(const gs_yn *map, const char *key)
{
    if (!map || map->type != GS_YN_MAP)
        return NULL;
    size_t kl = strlen(key);
    for (const gs_yn *k = map->u.first; k && k->next; k = k->next->next)
        if (k->len == kl && !memcmp(k->u.text, key, kl))
            return k->next;
    return NULL;
}

static int at(gs_error *err, gs_code code, const char *file, const gs_yn *n, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int at(gs_error *err, gs_code code, const char *file, const gs_yn *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gs_error_setv(err, code, file, n ? (int)n->line : 0, n ? (int)n->col : 0, NULL, fmt, ap);
    va_end(ap);
    return -1;
}

/* A string field: absent or null -> *out NULL; a scalar -> its text; else an error. */
static int ystr(const gs_yn *map, const char *key, const char *file, const char *what,
                const char **out, const gs_yn **node, gs_error *err)
{
    const gs_yn *v = yget(map, key);
    *out = NULL;
    if (node)
        *node = v;
    if (!v || (v->type == GS_YN_SCALAR && v->null))
        return 0;
    if (v->type != GS_YN_SCALAR)
        return at(err, GS_ERR_INVALID, file, v, "%s: %s must be a string", what, key);
    *out = v->len ? v->u.text : NULL;
    return 0;
}

static int ybool(const gs_yn *map, const char *key, const char *file, const char *what, bool *out,
                 gs_error *err)
{
    const gs_yn *v = yget(map, key);
    *out = false;
    if (!v || (v->type == GS_YN_SCALAR && v->null))
        return 0;
    if (v->type == GS_YN_SCALAR && v->plain && !strcmp(v->u.text, "true"))
        *out = true;
    else if (!(v->type == GS_YN_SCALAR && v->plain && !strcmp(v->u.text, "false")))
        return at(err, GS_ERR_INVALID, file, v, "%s: %s must be true or false", what, key);
    return 0;
}

/* ---------------------------------------------------------------- paths */
static char *dir_of(gs_arena *a, const char *file)
{
    const char *slash = strrchr(file, '/');
    if (!slash)
        return gs_arena_strdup(a, ".");
    if (slash == file)
        return gs_arena_strdup(a, "/");
    return gs_arena_strndup(a, file, (size_t)(slash - file));
}

char *gs_live_resolve_path(gs_arena *a, const char *dir, const char *p)
{
    if (!p || !*p)
        return NULL;
    if (p[0] == '/' || !dir)
        return gs_arena_strdup(a, p);
    return gs_arena_printf(a, "%s/%s", dir, p);
}

/* ---------------------------------------------------------------- loading */
static int add_entries(kc_load *L, kc_list *list, const gs_yn *root, const char *key,
                       const char *inner, const char *file, const char *dir, gs_error *err)
{
    const gs_yn *seq = yget(root, key);
    if (!seq || (seq->type == GS_YN_SCALAR && seq->null))
        return 0;
    if (seq->type != GS_YN_SEQ)
        return at(err, GS_ERR_INVALID, file, seq, "%s must be a list", key);
    size_t first_here = list->n;
    for (const gs_yn *it = seq->u.first; it; it = it->next) {
        if (it->type != GS_YN_MAP)
            return at(err, GS_ERR_INVALID, file, it, "%s: each entry must be a mapping", key);
        const gs_yn *nn = yget(it, "name");
        if (!nn || nn->type != GS_YN_SCALAR || nn->null || !nn->len)
            return at(err, GS_ERR_INVALID, file, nn ? nn : it, "%s: entry without a name", key);
        const gs_yn *v = yget(it, inner);
        if (v && v->type == GS_YN_SCALAR && v->null)
            v = NULL;
        if (v && v->type != GS_YN_MAP)
            return at(err, GS_ERR_INVALID, file, v, "%s \"%s\": %s must be a mapping", key,
                      nn->u.text, inner);
        bool seen = false;
        for (size_t i = 0; i < list->n; i++) {
            if (strcmp(list->v[i].name, nn->u.text))
                continue;
            if (i >= first_here) /* client-go's v1 conversion refuses duplicate names */
                return at(err, GS_ERR_INVALID, file, nn, "duplicate name \"%s\" in %s",
                          nn->u.text, key);
            seen = true; /* an earlier file named it: the first file wins */
        }
        if (seen)
            continue;
        kc_entry e = {nn->u.text, nn, v, file, dir};
        if (gs_vec_push(*list, e))
            return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    }
    return 0;
}

static int load_text(kc_load *L, const char *path, const char *data, size_t len, gs_error *err)
{
    const char *file = gs_arena_strdup(&L->tmp, path);
    const char *dir = dir_of(&L->tmp, path);
    if (!file || !dir)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    gs_yt_opts o = {0};
    o.file = file;
    o.what = "a kubeconfig";
    o.copy_text = true;
    o.max_nodes = 1u << 20;
    o.max_depth = 64;
    gs_yn *root = NULL;
    if (gs_yt_build(&o, &L->tmp, data, len, &root, NULL, err))
        return -1;
    L->nfiles++;
    if (!L->first_file)
        L->first_file = file;
    if (!root)
        return 0; /* an empty file is an empty Config */
    if (root->type != GS_YN_MAP)
        return at(err, GS_ERR_INVALID, file, root, "a kubeconfig must be a mapping (kind: Config)");
    const char *kind = NULL;
    const gs_yn *kn = NULL;
    if (ystr(root, "kind", file, "kubeconfig", &kind, &kn, err))
        return -1;
    if (kind && strcmp(kind, "Config"))
        return at(err, GS_ERR_INVALID, file, kn, "kind is \"%s\", expected Config", kind);
    const char *cur = NULL;
    const gs_yn *cn = NULL;
    if (ystr(root, "current-context", file, "kubeconfig", &cur, &cn, err))
        return -1;
    if (cur && !L->current) {
        L->current = cur;
        L->current_node = cn;
        L->current_file = file;
    }
    if (add_entries(L, &L->clusters, root, "clusters", "cluster", file, dir, err) ||
        add_entries(L, &L->users, root, "users", "user", file, dir, err) ||
        add_entries(L, &L->contexts, root, "contexts", "context", file, dir, err))
        return -1;
    return 0;
}

static int load_file(kc_load *L, const char *path, bool must_exist, gs_error *err)
{
    struct stat st;
    if (!must_exist && stat(path, &st) != 0 && errno == ENOENT)
        return 0; /* kubectl skips files of $KUBECONFIG that do not exist */
    size_t len = 0;
    char *data = gs_read_file(path, KC_MAX_FILE, &len, err);
    if (!data)
        return -1;
    int rc = load_text(L, path, data, len, err);
    free(data);
    return rc;
}

static const kc_entry *find(const kc_list *l, const char *name)
{
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->v[i].name, name))
            return &l->v[i];
    return NULL;
}

/* ---------------------------------------------------------------- resolving */
/* Set while gs_live_config_load_text runs: files the text names are not read. */
static _Thread_local bool kc_no_files;

static int read_into(gs_arena *a, const char *path, const char *file, const gs_yn *n,
                     const char *what, char **out, size_t *out_len, gs_error *err)
{
    if (kc_no_files)
        return at(err, GS_ERR_IO, file, n, "%s: %s: files are not read from an in-memory kubeconfig", what, path);
    size_t len = 0;
    gs_error e;
    char *data = gs_read_file(path, KC_MAX_FILE, &len, &e);
    if (!data)
        return at(err, GS_ERR_IO, file, n, "%s: cannot read %s: %s", what, path, e.msg);
    *out = gs_arena_memdup(a, data, len + 1);
    *out_len = len;
    free(data);
    return *out ? 0 : gs_fail(err, GS_ERR_NOMEM, "out of memory");
}

/* A "<key>-data" (base64) or "<key>" (a path) pair into PEM bytes. */
static int data_or_file(gs_live_config *cfg, const kc_entry *e, const char *key, const char *what,
                        char **out, size_t *out_len, bool *was_set, gs_error *err)
{
    char dkey[64];
    snprintf(dkey, sizeof dkey, "%s-data", key);
    const char *d = NULL, *f = NULL;
    const gs_yn *dn = NULL, *fn = NULL;
    if (ystr(e->value, dkey, e->file, what, &d, &dn, err) ||
        ystr(e->value, key, e->file, what, &f, &fn, err))
        return -1;
    *was_set = d || f;
    if (d && f && strcmp(key, "certificate-authority"))
        return at(err, GS_ERR_INVALID, e->file, fn, "%s-data and %s are both specified for %s; please specify only one",
                  key, key, e->name);
    if (d) { /* -data wins over the file (certificate-authority) */
        size_t bad = 0;
        if (gs_live_base64_decode(&cfg->arena, d, dn->len, out, out_len, &bad))
            return at(err, GS_ERR_INVALID, e->file, dn, "%s: %s: illegal base64 data at input byte %zu",
                      what, dkey, bad);
        return 0;
    }
    if (f) {
        char *p = gs_live_resolve_path(&cfg->arena, e->dir, f);
        if (!p)
            return gs_fail(err, GS_ERR_NOMEM, "out of memory");
        return read_into(&cfg->arena, p, e->file, fn, what, out, out_len, err);
    }
    return 0;
}

static int resolve_cluster(gs_live_config *cfg, const kc_entry *e, gs_error *err)
{
    char what[160];
    snprintf(what, sizeof what, "cluster \"%s\"", e->name);
    const char *server = NULL, *tsn = NULL, *proxy = NULL;
    const gs_yn *sn = NULL;
    if (!e->value)
        return at(err, GS_ERR_INVALID, e->file, e->name_node, "%s has no cluster", what);
    if (ystr(e->value, "server", e->file, what, &server, &sn, err) ||
        ystr(e->value, "tls-server-name", e->file, what, &tsn, NULL, err) ||
        ystr(e->value, "proxy-url", e->file, what, &proxy, NULL, err) ||
        ybool(e->value, "insecure-skip-tls-verify", e->file, what, &cfg->insecure_skip_tls_verify, err) ||
        ybool(e->value, "disable-compression", e->file, what, &cfg->disable_compression, err))
        return -1;
    if (!server)
        return at(err, GS_ERR_INVALID, e->file, e->value, "no server found for cluster \"%s\"", e->name);
    if (!strstr(server, "://"))
        cfg->server = gs_arena_printf(&cfg->arena, "https://%s", server);
    else if (strncmp(server, "https://", 8) && strncmp(server, "http://", 7))
        return at(err, GS_ERR_INVALID, e->file, sn, "%s: server \"%s\": only http and https are supported",
                  what, server);
    else
        cfg->server = gs_arena_strdup(&cfg->arena, server);
    if (!cfg->server)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    size_t sl = strlen(cfg->server);
    while (sl > 0 && cfg->server[sl - 1] == '/')
        cfg->server[--sl] = '\0';
    /* a URL without a host ("https://", "https:///x"): client-go refuses it too */
    const char *host = strstr(cfg->server, "://");
    if (!host || !host[3] || host[3] == '/')
        return at(err, GS_ERR_INVALID, e->file, sn, "%s: server \"%s\": no host in the URL", what, server);
    cfg->tls_server_name = gs_arena_strdup(&cfg->arena, tsn);
    cfg->proxy_url = gs_arena_strdup(&cfg->arena, proxy);
    bool ca_set = false;
    if (data_or_file(cfg, e, "certificate-authority", what, &cfg->ca_pem, &cfg->ca_len, &ca_set, err))
        return -1;
    if (ca_set && cfg->insecure_skip_tls_verify)
        return at(err, GS_ERR_INVALID, e->file, yget(e->value, "insecure-skip-tls-verify"),
                  "%s: specifying a root certificates file with the insecure flag is not allowed", what);
    return 0;
}

static int str_list(gs_arena *a, const gs_yn *seq, const char *file, const char *what,
                    char ***out, size_t *n, bool env, gs_error *err)
{
    *out = NULL;
    *n = 0;
    if (!seq || (seq->type == GS_YN_SCALAR && seq->null))
        return 0;
    if (seq->type != GS_YN_SEQ)
        return at(err, GS_ERR_INVALID, file, seq, "%s must be a list", what);
    *out = gs_arena_alloc(a, (seq->len + 1) * sizeof **out);
    if (!*out)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    for (const gs_yn *it = seq->u.first; it; it = it->next) {
        char *s;
        if (!env) {
            if (it->type != GS_YN_SCALAR)
                return at(err, GS_ERR_INVALID, file, it, "%s: each entry must be a string", what);
            s = gs_arena_strdup(a, it->u.text);
        } else {
            const char *name = NULL, *value = NULL;
            if (it->type != GS_YN_MAP)
                return at(err, GS_ERR_INVALID, file, it, "%s: each entry must be a mapping", what);
            if (ystr(it, "name", file, what, &name, NULL, err) ||
                ystr(it, "value", file, what, &value, NULL, err))
                return -1;
            if (!name || strchr(name, '='))
                return at(err, GS_ERR_INVALID, file, it, "%s: env variable name must be specified", what);
            s = gs_arena_printf(a, "%s=%s", name, value ? value : "");
        }
        if (!s)
            return gs_fail(err, GS_ERR_NOMEM, "out of memory");
        (*out)[(*n)++] = s;
    }
    return 0;
}

static int resolve_exec(gs_live_config *cfg, const kc_entry *e, const gs_yn *x, const char *what,
                        gs_error *err)
{
    gs_live_exec *ex = &cfg->exec;
    const char *cmd = NULL, *api = NULL, *hint = NULL, *mode = NULL;
    const gs_yn *mn = NULL;
    if (x->type != GS_YN_MAP)
        return at(err, GS_ERR_INVALID, e->file, x, "%s: exec must be a mapping", what);
    if (ystr(x, "command", e->file, what, &cmd, NULL, err) ||
        ystr(x, "apiVersion", e->file, what, &api, NULL, err) ||
        ystr(x, "installHint", e->file, what, &hint, NULL, err) ||
        ystr(x, "interactiveMode", e->file, what, &mode, &mn, err) ||
        ybool(x, "provideClusterInfo", e->file, what, &ex->provide_cluster_info, err))
        return -1;
    if (!cmd)
        return at(err, GS_ERR_INVALID, e->file, x, "command must be specified for %s to use exec authentication plugin", e->name);
    if (!api)
        return at(err, GS_ERR_INVALID, e->file, x, "apiVersion must be specified for %s to use exec authentication plugin", e->name);
    if (strcmp(api, "client.authentication.k8s.io/v1") && strcmp(api, "client.authentication.k8s.io/v1beta1"))
        return at(err, GS_ERR_INVALID, e->file, yget(x, "apiVersion"),
                  "%s: exec plugin apiVersion \"%s\" is not supported (client.authentication.k8s.io/v1 or v1beta1)", what, api);
    if (mode && strcmp(mode, "Never") && strcmp(mode, "IfAvailable") && strcmp(mode, "Always"))
        return at(err, GS_ERR_INVALID, e->file, mn, "%s: invalid interactiveMode \"%s\" (Never, IfAvailable, Always)", what, mode);
    if (mode && !strcmp(mode, "Always"))
        return at(err, GS_ERR_INVALID, e->file, mn,
                  "%s: interactiveMode Always needs a terminal; gpusched runs exec plugins without one", what);
    ex->command = strchr(cmd, '/') ? gs_live_resolve_path(&cfg->arena, e->dir, cmd)
                                   : gs_arena_strdup(&cfg->arena, cmd);
    ex->api_version = gs_arena_strdup(&cfg->arena, api);
    ex->install_hint = gs_arena_strdup(&cfg->arena, hint);
    if (!ex->command || !ex->api_version)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    if (str_list(&cfg->arena, yget(x, "args"), e->file, "exec args", &ex->args, &ex->nargs, false, err) ||
        str_list(&cfg->arena, yget(x, "env"), e->file, "exec env", &ex->env, &ex->nenv, true, err))
        return -1;
    cfg->auth = GS_LIVE_AUTH_EXEC;
    return 0;
}

static int resolve_user(gs_live_config *cfg, const kc_entry *e, gs_error *err)
{
    char what[160];
    snprintf(what, sizeof what, "user \"%s\"", e->name);
    cfg->source = gs_arena_strdup(&cfg->arena, e->file);
    if (!e->value)
        return 0;
    bool cert_set = false, key_set = false;
    if (data_or_file(cfg, e, "client-certificate", what, &cfg->cert_pem, &cfg->cert_len, &cert_set, err) ||
        data_or_file(cfg, e, "client-key", what, &cfg->key_pem, &cfg->key_len, &key_set, err))
        return -1;
    if (cert_set != key_set)
        return at(err, GS_ERR_INVALID, e->file, e->value,
                  cert_set ? "client-key-data or client-key must be specified for %s to use the clientCert authentication method"
                           : "client-cert-data or client-cert must be specified for %s to use the clientCert authentication method",
                  e->name);
    const char *token = NULL, *tfile = NULL, *user = NULL, *pass = NULL;
    const gs_yn *un = NULL;
    if (ystr(e->value, "token", e->file, what, &token, NULL, err) ||
        ystr(e->value, "tokenFile", e->file, what, &tfile, NULL, err) ||
        ystr(e->value, "username", e->file, what, &user, &un, err) ||
        ystr(e->value, "password", e->file, what, &pass, NULL, err))
        return -1;
    const gs_yn *ap = yget(e->value, "auth-provider");
    if (ap && !(ap->type == GS_YN_SCALAR && ap->null)) {
        const char *apn = NULL;
        (void)ystr(ap, "name", e->file, what, &apn, NULL, NULL);
        return at(err, GS_ERR_INVALID, e->file, ap,
                  "%s: auth-provider \"%s\" is not supported (removed in kubectl 1.26); use an exec credential plugin",
                  what, apn ? apn : "");
    }
    if ((token || tfile) && (user || pass))
        return at(err, GS_ERR_INVALID, e->file, un ? un : e->value,
                  "more than one authentication method found for %s; found [token basicAuth], only one is allowed", e->name);
    if (token) {
        cfg->auth = GS_LIVE_AUTH_TOKEN;
        cfg->token = gs_arena_strdup(&cfg->arena, token);
    } else if (tfile) {
        cfg->auth = GS_LIVE_AUTH_TOKEN_FILE;
        cfg->token_file = gs_live_resolve_path(&cfg->arena, e->dir, tfile);
    } else if (user || pass) {
        cfg->auth = GS_LIVE_AUTH_BASIC;
        cfg->username = gs_arena_strdup(&cfg->arena, user ? user : "");
        cfg->password = gs_arena_strdup(&cfg->arena, pass ? pass : "");
    }
    const gs_yn *x = yget(e->value, "exec");
    if (x && !(x->type == GS_YN_SCALAR && x->null) && resolve_exec(cfg, e, x, what, err))
        return -1; /* exec supplies the credential when both are given */
    return 0;
}

static gs_live_config *config_new(gs_error *err)
{
    gs_live_config *cfg = calloc(1, sizeof *cfg);
    if (!cfg || !(cfg->state = gs_live_state_new())) {
        free(cfg);
        gs_fail(err, GS_ERR_NOMEM, "out of memory");
        return NULL;
    }
    gs_arena_init(&cfg->arena, 8192);
    return cfg;
}

static int from_kubeconfig(gs_live_config *cfg, kc_load *L, const gs_live_opts *o, gs_error *err)
{
    const char *name = o->context && *o->context ? o->context : L->current;
    if (!name)
        return gs_error_set(err, GS_ERR_INVALID, L->first_file, 0, 0, NULL,
                            "current-context is not set; pass --context");
    const kc_entry *ctx = find(&L->contexts, name);
    if (!ctx) {
        if (name == L->current)
            return at(err, GS_ERR_INVALID, L->current_file, L->current_node,
                      "context \"%s\" does not exist", name);
        return gs_error_set(err, GS_ERR_INVALID, L->nfiles == 1 ? L->first_file : NULL, 0, 0,
                            NULL, "context \"%s\" does not exist", name);
    }
    char what[160];
    snprintf(what, sizeof what, "context \"%s\"", name);
    const char *cl = NULL, *us = NULL, *ns = NULL;
    const gs_yn *cln = NULL, *usn = NULL;
    if (!ctx->value)
        return at(err, GS_ERR_INVALID, ctx->file, ctx->name_node, "%s has no context", what);
    if (ystr(ctx->value, "cluster", ctx->file, what, &cl, &cln, err) ||
        ystr(ctx->value, "user", ctx->file, what, &us, &usn, err) ||
        ystr(ctx->value, "namespace", ctx->file, what, &ns, NULL, err))
        return -1;
    if (!cl)
        return at(err, GS_ERR_INVALID, ctx->file, ctx->value, "%s: cluster must be specified", what);
    const kc_entry *ce = find(&L->clusters, cl);
    if (!ce)
        return at(err, GS_ERR_INVALID, ctx->file, cln, "cluster \"%s\" was not found for context \"%s\"", cl, name);
    const kc_entry *ue = NULL;
    if (us && !(ue = find(&L->users, us)))
        return at(err, GS_ERR_INVALID, ctx->file, usn, "user \"%s\" was not found for context \"%s\"", us, name);
    cfg->context = gs_arena_strdup(&cfg->arena, name);
    cfg->cluster_name = gs_arena_strdup(&cfg->arena, cl);
    cfg->user_name = gs_arena_strdup(&cfg->arena, us ? us : "");
    cfg->namespace_ = gs_arena_strdup(&cfg->arena, ns ? ns : "default");
    cfg->source = gs_arena_strdup(&cfg->arena, ctx->file);
    if (resolve_cluster(cfg, ce, err) || (ue && resolve_user(cfg, ue, err)))
        return -1;
    return 0;
}

static int in_cluster(gs_live_config *cfg, const gs_live_opts *o, gs_error *err)
{
    const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");
    if (!host || !*host || !port || !*port)
        return gs_fail(err, GS_ERR_INVALID,
                       "unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined");
    const char *dir = o->serviceaccount_dir ? o->serviceaccount_dir : SA_DIR_DEFAULT;
    cfg->server = strchr(host, ':') ? gs_arena_printf(&cfg->arena, "https://[%s]:%s", host, port)
                                    : gs_arena_printf(&cfg->arena, "https://%s:%s", host, port);
    cfg->token_file = gs_arena_printf(&cfg->arena, "%s/token", dir);
    char *ca_path = gs_arena_printf(&cfg->arena, "%s/ca.crt", dir);
    cfg->source = gs_arena_strdup(&cfg->arena, "in-cluster");
    cfg->context = gs_arena_strdup(&cfg->arena, "");
    cfg->cluster_name = gs_arena_strdup(&cfg->arena, "");
    cfg->user_name = gs_arena_strdup(&cfg->arena, "");
    if (!cfg->server || !cfg->token_file || !ca_path || !cfg->source)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    cfg->auth = GS_LIVE_AUTH_TOKEN_FILE;
    size_t len = 0;
    gs_error e;
    char *tok = gs_read_file(cfg->token_file, 1u << 20, &len, &e);
    if (!tok)
        return gs_error_set(err, GS_ERR_IO, cfg->token_file, 0, 0, NULL,
                            "in-cluster: cannot read the service-account token: %s", e.msg);
    free(tok);
    if (read_into(&cfg->arena, ca_path, ca_path, NULL, "in-cluster", &cfg->ca_pem, &cfg->ca_len, err))
        return -1;
    const char *ns = getenv("POD_NAMESPACE");
    if (ns && *ns) {
        cfg->namespace_ = gs_arena_strdup(&cfg->arena, ns);
    } else {
        char *nsf = gs_arena_printf(&cfg->arena, "%s/namespace", dir);
        char *data = nsf ? gs_read_file(nsf, 4096, &len, NULL) : NULL;
        if (data) {
            while (len && (data[len - 1] == '\n' || data[len - 1] == ' ' || data[len - 1] == '\r'))
                data[--len] = '\0';
            cfg->namespace_ = gs_arena_strdup(&cfg->arena, len ? data : "default");
            free(data);
        } else {
            cfg->namespace_ = gs_arena_strdup(&cfg->arena, "default");
        }
    }
    return cfg->namespace_ ? 0 : gs_fail(err, GS_ERR_NOMEM, "out of memory");
}

gs_live_config *gs_live_config_load(const gs_live_opts *opts, gs_error *err)
{
    gs_live_opts none = {0};
    const gs_live_opts *o = opts ? opts : &none;
    gs_live_config *cfg = config_new(err);
    if (!cfg)
        return NULL;
    if (o->in_cluster) {
        if (in_cluster(cfg, o, err))
            goto fail;
        return cfg;
    }
    kc_load L;
    memset(&L, 0, sizeof L);
    gs_arena_init(&L.tmp, 0);
    int rc = 0;
    if (o->kubeconfig) {
        rc = load_file(&L, o->kubeconfig, true, err);
    } else {
        const char *env = getenv("KUBECONFIG");
        if (env && *env) {
            char *list = gs_arena_strdup(&L.tmp, env);
            unsigned n = 0;
            for (char *p = list, *next; p && !rc; p = next) {
                next = strchr(p, ':');
                if (next)
                    *next++ = '\0';
                if (!*p)
                    continue;
                /* the same file named twice is read once (client-go deduplicates) */
                bool dup = false;
                for (char *q = list; q < p; q += strlen(q) + 1)
                    if (!strcmp(q, p))
                        dup = true;
                if (dup)
                    continue;
                if (++n > KC_MAX_FILES) {
                    rc = gs_fail(err, GS_ERR_LIMIT, "KUBECONFIG names more than %d files", KC_MAX_FILES);
                    break;
                }
                rc = load_file(&L, p, false, err);
            }
        } else {
            const char *home = getenv("HOME");
            if (home && *home) {
                char *p = gs_arena_printf(&L.tmp, "%s/.kube/config", home);
                rc = p ? load_file(&L, p, false, err) : gs_fail(err, GS_ERR_NOMEM, "out of memory");
            }
        }
    }
    if (!rc && L.nfiles == 0) {
        const char *h = getenv("KUBERNETES_SERVICE_HOST"), *p = getenv("KUBERNETES_SERVICE_PORT");
        if (h && *h && p && *p && !o->context)
            rc = in_cluster(cfg, o, err);
        else
            rc = gs_fail(err, GS_ERR_INVALID,
                         "no configuration has been provided: no kubeconfig file found (KUBECONFIG, ~/.kube/config) and not running in a cluster");
    } else if (!rc) {
        rc = from_kubeconfig(cfg, &L, o, err);
    }
    gs_vec_free(L.clusters);
    gs_vec_free(L.users);
    gs_vec_free(L.contexts);
    gs_arena_free(&L.tmp);
    if (rc)
        goto fail;
    return cfg;
fail:
    gs_live_config_free(cfg);
    return NULL;
}

gs_live_config *gs_live_config_load_text(const char *file, const char *data, size_t len,
                                         const char *context, gs_error *err)
{
    gs_live_config *cfg = config_new(err);
    if (!cfg)
        return NULL;
    kc_load L;
    memset(&L, 0, sizeof L);
    gs_arena_init(&L.tmp, 0);
    gs_live_opts o = {.context = context};
    kc_no_files = true;
    int rc = load_text(&L, file, data, len, err);
    if (!rc)
        rc = from_kubeconfig(cfg, &L, &o, err);
    kc_no_files = false;
    gs_vec_free(L.clusters);
    gs_vec_free(L.users);
    gs_vec_free(L.contexts);
    gs_arena_free(&L.tmp);
    if (rc) {
        gs_live_config_free(cfg);
        return NULL;
    }
    return cfg;
}

void gs_live_config_free(gs_live_config *cfg)
{
    if (!cfg)
        return;
    gs_live_state_free(cfg->state);
    gs_arena_free(&cfg->arena);
    free(cfg);
}
