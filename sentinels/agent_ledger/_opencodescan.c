/* The OpenCode reader's reader of a common `message` row in C (opencode._common is the
 * same in Python, after orjson.loads and the dumps round-trip check).
 *
 * common(data) reads one row's JSON in one pass and returns only what the rules read:
 * (input, output, reasoning, read, write, total, modelID, providerID, created, cost, cwd).
 * It takes only a row it is sure of: strict compact JSON (no whitespace outside strings),
 * strings without a \u escape (valid UTF-8; the keys and the strings it returns ASCII),
 * no exponent, integers of at most 20 digits, no key twice at the top level (at most 64
 * keys) nor among the keys read inside tokens, cache, time and path, depth at most 64,
 * and every read value of the type _common wants. Any other row
 * returns None and goes the Python way, which decides it as before: a row this refuses
 * costs time, never a different count. tests/agents/test_opencode_paths.py holds the
 * reader with it equal to the rules alone.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define MAX_DEPTH 64
#define MAX_KEYS 64
#define MAX_CREATED 253402300799000ULL /* 9999-12-31T23:59:59Z */

typedef struct {
    const char *p, *end;
} Scan;

/* The length of the valid UTF-8 sequence at p (a lead byte >= 0x80), or 0: no overlong
 * form, no surrogate, nothing past U+10FFFF (what Python's strict decoder takes). */
static int utf8(const char *at, const char *end) {
    const unsigned char *p = (const unsigned char *)at;
    Py_ssize_t left = (const unsigned char *)end - p;
    if (p[0] >= 0xc2 && p[0] <= 0xdf) return left >= 2 && (p[1] & 0xc0) == 0x80 ? 2 : 0;
    if (p[0] >= 0xe0 && p[0] <= 0xef) {
        if (left < 3 || (p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80) return 0;
        if (p[0] == 0xe0 && p[1] < 0xa0) return 0; /* overlong */
        if (p[0] == 0xed && p[1] >= 0xa0) return 0; /* a surrogate */
        return 3;
    }
    if (p[0] >= 0xf0 && p[0] <= 0xf4) {
        if (left < 4 || (p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80
            || (p[3] & 0xc0) != 0x80)
            return 0;
        if (p[0] == 0xf0 && p[1] < 0x90) return 0; /* overlong */
        if (p[0] == 0xf4 && p[1] >= 0x90) return 0; /* past U+10FFFF */
        return 4;
    }
    return 0;
}

/* A string at s->p ('"'). Keys and read strings (plain) take no escape; other strings take
 * the escapes that cannot make a surrogate and any valid UTF-8 (read strings stay ASCII).
 * The raw content is [*start, *start + *len). */
static int string(Scan *s, int plain, const char **start, Py_ssize_t *len) {
    const char *p = s->p + 1;
    *start = p;
    while (p < s->end) {
#if defined(__SSE2__)
        /* 16 bytes at a time past the common bytes: printable ASCII but '"' and '\\' */
        while (s->end - p >= 16) {
            __m128i v = _mm_loadu_si128((const __m128i *)p);
            __m128i odd = _mm_or_si128(
                _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                             _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))),
                _mm_or_si128(_mm_cmplt_epi8(v, _mm_set1_epi8(0x20)), /* and >= 0x80 */
                             _mm_cmpeq_epi8(v, _mm_set1_epi8(0x7f))));
            int mask = _mm_movemask_epi8(odd);
            if (mask != 0) {
                p += __builtin_ctz((unsigned)mask);
                break;
            }
            p += 16;
        }
        if (p >= s->end) break;
#endif
        unsigned char c = (unsigned char)*p;
        if (c == '"') {
            *len = p - *start;
            s->p = p + 1;
            return 1;
        }
        if (c >= 0x80 && !plain) {
            int n = utf8(p, s->end);
            if (n == 0) return 0;
            p += n;
            continue;
        }
        if (c < 0x20 || c >= 0x7f) return 0;
        if (c == '\\') {
            if (plain || p + 1 >= s->end) return 0;
            switch (p[1]) {
            case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
                p += 2;
                continue;
            default:
                return 0;
            }
        }
        p++;
    }
    return 0;
}

