/*
 * test_live_optional.c - the optional kinds of a live read (resource.k8s.io/v1 DRA kinds):
 * a cluster that does not serve them (404, Kubernetes before 1.34) or a user who may not
 * list them (403) is still read, those kinds empty, with one warning in the snapshot; any
 * other refusal fails the read; the same for the store's lists the informers make.
 *
 * A small HTTP/1.1 server on 127.0.0.1 (one thread, one request per connection) answers
 * the collection paths: the core kinds with empty Lists, the DRA kinds with what the test
 * sets (a List with one DeviceClass, 404, 403 or 500 with a Status body).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "gpusched/kube.h"
#include "gpusched/live.h"

static int dra_status = 200; /* what the DRA collections answer */
static int listen_fd = -1;
static pthread_t server;
static volatile int stop_server;

static void answer(int fd, const char *path)
{
    char body[1024];
    int code = 200;
    if (strstr(path, "/apis/resource.k8s.io/v1/") && dra_status != 200) {
        code = dra_status;
        const char *reason = code == 404 ? "NotFound" : code == 403 ? "Forbidden" : "InternalError";
        snprintf(body, sizeof body,
                 "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
                 "\"message\":\"%s\",\"reason\":\"%s\",\"code\":%d}",
                 code == 404 ? "the server could not find the requested resource"
                 : code == 403 ? "deviceclasses.resource.k8s.io is forbidden: User \\\"u\\\" cannot list"
                               : "boom",
                 reason, code);
    } else if (strstr(path, "/deviceclasses")) {
        snprintf(body, sizeof body,
                 "{\"kind\":\"DeviceClassList\",\"apiVersion\":\"resource.k8s.io/v1\",\"metadata\":"
                 "{\"resourceVersion\":\"7\"},\"items\":[{\"metadata\":{\"name\":\"gpu.nvidia.com\"},\"spec\":"
                 "{\"selectors\":[{\"cel\":{\"expression\":\"device.driver == 'gpu.nvidia.com'\"}}]}}]}");
    } else {
        snprintf(body, sizeof body, "{\"kind\":\"List\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":"
                                    "\"7\"},\"items\":[]}");
    }
    char head[256];
    int hl = snprintf(head, sizeof head,
                      "HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                      "Connection: close\r\n\r\n",
                      code, strlen(body));
    if (write(fd, head, (size_t)hl) < 0 || write(fd, body, strlen(body)) < 0)
        return;
}

static void *serve(void *arg)
{
    (void)arg;
    while (!stop_server) {
        int fd = accept(listen_fd, NULL, NULL);
        if (fd < 0)
            continue;
        char req[4096];
        size_t n = 0;
        while (n < sizeof req - 1) {
            ssize_t k = read(fd, req + n, sizeof req - 1 - n);
            if (k <= 0)
                break;
            n += (size_t)k;
            req[n] = '\0';
            if (strstr(req, "\r\n\r\n"))
                break;
        }
        req[n] = '\0';
        char path[1024] = "";
        sscanf(req, "GET %1023s", path);
        answer(fd, path);
        close(fd);
    }
    return NULL;
}

static char kubeconfig[256];

static int setup(void **state)
{
    (void)state;
    listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(listen_fd, 16) != 0 ||
        getsockname(listen_fd, (struct sockaddr *)&a, &al) != 0)
        return -1;
    const char *tmp = getenv("TMPDIR");
    snprintf(kubeconfig, sizeof kubeconfig, "%s/gs-test-live-optional-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int kfd = mkstemp(kubeconfig);
    FILE *f = kfd < 0 ? NULL : fdopen(kfd, "w");
    if (!f)
        return -1;
    fprintf(f,
            "apiVersion: v1\nkind: Config\ncurrent-context: t\n"
            "clusters: [{name: c, cluster: {server: \"http://127.0.0.1:%d\"}}]\n"
            "users: [{name: u, user: {token: abc}}]\n"
            "contexts: [{name: t, context: {cluster: c, user: u}}]\n",
            ntohs(a.sin_port));
    fclose(f);
    return pthread_create(&server, NULL, serve, NULL) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    stop_server = 1;
    shutdown(listen_fd, SHUT_RDWR);
    close(listen_fd);
    pthread_join(server, NULL);
    unlink(kubeconfig);
    return 0;
}

