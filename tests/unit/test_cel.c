/* test_cel.c - the CEL subset of DRA device selectors: NVIDIA DRA driver DeviceClass
 * selectors, quantities, semver, strings, `in`, ternary, errors with positions, CEL's
 * error absorption in && / ||, limits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "gpusched/cel.h"

#define NV "gpu.nvidia.com"

static gs_cel_attr gpu_attrs[] = {
    {NV, "type", GS_CEL_ATTR_STRING, 0, false, "gpu"},
    {NV, "productName", GS_CEL_ATTR_STRING, 0, false, "NVIDIA A100-SXM4-80GB"},
    {NV, "brand", GS_CEL_ATTR_STRING, 0, false, "Nvidia"},
    {NV, "architecture", GS_CEL_ATTR_STRING, 0, false, "Ampere"},
    {NV, "uuid", GS_CEL_ATTR_STRING, 0, false, "GPU-4a9c0f3e-1b2d-4e5f-8a6b-7c8d9e0f1a2b"},
    {NV, "cudaComputeCapability", GS_CEL_ATTR_VERSION, 0, false, "8.0.0"},
    {NV, "driverVersion", GS_CEL_ATTR_VERSION, 0, false, "550.54.15"},
    {NV, "cudaDriverVersion", GS_CEL_ATTR_VERSION, 0, false, "12.4.0"},
    {NV, "index", GS_CEL_ATTR_INT, 3, false, NULL},
    {NV, "migCapable", GS_CEL_ATTR_BOOL, 0, true, NULL},
    {"resource.kubernetes.io", "pcieRoot", GS_CEL_ATTR_STRING, 0, false, "pci0000:00"},
};

static gs_cel_device gpu_dev(gs_cel_capacity *caps)
{
    caps[0].domain = NV;
    caps[0].name = "memory";
    gs_error e;
    assert_int_equal(gs_quantity_parse("80Gi", 4, &caps[0].value, &e), 0);
    gs_cel_device d = {.driver = NV, .attrs = gpu_attrs,
                       .n_attrs = sizeof gpu_attrs / sizeof gpu_attrs[0], .caps = caps,
                       .n_caps = 1};
    return d;
}

/* evaluate as a selector; rc 0/-1 */
static int sel(const char *expr, bool *match, gs_error *err)
{
    gs_cel_capacity caps[1];
    gs_cel_device d = gpu_dev(caps);
    gs_cel_program *p = NULL;
    gs_error_clear(err);
    if (gs_cel_compile(expr, strlen(expr), &p, err) != 0)
        return -1;
    int rc = gs_cel_select(p, &d, match, err);
    gs_cel_free(p);
    return rc;
}

static void expect_match(const char *expr, bool want)
{
    bool m = !want;
    gs_error err;
    if (sel(expr, &m, &err) != 0)
        fail_msg("'%s' failed at %d:%d: %s", expr, err.line, err.col, err.msg);
    if (m != want)
        fail_msg("'%s' gave %d, want %d", expr, m, want);
}

static void expect_error(const char *expr, int col, const char *msg_part, gs_code code)
{
    bool m;
    gs_error err;
    if (sel(expr, &m, &err) == 0)
        fail_msg("'%s' succeeded (%d), want error '%s'", expr, m, msg_part);
    if (!strstr(err.msg, msg_part) || err.col != col || err.code != code)
        fail_msg("'%s': got %d:%d [%s] '%s', want col %d [%s] '%s'", expr, err.line, err.col,
                 gs_code_name(err.code), err.msg, col, gs_code_name(code), msg_part);
}

static void test_nvidia_deviceclass(void **state)
{
    (void)state;
    expect_match("device.driver == \"gpu.nvidia.com\" && device.attributes[\"gpu.nvidia.com\"].type == \"gpu\"", true);
    expect_match("device.attributes['gpu.nvidia.com'].type == 'mig'", false);
    expect_match("device.attributes[\"gpu.nvidia.com\"][\"productName\"].matches(\"A100.*80GB\")", true);
    expect_match("device.attributes[\"gpu.nvidia.com\"].productName.matches('^NVIDIA (H100|H200)')", false);
    expect_match("device.attributes[\"gpu.nvidia.com\"].productName.lowerAscii().contains(\"a100\")", true);
    expect_match("device.attributes[\"gpu.nvidia.com\"].uuid.matches('^GPU-[0-9a-f\\\\-]+$')", true);
    expect_match("device.attributes['gpu.nvidia.com'].uuid.matches('^GPU-\\\\w{8}-')", true);
    expect_match("device.attributes['resource.kubernetes.io'].pcieRoot.startsWith('pci')", true);
    expect_match("device.attributes['gpu.nvidia.com'].index == 3 && device.attributes['gpu.nvidia.com'].migCapable", true);
    expect_match("device.allowMultipleAllocations", false);
}

