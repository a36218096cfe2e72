/*
 * bench_read.c - the snapshot reader on realistic kubectl dumps, and the webhook's memory
 * per review.
 *
 *   bench_read [MB] [DIR]
 *
 * Writes DIR/pods-pretty.json (a `kubectl get pods -A -o json` List of about MB
 * megabytes: 4-space indentation, managedFields, env, volumes, volumeMounts, probes,
 * tolerations and a full status on every pod, as kubectl prints them) and
 * DIR/pods-oneline.json (the same List on one line, as `jq -c` writes it), then reads each
 * in a fresh process, best of three (gs_snapshot_read_path + gs_snapshot_finish), and prints MB/s, pods/s,
 * peak RSS (VmHWM: heap plus the mapped pages still resident), the anonymous memory at the
 * end (RssAnon: heap, i.e. the snapshot) and the snapshot's own arena. Next to each, the
 * same file through `/usr/bin/python3 -c 'import json,sys; json.load(open(sys.argv[1]))'`
 * (skipped, and said so, when there is no /usr/bin/python3).
 *
 * Then memory per review: AdmissionReview bodies of about 1 MiB through gs_review_run
 * (validate), each in a fresh process: a valid Pod with 36,522 env entries, a Pod with an
 * unknown field nested 520,000 levels, and a Pod with 20,000 labels; the figure is the
 * growth of peak RSS over the process with the body already in memory.
 *
 * Each file is also read from a pipe (`cat FILE | bench_read --read -`, what
 * `kubectl get pods -A -o json | gpusched explain -` does): streamed through a window, so
 * its peak RSS is the snapshot plus one item and one read, where the mapped file's
 * includes up to 32 MiB of resident file pages. BENCH_READ_NO_PYTHON skips python3 (for
 * large sizes).
 *
 * Defaults: MB = 200, DIR = /tmp. The files are removed at the end (kept when the
 * environment has BENCH_READ_KEEP, for profiling: bench_read --read FILE reads one).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"
#include "gpusched/kube.h"
#include "gpusched/serve.h"

/* ---------------------------------------------------------------- /proc */
static long status_kib(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    long v = -1;
    size_t fl = strlen(field);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, field, fl) && line[fl] == ':') {
            v = atol(line + fl + 1);
            break;
        }
    fclose(f);
    return v;
}

/* ---------------------------------------------------------------- generator */
static unsigned long long rng = 0x9E3779B97F4A7C15ull;
static unsigned rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)rng;
}