/* A one-shot live read of the snapshot kinds with the DRA collections answering status. */
static int live_read(int status, gs_snapshot *s, gs_error *err)
{
    dra_status = status;
    gs_live_opts lo = {.kubeconfig = kubeconfig};
    gs_live_config *cfg = gs_live_config_load(&lo, err);
    assert_non_null(cfg);
    gs_live_client_opts co = {.max_retries = -1, .timeout_ms = 5000};
    gs_live_client *c = gs_live_client_new(cfg, &co, err);
    assert_non_null(c);
    gs_snapshot_init(s);
    gs_live_read_opts o = {.name = "context t"};
    int rc = gs_live_read_snapshot(c, &o, s, NULL, err);
    gs_live_client_free(c);
    gs_live_config_free(cfg);
    return rc;
}

static void test_served(void **state)
{
    (void)state;
    gs_snapshot s;
    gs_error err;
    gs_error_clear(&err);
    assert_int_equal(live_read(200, &s, &err), 0);
    assert_int_equal(s.device_classes.n, 1);
    assert_string_equal(s.device_classes.v[0].meta.name, "gpu.nvidia.com");
    assert_int_equal(s.device_classes.v[0].selectors[0].src.line, 0); /* a cluster: no positions */
    assert_int_equal(s.warnings.n, 0);
    gs_snapshot_free(&s);
}

static void test_not_served(void **state)
{
    (void)state;
    gs_snapshot s;
    gs_error err;
    gs_error_clear(&err);
    assert_int_equal(live_read(404, &s, &err), 0);
    assert_int_equal(s.device_classes.n + s.claims.n + s.claim_templates.n + s.resource_slices.n, 0);
    assert_int_equal(s.warnings.n, 1);
    assert_string_equal(s.warnings.v[0].src.file, "context t");
    assert_string_equal(s.warnings.v[0].message,
                        "resource.k8s.io/v1 deviceclasses, resourceclaims, resourceclaimtemplates, resourceslices: "
                        "not served by this cluster (HTTP 404: Kubernetes before 1.34, or the API turned off); "
                        "read as none");
    gs_snapshot_free(&s);
}

static void test_forbidden(void **state)
{
    (void)state;
    gs_snapshot s;
    gs_error err;
    gs_error_clear(&err);
    assert_int_equal(live_read(403, &s, &err), 0);
    assert_int_equal(s.device_classes.n, 0);
    assert_int_equal(s.warnings.n, 1);
    assert_non_null(strstr(s.warnings.v[0].message, "not allowed (HTTP 403)"));
    gs_snapshot_free(&s);
}

static void test_other_errors_fail(void **state)
{
    (void)state;
    gs_snapshot s;
    gs_error err;
    gs_error_clear(&err);
    assert_int_equal(live_read(500, &s, &err), -1);
    assert_non_null(strstr(err.msg, "boom"));
    gs_snapshot_free(&s);
}

/* The store's list (what informers use) empties a refused kind and reports 1; a later
 * list that succeeds clears the refusal. */