static void test_quantity(void **state)
{
    (void)state;
    expect_match("device.capacity[\"gpu.nvidia.com\"].memory.compareTo(quantity(\"40Gi\")) >= 0", true);
    expect_match("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('80Gi')) == 0", true);
    expect_match("device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity('85899345921'))", false);
    expect_match("device.capacity['gpu.nvidia.com'].memory.isLessThan(quantity('85899345921'))", true);
    expect_match("device.capacity['gpu.nvidia.com'].memory == quantity('85899345920')", true);
    expect_match("quantity('1500m').isInteger() == false && quantity('2k').asInteger() == 2000", true);
    expect_match("quantity('1Gi').add(quantity('1Gi')) == quantity('2Gi') && quantity('1').sub(2).sign() == -1", true);
    expect_match("isQuantity('12Mi') && !isQuantity('12MiB')", true);
    /* quantities have no < overload upstream */
    expect_error("quantity('1') < quantity('2')", 15, "no such overload", GS_ERR_INVALID);
    expect_error("quantity('12MiB') == quantity('1')", 10, "invalid quantity", GS_ERR_INVALID);
}

static void test_semver(void **state)
{
    (void)state;
    expect_match("device.attributes['gpu.nvidia.com'].cudaComputeCapability.isGreaterThan(semver('7.5.0'))", true);
    expect_match("device.attributes['gpu.nvidia.com'].cudaComputeCapability.compareTo(semver('8.0.0')) >= 0", true);
    expect_match("device.attributes['gpu.nvidia.com'].cudaComputeCapability.isLessThan(semver('8.0.0'))", false);
    expect_match("device.attributes['gpu.nvidia.com'].driverVersion.major() >= 550", true);
    expect_match("device.attributes['gpu.nvidia.com'].driverVersion.minor() == 54 && device.attributes['gpu.nvidia.com'].driverVersion.patch() == 15", true);
    expect_match("device.attributes['gpu.nvidia.com'].cudaComputeCapability == semver('8.0.0+build.7')", true);
    /* semver 2.0 precedence: 1.0.0-alpha < 1.0.0-alpha.1 < -alpha.beta < -beta < -beta.2 <
     * -beta.11 < -rc.1 < 1.0.0 */
    const char *order[] = {"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta",
                           "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1",
                           "1.10.0", "2.0.0"};
    for (size_t i = 0; i + 1 < sizeof order / sizeof order[0]; i++) {
        assert_int_equal(gs_cel_semver_cmp(order[i], order[i + 1]), -1);
        assert_int_equal(gs_cel_semver_cmp(order[i + 1], order[i]), 1);
        assert_int_equal(gs_cel_semver_cmp(order[i], order[i]), 0);
    }
    assert_int_equal(gs_cel_semver_cmp("1.2.3+a", "1.2.3+b"), 0);
    assert_false(gs_cel_semver_valid("1.2", 3));
    assert_false(gs_cel_semver_valid("01.2.3", 6));
    assert_false(gs_cel_semver_valid("1.2.3-01", 8));
    assert_false(gs_cel_semver_valid("1.2.3-", 6));
    assert_true(gs_cel_semver_valid("1.2.3-0.a-b+001", 15));
    expect_match("isSemver('1.2.3') && !isSemver('v1.2.3')", true);
    expect_error("semver('1.2') == semver('1.2.0')", 8, "invalid semver", GS_ERR_INVALID);
    /* semver has no < overload */
    expect_error("semver('1.2.3') < semver('1.2.4')", 17, "no such overload", GS_ERR_INVALID);
}