/* A number at s->p: JSON's grammar without an exponent, at most 20 integer and 40
 * fraction digits (so never past float64's range). */
static int number(Scan *s, int *negative, int *fraction, const char **start, Py_ssize_t *len) {
    const char *p = s->p, *digits;
    *start = p;
    *negative = *fraction = 0;
    if (p < s->end && *p == '-') {
        *negative = 1;
        p++;
    }
    digits = p;
    if (p >= s->end || *p < '0' || *p > '9') return 0;
    if (*p == '0') {
        p++;
    } else {
        while (p < s->end && *p >= '0' && *p <= '9') p++;
    }
    if (p - digits > 20) return 0;
    if (p < s->end && *p == '.') {
        const char *frac = ++p;
        while (p < s->end && *p >= '0' && *p <= '9') p++;
        if (p == frac || p - frac > 40) return 0;
        *fraction = 1;
    }
    if (p < s->end && (*p == 'e' || *p == 'E')) return 0;
    *len = p - *start;
    s->p = p;
    return 1;
}

/* A non-negative integer below 2**64 at s->p. */
static int count(Scan *s, uint64_t *out) {
    const char *start;
    Py_ssize_t len;
    int negative, fraction;
    uint64_t value = 0;
    if (!number(s, &negative, &fraction, &start, &len) || negative || fraction) return 0;
    for (Py_ssize_t i = 0; i < len; i++) {
        unsigned digit = (unsigned)(start[i] - '0');
        if (value > (UINT64_MAX - digit) / 10) return 0;
        value = value * 10 + digit;
    }
    *out = value;
    return 1;
}

static int skip(Scan *s, int depth);

static int literal(Scan *s, const char *text, size_t len) {
    if ((size_t)(s->end - s->p) < len || memcmp(s->p, text, len) != 0) return 0;
    s->p += len;
    return 1;
}

/* Any value; an object's or array's members are not read. */
static int skip(Scan *s, int depth) {
    const char *start;
    Py_ssize_t len;
    int negative, fraction;
    if (s->p >= s->end) return 0;
    switch (*s->p) {
    case '"':
        return string(s, 0, &start, &len);
    case 't':
        return literal(s, "true", 4);
    case 'f':
        return literal(s, "false", 5);
    case 'n':
        return literal(s, "null", 4);
    case '{':
    case '[': {
        char close = *s->p == '{' ? '}' : ']';
        if (depth >= MAX_DEPTH) return 0;
        s->p++;
        if (s->p < s->end && *s->p == close) {
            s->p++;
            return 1;
        }
        for (;;) {
            if (close == '}') {
                if (s->p >= s->end || *s->p != '"' || !string(s, 0, &start, &len)) return 0;
                if (s->p >= s->end || *s->p != ':') return 0;
                s->p++;
            }
            if (!skip(s, depth + 1)) return 0;
            if (s->p >= s->end) return 0;
            if (*s->p == close) {
                s->p++;
                return 1;
            }
            if (*s->p != ',') return 0;
            s->p++;
        }
    }
    default:
        return number(s, &negative, &fraction, &start, &len);
    }
}

/* The members of an object at s->p: each key goes to `member`, which reads its value (1),
 * or 0 to refuse the row; -1 from it means "not mine": the value is skipped. */
typedef int (*Member)(Scan *s, const char *key, Py_ssize_t len, void *into);

static int members(Scan *s, int depth, Member member, void *into) {
    const char *key;
    Py_ssize_t len;
    if (depth >= MAX_DEPTH || s->p >= s->end || *s->p != '{') return 0;
    s->p++;
    if (s->p < s->end && *s->p == '}') {
        s->p++;
        return 1;
    }
    for (;;) {
        int got;
        if (s->p >= s->end || *s->p != '"' || !string(s, 1, &key, &len)) return 0;
        if (s->p >= s->end || *s->p != ':') return 0;
        s->p++;
        got = member(s, key, len, into);
        if (got == 0) return 0;
        if (got < 0 && !skip(s, depth + 1)) return 0;
        if (s->p >= s->end) return 0;
        if (*s->p == '}') {
            s->p++;
            return 1;
        }
        if (*s->p != ',') return 0;
        s->p++;
    }
}