/* One pod, one line of JSON (kubectl's key order: sorted). */
static void pod_json(FILE *f, unsigned i)
{
    unsigned ns = i % 40, node = rnd() % 2000, gpu = i % 5 == 0;
    char uid[40];
    snprintf(uid, sizeof uid, "%08x-%04x-%04x-%04x-%012x", rnd(), rnd() & 0xffff, rnd() & 0xffff,
             rnd() & 0xffff, rnd() & 0xfffffff);
    fprintf(f, "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"annotations\":{"
               "\"kubectl.kubernetes.io/restartedAt\":\"2026-11-02T10:11:12Z\","
               "\"prometheus.io/scrape\":\"true\"},\"creationTimestamp\":\"2026-11-20T08:%02u:%02uZ\","
               "\"generateName\":\"app-%u-7d9f8b6c5-\",\"labels\":{\"app\":\"app-%u\",\"pod-template-hash\":"
               "\"7d9f8b6c5\",\"team\":\"team-%u\"},\"managedFields\":[{\"apiVersion\":\"v1\","
               "\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:metadata\":{\"f:generateName\":{},\"f:labels\":"
               "{\".\":{},\"f:app\":{},\"f:pod-template-hash\":{}},\"f:ownerReferences\":{\".\":{},"
               "\"k:{\\\"uid\\\":\\\"%s\\\"}\":{}}},\"f:spec\":{\"f:containers\":{\"k:{\\\"name\\\":\\\"main\\\"}\":"
               "{\".\":{},\"f:env\":{\".\":{},\"k:{\\\"name\\\":\\\"LOG_LEVEL\\\"}\":{\".\":{},\"f:name\":{},"
               "\"f:value\":{}}},\"f:image\":{},\"f:imagePullPolicy\":{},\"f:name\":{},\"f:ports\":{},"
               "\"f:resources\":{\".\":{},\"f:limits\":{},\"f:requests\":{}}}},\"f:dnsPolicy\":{},"
               "\"f:restartPolicy\":{},\"f:schedulerName\":{}}},\"manager\":\"kube-controller-manager\","
               "\"operation\":\"Update\",\"time\":\"2026-11-20T08:00:00Z\"},{\"apiVersion\":\"v1\","
               "\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:status\":{\"f:conditions\":{\"k:{\\\"type\\\":"
               "\\\"Ready\\\"}\":{\".\":{},\"f:lastProbeTime\":{},\"f:status\":{},\"f:type\":{}}},"
               "\"f:containerStatuses\":{},\"f:hostIP\":{},\"f:phase\":{},\"f:podIP\":{},\"f:startTime\":{}}},"
               "\"manager\":\"kubelet\",\"operation\":\"Update\",\"subresource\":\"status\","
               "\"time\":\"2026-11-20T08:01:00Z\"}],\"name\":\"app-%u-7d9f8b6c5-%05u\",\"namespace\":\"ns-%u\","
               "\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"blockOwnerDeletion\":true,\"controller\":true,"
               "\"kind\":\"ReplicaSet\",\"name\":\"app-%u-7d9f8b6c5\",\"uid\":\"%s\"}],"
               "\"resourceVersion\":\"%u\",\"uid\":\"%s\"},",
            i % 60, i % 60, i % 300, i % 300, ns % 7, uid, i % 300, i % 100000, ns, i % 300, uid, 100000 + i, uid);
    fprintf(f, "\"spec\":{\"containers\":[{\"env\":[");
    for (int e = 0; e < 12; e++)
        fprintf(f, "%s{\"name\":\"VAR_%d\",\"value\":\"value-%u-%d\"}", e ? "," : "", e, i, e);
    fprintf(f, ",{\"name\":\"POD_IP\",\"valueFrom\":{\"fieldRef\":{\"apiVersion\":\"v1\",\"fieldPath\":\"status.podIP\"}}}],"
               "\"image\":\"registry.example.com/team/app:%u.%u\",\"imagePullPolicy\":\"IfNotPresent\","
               "\"livenessProbe\":{\"failureThreshold\":3,\"httpGet\":{\"path\":\"/healthz\",\"port\":8080,"
               "\"scheme\":\"HTTP\"},\"periodSeconds\":10,\"successThreshold\":1,\"timeoutSeconds\":1},"
               "\"name\":\"main\",\"ports\":[{\"containerPort\":8080,\"name\":\"http\",\"protocol\":\"TCP\"}],"
               "\"resources\":{\"limits\":{\"cpu\":\"2\",\"memory\":\"4Gi\"%s},\"requests\":{\"cpu\":\"500m\","
               "\"memory\":\"1Gi\"%s}},\"terminationMessagePath\":\"/dev/termination-log\","
               "\"terminationMessagePolicy\":\"File\",\"volumeMounts\":[{\"mountPath\":\"/etc/config\","
               "\"name\":\"config\"},{\"mountPath\":\"/var/run/secrets/kubernetes.io/serviceaccount\","
               "\"name\":\"kube-api-access-%05u\",\"readOnly\":true}]}],",
            i % 9, i % 17, gpu ? ",\"nvidia.com/gpu\":\"1\"" : "", gpu ? ",\"nvidia.com/gpu\":\"1\"" : "", i % 100000);
    fprintf(f, "\"dnsPolicy\":\"ClusterFirst\",\"enableServiceLinks\":true,\"nodeName\":\"node-%04u\","
               "\"preemptionPolicy\":\"PreemptLowerPriority\",\"priority\":0,\"restartPolicy\":\"Always\","
               "\"schedulerName\":\"default-scheduler\",\"securityContext\":{},\"serviceAccount\":\"default\","
               "\"serviceAccountName\":\"default\",\"terminationGracePeriodSeconds\":30,\"tolerations\":["
               "{\"effect\":\"NoExecute\",\"key\":\"node.kubernetes.io/not-ready\",\"operator\":\"Exists\","
               "\"tolerationSeconds\":300},{\"effect\":\"NoExecute\",\"key\":\"node.kubernetes.io/unreachable\","
               "\"operator\":\"Exists\",\"tolerationSeconds\":300}],\"volumes\":[{\"configMap\":{"
               "\"defaultMode\":420,\"name\":\"app-config\"},\"name\":\"config\"},{\"name\":\"kube-api-access-%05u\","
               "\"projected\":{\"defaultMode\":420,\"sources\":[{\"serviceAccountToken\":{\"expirationSeconds\":3607,"
               "\"path\":\"token\"}},{\"configMap\":{\"items\":[{\"key\":\"ca.crt\",\"path\":\"ca.crt\"}],"
               "\"name\":\"kube-root-ca.crt\"}}]}}]},",
            node, i % 100000);
    fprintf(f, "\"status\":{\"conditions\":[{\"lastProbeTime\":null,\"lastTransitionTime\":\"2026-11-20T08:00:01Z\","
               "\"status\":\"True\",\"type\":\"Initialized\"},{\"lastProbeTime\":null,\"lastTransitionTime\":"
               "\"2026-11-20T08:00:09Z\",\"status\":\"True\",\"type\":\"Ready\"},{\"lastProbeTime\":null,"
               "\"lastTransitionTime\":\"2026-11-20T08:00:09Z\",\"status\":\"True\",\"type\":\"ContainersReady\"},"
               "{\"lastProbeTime\":null,\"lastTransitionTime\":\"2026-11-20T08:00:01Z\",\"status\":\"True\","
               "\"type\":\"PodScheduled\"}],\"containerStatuses\":[{\"containerID\":\"containerd://%08x%08x\","
               "\"image\":\"registry.example.com/team/app:%u.%u\",\"imageID\":\"registry.example.com/team/app@sha256:"
               "%08x%08x%08x%08x\",\"lastState\":{},\"name\":\"main\",\"ready\":true,\"restartCount\":0,"
               "\"started\":true,\"state\":{\"running\":{\"startedAt\":\"2026-11-20T08:00:08Z\"}}}],"
               "\"hostIP\":\"10.0.%u.%u\",\"phase\":\"Running\",\"podIP\":\"10.244.%u.%u\",\"podIPs\":[{\"ip\":"
               "\"10.244.%u.%u\"}],\"qosClass\":\"Burstable\",\"startTime\":\"2026-11-20T08:00:01Z\"}}",
            rnd(), rnd(), i % 9, i % 17, rnd(), rnd(), rnd(), rnd(), node / 250, node % 250, i / 250 % 250,
            i % 250, i / 250 % 250, i % 250);
}