static void test_in_ternary_strings(void **state)
{
    (void)state;
    expect_match("device.attributes['gpu.nvidia.com'].architecture in ['Hopper', 'Ampere']", true);
    expect_match("device.attributes['gpu.nvidia.com'].architecture in ['Hopper', 'Blackwell']", false);
    expect_match("'gpu.nvidia.com' in device.attributes && !('example.com' in device.attributes)", true);
    expect_match("'memory' in device.capacity['gpu.nvidia.com']", true);
    expect_match("3 in [1, 'x', 3]", true);
    expect_match("device.attributes['gpu.nvidia.com'].type == 'gpu' ? device.attributes['gpu.nvidia.com'].index > 2 : false", true);
    expect_match("(device.attributes['gpu.nvidia.com'].index > 5 ? 'big' : 'small') == 'small'", true);
    expect_match("size('héllo') == 5 && 'abc'.size() == 3 && size([1,2]) == 2", true);
    expect_match("'Ampere'.endsWith('ere') && 'AMPERE'.lowerAscii() == 'ampere' && 'x'.upperAscii() == 'X'", true);
    expect_match("'a' + 'b' == 'ab' && 'a' < 'b' && 2 * 3 + 1 == 7 && 7 % 3 == 1 && -(-2) == 2", true);
    expect_match("has(device.attributes['gpu.nvidia.com'].uuid) && !has(device.attributes['gpu.nvidia.com'].nope)", true);
    expect_match("!has(device.attributes['example.com'].x) && size(device.attributes['example.com']) == 0", true);
    expect_match("r'\\d' == '\\\\d' && '\\x41\\u00e9' == 'Aé' && '''a\nb''' == 'a\\nb'", true);
    expect_match("size(device.attributes) == 2 && size(device.capacity['gpu.nvidia.com']) == 1", true);
}

static void test_short_circuit(void **state)
{
    (void)state;
    /* CEL: false && error = false, error && false = false, true || error = true */
    expect_match("false && device.attributes['gpu.nvidia.com'].missing == 1", false);
    expect_match("device.attributes['gpu.nvidia.com'].missing == 1 && false", false);
    expect_match("true || 1 / 0 == 1", true);
    expect_match("1 / 0 == 1 || device.driver == 'gpu.nvidia.com'", true);
    expect_error("device.attributes['gpu.nvidia.com'].missing == 1 || false", 37, "no such key: missing", GS_ERR_INVALID);
    expect_error("true && 1 / 0 == 1", 11, "division by zero", GS_ERR_INVALID);
    expect_match("true ? true : 1 / 0 == 0", true);
}

static void test_errors(void **state)
{
    (void)state;
    /* type mismatch (ordering) at runtime and between literals at compile time */
    expect_error("device.attributes['gpu.nvidia.com'].index < 'x'", 43, "no such overload", GS_ERR_INVALID);
    expect_error("1 == 'x'", 3, "no matching overload", GS_ERR_INVALID);
    /* dyn equality across types is false, as in cel-go */
    expect_match("device.attributes['gpu.nvidia.com'].index == 'x'", false);
    expect_error("device.attributes['gpu.nvidia.com'].nope == 'x'", 37, "no such key: nope", GS_ERR_INVALID);
    expect_error("device.capacity['gpu.nvidia.com'].cores.isInteger()", 35, "no such key: cores", GS_ERR_INVALID);
    expect_error("device.attributes['gpu.nvidia.com'].all(x, x == 1)", 37,
                 "unsupported: list comprehension macro all()", GS_ERR_INVALID);
    expect_error("[1,2].exists(x, x > 1)", 7, "unsupported: list comprehension macro exists()", GS_ERR_INVALID);
    expect_error("device.driver == \"gpu.nvidia.com", 18, "unterminated string", GS_ERR_PARSE);
    expect_error("device.driver == 'a\nb'", 18, "unterminated string", GS_ERR_PARSE);
    expect_error("device.drivr == 'x'", 8, "undefined field 'drivr'", GS_ERR_INVALID);
    expect_error("foo == 1", 1, "undeclared reference to 'foo'", GS_ERR_INVALID);
    expect_error("device.driver.split('.')", 15, "unsupported function: split()", GS_ERR_INVALID);
    expect_error("1.5 > 1", 1, "unsupported: double literal", GS_ERR_INVALID);
    expect_error("{'a': 1}", 1, "unsupported: map literal", GS_ERR_INVALID);
    expect_error("device.driver ==", 17, "unexpected end", GS_ERR_PARSE);
    expect_error("device.driver = 'x'", 15, "token recognition error", GS_ERR_PARSE);
    expect_error("9223372036854775807 + 1 > 0", 21, "integer overflow", GS_ERR_INVALID);
    expect_match("-9223372036854775808 < 0", true);
    expect_error("device.driver", 1, "selector must evaluate to bool", GS_ERR_INVALID);
    expect_error("'x'.matches('(?i)x')", 13, "invalid regex", GS_ERR_INVALID);
    expect_error("[1][3] == 1", 4, "index out of bounds: 3", GS_ERR_INVALID);
    expect_error("'aaa'.matches('a**')", 15, "bad repetition operator", GS_ERR_INVALID);
    expect_error("'aaa'.matches('(a{100}){100}')", 15, "repetition too large", GS_ERR_INVALID);
    expect_match("'a{b'.matches('a{b') && 'a-b.c'.matches(r'^[\\w\\-]+\\.c$') && 'x9'.matches(r'\\d')", true);
    expect_error("'x'.frob()", 5, "unsupported function: frob()", GS_ERR_INVALID);
    expect_error("device.driver.quantity('1')", 15, "quantity() is not a method", GS_ERR_INVALID);
    expect_error("startsWith('a')", 1, "startsWith() must be called as a method", GS_ERR_INVALID);
    /* line and column on a second line */
    bool m;
    gs_error err;
    assert_int_equal(sel("device.driver == 'gpu.nvidia.com' &&\n  device.attributes['x'].y", &m, &err), -1);
    assert_int_equal(err.line, 2);
    assert_int_equal(err.col, 26);
    assert_string_equal(err.msg, "no such key: y");
}