#define IS(name) (len == sizeof(name) - 1 && memcmp(key, name, sizeof(name) - 1) == 0)

/* One count, once. */
static int once(Scan *s, uint64_t *value, unsigned *seen, unsigned bit) {
    if (*seen & bit) return 0;
    *seen |= bit;
    return count(s, value);
}

typedef struct {
    uint64_t input, output, reasoning, total, read, write, created;
    unsigned seen;
    const char *model, *provider, *cwd, *cost;
    Py_ssize_t model_len, provider_len, cwd_len, cost_len;
    int cost_fraction;
    int keys; /* the top level's, seen so far: none twice (the rules fail a declared one) */
    const char *key_at[MAX_KEYS];
    Py_ssize_t key_len[MAX_KEYS];
} Row;

enum {
    F_INPUT = 1, F_OUTPUT = 2, F_REASONING = 4, F_TOTAL = 8, F_CACHE = 16, F_READ = 32,
    F_WRITE = 64, F_TOKENS = 128, F_MODEL = 256, F_PROVIDER = 512, F_TIME = 1024,
    F_CREATED = 2048, F_COST = 4096, F_PATH = 8192, F_CWD = 16384,
};

static int cache_member(Scan *s, const char *key, Py_ssize_t len, void *into) {
    Row *row = into;
    if (IS("read")) return once(s, &row->read, &row->seen, F_READ);
    if (IS("write")) return once(s, &row->write, &row->seen, F_WRITE);
    return -1;
}

static int tokens_member(Scan *s, const char *key, Py_ssize_t len, void *into) {
    Row *row = into;
    if (IS("input")) return once(s, &row->input, &row->seen, F_INPUT);
    if (IS("output")) return once(s, &row->output, &row->seen, F_OUTPUT);
    if (IS("reasoning")) return once(s, &row->reasoning, &row->seen, F_REASONING);
    if (IS("total")) return once(s, &row->total, &row->seen, F_TOTAL);
    if (IS("cache")) {
        if (row->seen & F_CACHE) return 0;
        row->seen |= F_CACHE;
        return members(s, 3, cache_member, row);
    }
    return -1;
}

static int time_member(Scan *s, const char *key, Py_ssize_t len, void *into) {
    Row *row = into;
    if (IS("created")) return once(s, &row->created, &row->seen, F_CREATED);
    return -1;
}

static int path_member(Scan *s, const char *key, Py_ssize_t len, void *into) {
    Row *row = into;
    if (IS("cwd")) {
        if ((row->seen & F_CWD) || s->p >= s->end || *s->p != '"') return 0;
        row->seen |= F_CWD;
        return string(s, 1, &row->cwd, &row->cwd_len);
    }
    return -1;
}

static int top_member(Scan *s, const char *key, Py_ssize_t len, void *into) {
    Row *row = into;
    for (int i = 0; i < row->keys; i++)
        if (row->key_len[i] == len && memcmp(row->key_at[i], key, (size_t)len) == 0) return 0;
    if (row->keys == MAX_KEYS) return 0;
    row->key_at[row->keys] = key;
    row->key_len[row->keys++] = len;
    if (IS("tokens")) {
        if (row->seen & F_TOKENS) return 0;
        row->seen |= F_TOKENS;
        return members(s, 1, tokens_member, row);
    }
    if (IS("time")) {
        if (row->seen & F_TIME) return 0;
        row->seen |= F_TIME;
        return members(s, 1, time_member, row);
    }
    if (IS("path")) {
        if (row->seen & F_PATH) return 0;
        row->seen |= F_PATH;
        return members(s, 1, path_member, row);
    }
    if (IS("modelID") || IS("providerID")) {
        unsigned bit = IS("modelID") ? F_MODEL : F_PROVIDER;
        if ((row->seen & bit) || s->p >= s->end || *s->p != '"') return 0;
        row->seen |= bit;
        if (bit == F_MODEL) return string(s, 1, &row->model, &row->model_len);
        return string(s, 1, &row->provider, &row->provider_len);
    }
    if (IS("cost")) {
        int negative;
        if (row->seen & F_COST) return 0;
        row->seen |= F_COST;
        return number(s, &negative, &row->cost_fraction, &row->cost, &row->cost_len);
    }
    return -1;
}