/* One-line JSON in -> kubectl's 4-space indentation out ({} and [] stay empty). */
static void pretty(FILE *in, FILE *out)
{
    int c, depth = 0, prev = 0;
    bool str = false, esc = false;
    while ((c = getc(in)) != EOF) {
        if (str) {
            putc(c, out);
            if (esc)
                esc = false;
            else if (c == '\\')
                esc = true;
            else if (c == '"')
                str = false;
            prev = c;
            continue;
        }
        if (c == '{' || c == '[') {
            int n = getc(in);
            if ((c == '{' && n == '}') || (c == '[' && n == ']')) {
                putc(c, out);
                putc(n, out);
                prev = n;
                continue;
            }
            ungetc(n, in);
            putc(c, out);
            depth++;
            fprintf(out, "\n%*s", depth * 4, "");
        } else if (c == '}' || c == ']') {
            depth--;
            fprintf(out, "\n%*s%c", depth * 4, "", c);
        } else if (c == ',') {
            fprintf(out, ",\n%*s", depth * 4, "");
        } else if (c == ':') {
            fputs(": ", out);
        } else {
            if (c == '"')
                str = true;
            putc(c, out);
        }
        prev = c;
    }
    (void)prev;
    putc('\n', out);
}

static unsigned write_dumps(const char *one, const char *pre, size_t mb)
{
    FILE *f = fopen(one, "w");
    if (!f) {
        perror(one);
        exit(1);
    }
    fputs("{\"apiVersion\":\"v1\",\"items\":[", f);
    unsigned n = 0;
    /* the pretty file is ~3x the one-line one: MB is the pretty file's size */
    size_t target = mb * 1000000 / 3;
    while ((size_t)ftell(f) < target) {
        if (n)
            putc(',', f);
        pod_json(f, n++);
    }
    fputs("],\"kind\":\"List\",\"metadata\":{\"resourceVersion\":\"\"}}", f);
    fclose(f);
    FILE *in = fopen(one, "r"), *out = fopen(pre, "w");
    if (!in || !out) {
        perror(pre);
        exit(1);
    }
    pretty(in, out);
    fclose(in);
    fclose(out);
    return n;
}