static void test_limits(void **state)
{
    (void)state;
    gs_cel_program *p = NULL;
    gs_error err;
    /* depth */
    char deep[600];
    size_t n = 0;
    for (int k = 0; k < 200; k++) deep[n++] = '(';
    deep[n++] = '1';
    for (int k = 0; k < 200; k++) deep[n++] = ')';
    assert_int_equal(gs_cel_compile(deep, n, &p, &err), -1);
    assert_int_equal(err.code, GS_ERR_LIMIT);
    assert_non_null(strstr(err.msg, "nested too deeply"));
    n = 0;
    for (int k = 0; k < 300; k++) deep[n++] = '!';
    memcpy(deep + n, "true", 4);
    assert_int_equal(gs_cel_compile(deep, n + 4, &p, &err), -1);
    assert_int_equal(err.code, GS_ERR_LIMIT);
    /* length */
    static char big[GS_CEL_MAX_LEN + 2];
    memset(big, ' ', sizeof big);
    big[0] = '1';
    assert_int_equal(gs_cel_compile(big, sizeof big, &p, &err), -1);
    assert_int_equal(err.code, GS_ERR_LIMIT);
    /* long || chains are flat, not deep: 500 alternatives compile */
    static char chain[GS_CEL_MAX_LEN];
    n = 0;
    for (int k = 0; k < 500; k++) {
        n += (size_t)snprintf(chain + n, sizeof chain - n, "%s%d == 3", k ? " || " : "", k);
    }
    assert_int_equal(gs_cel_compile(chain, n, &p, &err), 0);
    gs_cel_capacity caps[1];
    gs_cel_device d = gpu_dev(caps);
    bool m = false;
    assert_int_equal(gs_cel_select(p, &d, &m, &err), 0);
    assert_true(m);
    /* cost budget */
    gs_cel_set_cost_limit(p, 5);
    assert_int_equal(gs_cel_select(p, &d, &m, &err), -1);
    assert_int_equal(err.code, GS_ERR_LIMIT);
    assert_string_equal(err.msg, "cost limit exceeded");
    gs_cel_free(p);
    /* the whole result */
    gs_cel_result r;
    assert_int_equal(gs_cel_compile("device.attributes['gpu.nvidia.com'].cudaDriverVersion", 53, &p, &err), 0);
    assert_int_equal(gs_cel_eval(p, &d, &r, &err), 0);
    assert_int_equal(r.type, GS_CEL_SEMVER);
    assert_string_equal(r.str, "12.4.0");
    assert_true(r.cost > 0);
    gs_cel_free(p);
    assert_int_equal(gs_cel_compile("", 0, &p, &err), -1);
    assert_int_equal(err.code, GS_ERR_PARSE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nvidia_deviceclass), cmocka_unit_test(test_quantity),
        cmocka_unit_test(test_semver),             cmocka_unit_test(test_in_ternary_strings),
        cmocka_unit_test(test_short_circuit),      cmocka_unit_test(test_errors),
        cmocka_unit_test(test_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