static PyObject *text(const char *start, Py_ssize_t len) {
    return PyUnicode_DecodeASCII(start, len, NULL);
}

static PyObject *cost_of(const Row *row) {
    char buffer[80];
    if (!(row->seen & F_COST)) Py_RETURN_NONE;
    if ((size_t)row->cost_len >= sizeof buffer) { /* not reached: number() allows 62 */
        PyErr_SetString(PyExc_ValueError, "cost too long");
        return NULL;
    }
    memcpy(buffer, row->cost, (size_t)row->cost_len);
    buffer[row->cost_len] = '\0';
    if (!row->cost_fraction) return PyLong_FromString(buffer, NULL, 10);
    double value = PyOS_string_to_double(buffer, NULL, NULL);
    if (value == -1.0 && PyErr_Occurred()) return NULL;
    return PyFloat_FromDouble(value);
}

static PyObject *common(PyObject *self, PyObject *arg) {
    const char *data;
    Py_ssize_t size;
    Row row;
    (void)self;
    if (!PyBytes_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "common() takes bytes");
        return NULL;
    }
    data = PyBytes_AS_STRING(arg);
    size = PyBytes_GET_SIZE(arg);
    memset(&row, 0, offsetof(Row, key_at));
    Scan s = {data, data + size};
    if (!members(&s, 0, top_member, &row) || s.p != s.end) Py_RETURN_NONE;
    const unsigned needed = F_TOKENS | F_INPUT | F_OUTPUT | F_REASONING | F_CACHE | F_READ
                            | F_WRITE | F_MODEL | F_PROVIDER | F_TIME | F_CREATED;
    if ((row.seen & needed) != needed) Py_RETURN_NONE;
    if (row.created == 0 || row.created > MAX_CREATED) Py_RETURN_NONE;
    if ((row.seen & F_PATH) && !(row.seen & F_CWD)) Py_RETURN_NONE;
    if ((row.seen & F_COST) && row.cost_len >= 80) Py_RETURN_NONE; /* cost_of's buffer */
    PyObject *cost = cost_of(&row);
    if (cost == NULL) return NULL;
    PyObject *cwd;
    if (row.seen & F_CWD) {
        cwd = text(row.cwd, row.cwd_len);
    } else {
        cwd = Py_None;
        Py_INCREF(cwd);
    }
    PyObject *model = text(row.model, row.model_len);
    PyObject *provider = text(row.provider, row.provider_len);
    if (cwd == NULL || model == NULL || provider == NULL) {
        Py_XDECREF(cwd);
        Py_XDECREF(model);
        Py_XDECREF(provider);
        Py_DECREF(cost);
        return NULL;
    }
    return Py_BuildValue(
        "(KKKKKKNNKNN)", (unsigned long long)row.input, (unsigned long long)row.output,
        (unsigned long long)row.reasoning, (unsigned long long)row.read,
        (unsigned long long)row.write, (unsigned long long)row.total, model, provider,
        (unsigned long long)row.created, cost, cwd);
}

PyDoc_STRVAR(common_doc,
             "common(data: bytes) -> (input, output, reasoning, read, write, total, model, "
             "provider, created, cost, cwd) | None\n\n"
             "A common OpenCode message row's read fields, or None for the rules to decide.");

static PyMethodDef methods[] = {
    {"common", common, METH_O, common_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_opencodescan",
    "The OpenCode reader's reader of a common message row (opencode._common in C).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__opencodescan(void) { return PyModule_Create(&module); }