/* ---------------------------------------------------------------- children */
static int child_read(const char *path)
{
    gs_snapshot s;
    gs_snapshot_init(&s);
    gs_error err;
    gs_error_clear(&err);
    double t0 = now();
    if (gs_snapshot_read_path(&s, path, NULL, &err) != 0 || gs_snapshot_finish(&s, &err) != 0) {
        fprintf(stderr, "%s:%d:%d: %s\n", err.file, err.line, err.col, err.msg);
        return 1;
    }
    double dt = now() - t0;
    printf("%.4f %zu %ld %ld %zu\n", dt, s.pods.n, status_kib("VmHWM"), status_kib("RssAnon"),
           s.arena.used_total);
    gs_snapshot_free(&s);
    return 0;
}

static char *review_body(const char *shape, size_t *len)
{
    size_t cap = 3u << 20, n = 0;
    char *b = malloc(cap);
    if (!b)
        exit(1);
    n += (size_t)snprintf(b + n, cap - n,
                          "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
                          "\"uid\":\"705ab4f5-6393-11e8-b7cc-42010a800002\",\"kind\":{\"group\":\"\",\"version\":"
                          "\"v1\",\"kind\":\"Pod\"},\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":"
                          "\"pods\"},\"namespace\":\"ml\",\"operation\":\"CREATE\",\"userInfo\":{\"username\":"
                          "\"system:serviceaccount:kube-system:replicaset-controller\"},\"object\":{"
                          "\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"train-0\",\"labels\":{");
    if (!strcmp(shape, "labels"))
        for (int i = 0; i < 20000; i++)
            n += (size_t)snprintf(b + n, cap - n, "%s\"example.com/label-%05d\":\"value-%05d\"", i ? "," : "", i, i);
    n += (size_t)snprintf(b + n, cap - n, "}},\"spec\":{");
    if (!strcmp(shape, "deep")) {
        n += (size_t)snprintf(b + n, cap - n, "\"x-unknown\":");
        for (int i = 0; i < 520000; i++)
            b[n++] = '[';
        for (int i = 0; i < 520000; i++)
            b[n++] = ']';
        b[n++] = ',';
    }
    n += (size_t)snprintf(b + n, cap - n, "\"containers\":[{\"name\":\"main\",\"image\":\"trainer:1\",\"env\":[");
    if (!strcmp(shape, "env"))
        for (int i = 0; i < 36522; i++)
            n += (size_t)snprintf(b + n, cap - n, "%s{\"name\":\"V%05d\",\"value\":\"x\"}", i ? "," : "", i);
    n += (size_t)snprintf(b + n, cap - n,
                          "],\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}}}");
    *len = n;
    return b;
}

static int child_review(const char *shape)
{
    size_t len;
    char *body = review_body(shape, &len);
    gs_check_config cfg;
    gs_check_config_defaults(&cfg);
    gs_webhook wh = {.cfg = &cfg};
    long before = status_kib("VmHWM");
    gs_review rv;
    gs_error err;
    gs_error_clear(&err);
    double t0 = now();
    int rc = gs_review_run(&wh, GS_ENDPOINT_VALIDATE, body, len, &rv, &err);
    double dt = now() - t0;
    long after = status_kib("VmHWM");
    printf("%zu %ld %.4f %s %s\n", len, after - before, dt,
           rc ? "error" : rv.allowed ? "allowed" : "denied",
           rc ? err.msg : rv.object_error ? rv.object_error : "-");
    if (!rc)
        gs_review_free(&rv);
    free(body);
    return 0;
}