static void test_store_list(void **state)
{
    (void)state;
    gs_error err;
    gs_error_clear(&err);
    gs_live_opts lo = {.kubeconfig = kubeconfig};
    gs_live_config *cfg = gs_live_config_load(&lo, &err);
    gs_live_client_opts co = {.max_retries = -1, .timeout_ms = 5000};
    gs_live_client *c = gs_live_client_new(cfg, &co, &err);
    gs_live_store *st = gs_live_store_new(&err);
    char path[256], rv[64];
    gs_live_kind_path(GS_LIVE_DEVICECLASS, NULL, path, sizeof path);
    assert_string_equal(path, "/apis/resource.k8s.io/v1/deviceclasses");
    dra_status = 200;
    assert_int_equal(gs_live_store_list(c, st, GS_LIVE_DEVICECLASS, path, 0, rv, sizeof rv, &err), 0);
    gs_live_store_stats sts;
    gs_live_store_stats_get(st, GS_LIVE_DEVICECLASS, &sts);
    assert_int_equal(sts.objects, 1);
    dra_status = 404;
    assert_int_equal(gs_live_store_list(c, st, GS_LIVE_DEVICECLASS, path, 0, rv, sizeof rv, &err), 1);
    gs_live_store_stats_get(st, GS_LIVE_DEVICECLASS, &sts);
    assert_int_equal(sts.objects, 0);
    gs_snapshot s;
    gs_snapshot_init(&s);
    assert_int_equal(gs_live_store_snapshot(st, GS_LIVE_KIND_BIT(GS_LIVE_DEVICECLASS), &s, "c", NULL, &err), 0);
    assert_int_equal(s.warnings.n, 1);
    assert_string_equal(s.warnings.v[0].message, "resource.k8s.io/v1 deviceclasses: not served by this cluster "
                                                 "(HTTP 404: Kubernetes before 1.34, or the API turned off); "
                                                 "read as none");
    gs_snapshot_free(&s);
    /* a kind that is not optional fails on a 404 as before */
    gs_live_kind_path(GS_LIVE_POD, NULL, path, sizeof path);
    assert_int_equal(gs_live_kind_get(GS_LIVE_POD)->optional, false);
    assert_true(gs_live_kind_get(GS_LIVE_RESOURCESLICE)->optional);
    assert_int_equal(gs_live_kind_find("resourceclaimtemplates"), GS_LIVE_RESOURCECLAIMTEMPLATE);
    gs_live_kind_path(GS_LIVE_RESOURCECLAIM, "ml", path, sizeof path);
    assert_string_equal(path, "/apis/resource.k8s.io/v1/namespaces/ml/resourceclaims");
    /* served again: the warning goes */
    dra_status = 200;
    gs_live_kind_path(GS_LIVE_DEVICECLASS, NULL, path, sizeof path);
    assert_int_equal(gs_live_store_list(c, st, GS_LIVE_DEVICECLASS, path, 0, rv, sizeof rv, &err), 0);
    gs_snapshot_init(&s);
    assert_int_equal(gs_live_store_snapshot(st, GS_LIVE_KIND_BIT(GS_LIVE_DEVICECLASS), &s, "c", NULL, &err), 0);
    assert_int_equal(s.warnings.n, 0);
    assert_int_equal(s.device_classes.n, 1);
    gs_snapshot_free(&s);
    gs_live_store_free(st);
    gs_live_client_free(c);
    gs_live_config_free(cfg);
}

/* An informer over a refused optional kind: synced as none (a wait for sync returns), and
 * listed again on the next step, picking the kind up once it is served. */
static void test_informer(void **state)
{
    (void)state;
    gs_error err;
    gs_error_clear(&err);
    gs_live_opts lo = {.kubeconfig = kubeconfig};
    gs_live_config *cfg = gs_live_config_load(&lo, &err);
    gs_live_store *st = gs_live_store_new(&err);
    gs_live_client_opts co = {.max_retries = -1, .timeout_ms = 5000};
    gs_live_informer_opts io = {.kinds = GS_LIVE_KIND_BIT(GS_LIVE_DEVICECLASS), .client = &co};
    gs_live_informer *inf = gs_live_informer_new(cfg, st, &io, &err);
    assert_non_null(inf);
    dra_status = 404; /* the streaming list's watch and then the paged list are refused */
    assert_int_equal(gs_live_informer_step(inf, GS_LIVE_DEVICECLASS, &err), 0);
    assert_true(gs_live_informer_synced(inf, GS_LIVE_DEVICECLASS));
    assert_int_equal(gs_live_informer_wait_synced(inf, 0, 0), 0);
    gs_live_store_stats sts;
    gs_live_store_stats_get(st, GS_LIVE_DEVICECLASS, &sts);
    assert_int_equal(sts.objects, 0);
    dra_status = 200;
    assert_int_equal(gs_live_informer_step(inf, GS_LIVE_DEVICECLASS, &err), 0);
    gs_live_store_stats_get(st, GS_LIVE_DEVICECLASS, &sts);
    assert_int_equal(sts.objects, 1);
    gs_live_informer_free(inf);
    gs_live_store_free(st);
    gs_live_config_free(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_served),
        cmocka_unit_test(test_not_served),
        cmocka_unit_test(test_forbidden),
        cmocka_unit_test(test_other_errors_fail),
        cmocka_unit_test(test_store_list),
        cmocka_unit_test(test_informer),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