/* ---------------------------------------------------------------- parent */
static int run_child(char *const argv[], char *out, size_t cap, long *maxrss_kib, double *wall)
{
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    double t0 = now();
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(fd[1]);
    size_t n = 0;
    ssize_t r;
    while ((r = read(fd[0], out + n, cap - 1 - n)) > 0)
        n += (size_t)r;
    out[n] = '\0';
    close(fd[0]);
    int st;
    struct rusage ru;
    wait4(pid, &st, 0, &ru);
    *wall = now() - t0;
    *maxrss_kib = ru.ru_maxrss;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void bench_file(const char *self, const char *label, const char *path)
{
    struct stat sb;
    stat(path, &sb);
    double mb = (double)sb.st_size / 1e6;
    char out[512];
    long maxrss;
    double wall;
    char *argv[] = {(char *)self, "--read", (char *)path, NULL};
    double dt = 1e30;
    size_t pods = 0, arena = 0;
    long hwm = 0, anon = 0;
    for (int rep = 0; rep < 3; rep++) { /* best of three (a shared machine is noisy) */
        if (run_child(argv, out, sizeof out, &maxrss, &wall) != 0) {
            printf("%-8s gpusched: failed\n", label);
            return;
        }
        double d;
        sscanf(out, "%lf %zu %ld %ld %zu", &d, &pods, &hwm, &anon, &arena);
        if (d < dt)
            dt = d;
    }
    printf("%-8s %8.1f MB  gpusched  %7.3f s %8.0f MB/s %9.0f pods/s  peak RSS %7.1f MB  RssAnon at end %6.1f MB  snapshot arena %6.1f MB\n",
           label, mb, dt, mb / dt, (double)pods / dt, (double)hwm / 1024, (double)anon / 1024,
           (double)arena / 1e6);
    /* the same file on a pipe (`cat FILE | gpusched ... -`): streamed through a window */
    char *cargv[] = {"/bin/sh", "-c", "exec cat \"$1\" | \"$0\" --read -", (char *)self, (char *)path, NULL};
    dt = 1e30;
    for (int rep = 0; rep < 3; rep++) {
        if (run_child(cargv, out, sizeof out, &maxrss, &wall) != 0) {
            printf("%-8s gpusched via a pipe: failed\n", label);
            return;
        }
        double d;
        sscanf(out, "%lf %zu %ld %ld %zu", &d, &pods, &hwm, &anon, &arena);
        if (d < dt)
            dt = d;
    }
    printf("%-8s %8.1f MB  cat |     %7.3f s %8.0f MB/s %9.0f pods/s  peak RSS %7.1f MB  RssAnon at end %6.1f MB  snapshot arena %6.1f MB\n",
           label, mb, dt, mb / dt, (double)pods / dt, (double)hwm / 1024, (double)anon / 1024,
           (double)arena / 1e6);
    if (getenv("BENCH_READ_NO_PYTHON"))
        return;
    if (access("/usr/bin/python3", X_OK) != 0) {
        printf("%-8s %8.1f MB  python3   skipped: no /usr/bin/python3\n", label, mb);
        return;
    }
    char *pargv[] = {"/usr/bin/python3", "-c", "import json,sys; json.load(open(sys.argv[1]))", (char *)path, NULL};
    if (run_child(pargv, out, sizeof out, &maxrss, &wall) != 0) {
        printf("%-8s %8.1f MB  python3   failed\n", label, mb);
        return;
    }
    printf("%-8s %8.1f MB  python3   %7.3f s %8.0f MB/s %9s         peak RSS %7.1f MB (process wall time, interpreter start included)\n",
           label, mb, wall, mb / wall, "", (double)maxrss / 1024);
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--read"))
        return child_read(argv[2]);
    if (argc == 3 && !strcmp(argv[1], "--review"))
        return child_review(argv[2]);
    size_t mb = argc > 1 ? (size_t)atol(argv[1]) : 200;
    const char *dir = argc > 2 ? argv[2] : "/tmp";
    if (!mb)
        mb = 200;
    char self[4096];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sl <= 0)
        return 1;
    self[sl] = '\0';
    char one[4200], pre[4200];
    snprintf(one, sizeof one, "%s/gs-bench-pods-oneline.%d.json", dir, (int)getpid());
    snprintf(pre, sizeof pre, "%s/gs-bench-pods-pretty.%d.json", dir, (int)getpid());
    double t0 = now();
    unsigned pods = write_dumps(one, pre, mb);
    printf("bench_read: %u pods, generated in %.1f s\n", pods, now() - t0);
    bench_file(self, "pretty", pre);
    bench_file(self, "one-line", one);
    if (!getenv("BENCH_READ_KEEP")) {
        unlink(one);
        unlink(pre);
    }
    printf("\nmemory per review (validate, one fresh process each; growth of peak RSS):\n");
    const char *shapes[] = {"env", "deep", "labels"};
    for (size_t i = 0; i < 3; i++) {
        char out[1024];
        long maxrss;
        double wall;
        char *argv2[] = {self, "--review", (char *)shapes[i], NULL};
        if (run_child(argv2, out, sizeof out, &maxrss, &wall) != 0) {
            printf("  %-7s failed\n", shapes[i]);
            continue;
        }
        size_t len;
        long grow;
        double dt;
        char verdict[32];
        int off = 0;
        sscanf(out, "%zu %ld %lf %31s %n", &len, &grow, &dt, verdict, &off);
        char *nl = strchr(out + off, '\n');
        if (nl)
            *nl = '\0';
        printf("  %-7s body %7zu B  peak RSS +%6.1f MB  %6.1f ms  %s  %.90s\n", shapes[i], len,
               (double)grow / 1024, dt * 1e3, verdict, out + off);
    }
    return 0;
}
