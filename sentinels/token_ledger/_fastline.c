/* The ledger's per-line fast path: one pass over an ordinary transcript line.
 *
 * scan(line) validates the whole line as strict JSON and reads the fields the ledger needs
 * (records.py's rules) in the same pass, without building Python objects for the rest. It
 * answers only for the plain case, a line Claude Code writes for every response: whenever
 * anything is unusual (a repeated key, an escaped key, a null where the rules care, a
 * progress wrapper, an advisor, an API error, an odd timestamp, a number it does not read
 * exactly, deep nesting) it returns None and the caller takes records.parse, the reference
 * rules in Python, which then decides. So this file never rejects and never accepts a line
 * the Python rules would not: tests/test_fastline.py checks that on every corpus.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../_blake2b.h" /* the ledger's 64-bit keys */
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define MAX_DEPTH 64        /* deeper lines go the slow way (the rules refuse 128) */
#define MAX_KEYS 1024       /* keys remembered at once, for the repeated-key check */
#define MAX_TOKENS (1ULL << 53)

enum ctx { CTX_OTHER, CTX_TOP, CTX_MESSAGE, CTX_USAGE, CTX_CACHE };

typedef struct { const char *p; Py_ssize_t n; } span;

typedef struct {
    const unsigned char *s, *end;
    span keys[MAX_KEYS];
    int nkeys;
    int depth;
    /* what was found */
    int has_message, message_is_usable, has_usage;
    span msg_id, req_id, model, cwd, timestamp, version, session;
    int has_msg_id, has_req_id, has_model, has_cwd, has_timestamp, has_version, has_session;
    int sidechain, has_sidechain;
    double cost; int has_cost;
    uint64_t input, output, cache_read, cache_creation, cache_5m, cache_1h;
    int has_input, has_output, has_cache_read, has_cache_creation, has_breakdown;
    int has_5m, has_1h;
    int speed; /* 0 none, 1 standard, 2 fast */
    int has_iterations;
} scanner;

/* Each scan function returns 0 on success, -1 to give up (the slow path decides). */

static inline void skip_ws(scanner *sc) {
    while (sc->s < sc->end && (*sc->s == ' ' || *sc->s == '\t' || *sc->s == '\n' || *sc->s == '\r'))
        sc->s++;
}

static int hexval(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* A string at sc->s (the opening quote): validated (UTF-8, escapes, no control bytes).
 * `raw` gets its contents, `escaped` whether it held a backslash. */
static int scan_string(scanner *sc, span *raw, int *escaped) {
    const unsigned char *s = sc->s + 1, *end = sc->end;
    *escaped = 0;
    const unsigned char *start = s;
    while (s < end) {
#if defined(__SSE2__)
        /* sixteen at a time, straight to the first byte that is not plain ASCII (a quote, a
         * backslash, a control or >= 0x80): a signed compare finds both of the last two */
        while (end - s >= 16) {
            __m128i v = _mm_loadu_si128((const __m128i *)s);
            __m128i special = _mm_or_si128(
                _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                             _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))),
                _mm_cmplt_epi8(v, _mm_set1_epi8(0x20)));
            unsigned mask = (unsigned)_mm_movemask_epi8(special);
            if (mask) {
                s += __builtin_ctz(mask);
                break;
            }
            s += 16;
        }
#endif
        /* eight plain ASCII bytes at a time: none a quote, a backslash, a control or >= 0x80 */
        while (end - s >= 8) {
            uint64_t v;
            memcpy(&v, s, 8);
            const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
            uint64_t quote = v ^ (ones * '"'), slash = v ^ (ones * '\\');
            /* the classic "has a byte below n" test, for 0x20 and for the xor-ed quotes */
            uint64_t special = (((v - ones * 0x20) & ~v) | ((quote - ones) & ~quote) |
                                ((slash - ones) & ~slash) | v) & high;
            if (special) break;
            s += 8;
        }
        if (s >= end) break;
        unsigned char c = *s;
        if (c == '"') {
            raw->p = (const char *)start;
            raw->n = s - start;
            sc->s = s + 1;
            return 0;
        }
        if (c < 0x20) return -1;
        if (c == '\\') {
            *escaped = 1;
            if (s + 1 >= end) return -1;
            unsigned char e = s[1];
            if (e == 'u') {
                if (s + 6 > end) return -1;
                int v = 0;
                for (int i = 2; i < 6; i++) {
                    int h = hexval(s[i]);
                    if (h < 0) return -1;
                    v = v * 16 + h;
                }
                if (v >= 0xD800 && v <= 0xDFFF) return -1; /* surrogates: slow path */
                s += 6;
            } else if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' ||
                       e == 'r' || e == 't') {
                s += 2;
            } else {
                return -1;
            }
            continue;
        }
        if (c < 0x80) { s++; continue; }
        /* strict UTF-8: no overlongs, no surrogates, at most U+10FFFF */
        if (c >= 0xC2 && c <= 0xDF) {
            if (s + 1 >= end || (s[1] & 0xC0) != 0x80) return -1;
            s += 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            if (s + 2 >= end || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80) return -1;
            if (c == 0xE0 && s[1] < 0xA0) return -1;
            if (c == 0xED && s[1] > 0x9F) return -1;
            s += 3;
        } else if (c >= 0xF0 && c <= 0xF4) {
            if (s + 3 >= end || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 ||
                (s[3] & 0xC0) != 0x80)
                return -1;
            if (c == 0xF0 && s[1] < 0x90) return -1;
            if (c == 0xF4 && s[1] > 0x8F) return -1;
            s += 4;
        } else {
            return -1;
        }
    }
    return -1;
}

/* A number: JSON's grammar, read only when short enough to be read exactly. `is_int` says
 * it had no fraction or exponent; `uval` holds a non-negative integer's value. */
static int scan_number(scanner *sc, int *is_int, uint64_t *uval, int *negative, span *text) {
    const unsigned char *s = sc->s, *end = sc->end, *start = s;
    *negative = 0;
    *is_int = 1;
    *uval = 0;
    if (s < end && *s == '-') { *negative = 1; s++; }
    if (s >= end) return -1;
    int digits = 0;
    if (*s == '0') {
        s++;
        digits = 1;
    } else if (*s >= '1' && *s <= '9') {
        while (s < end && *s >= '0' && *s <= '9') {
            *uval = *uval * 10 + (uint64_t)(*s - '0');
            s++;
            if (++digits > 18) return -1;
        }
    } else {
        return -1;
    }
    if (s < end && *s == '.') {
        *is_int = 0;
        s++;
        int frac = 0;
        while (s < end && *s >= '0' && *s <= '9') { s++; frac++; }
        if (frac == 0 || frac > 30) return -1;
    }
    if (s < end && (*s == 'e' || *s == 'E')) {
        *is_int = 0;
        s++;
        if (s < end && (*s == '+' || *s == '-')) s++;
        int exp = 0;
        while (s < end && *s >= '0' && *s <= '9') { s++; exp++; }
        if (exp == 0 || exp > 2) return -1;
    }
    text->p = (const char *)start;
    text->n = s - start;
    sc->s = s;
    return 0;
}

static int scan_value(scanner *sc, enum ctx ctx, span key);

static inline int key_is(span k, const char *name, Py_ssize_t n) {
    return k.n == n && memcmp(k.p, name, (size_t)n) == 0;
}
#define KEY(k, lit) key_is((k), lit, (Py_ssize_t)(sizeof(lit) - 1))

/* Keys whose null anywhere drops the line (records._NULL_KEYS): the slow path says so. */
static int null_matters(span k) {
    return KEY(k, "id") || KEY(k, "cwd") || KEY(k, "model") || KEY(k, "speed") ||
           KEY(k, "costUSD") || KEY(k, "version") || KEY(k, "sessionId") ||
           KEY(k, "requestId") || KEY(k, "isApiErrorMessage") ||
           KEY(k, "cache_creation_input_tokens") || KEY(k, "cache_read_input_tokens");
}

static enum ctx child_ctx(enum ctx ctx, span key) {
    if (ctx == CTX_TOP && KEY(key, "message")) return CTX_MESSAGE;
    if (ctx == CTX_MESSAGE && KEY(key, "usage")) return CTX_USAGE;
    if (ctx == CTX_USAGE && KEY(key, "cache_creation")) return CTX_CACHE;
    return CTX_OTHER;
}

static int scan_object(scanner *sc, enum ctx ctx) {
    if (++sc->depth > MAX_DEPTH) return -1;
    sc->s++; /* '{' */
    int first_key = sc->nkeys;
    skip_ws(sc);
    if (sc->s < sc->end && *sc->s == '}') {
        sc->s++;
        sc->depth--;
        return 0;
    }
    for (;;) {
        skip_ws(sc);
        if (sc->s >= sc->end || *sc->s != '"') return -1;
        span key;
        int escaped;
        if (scan_string(sc, &key, &escaped) < 0 || escaped) return -1;
        for (int i = first_key; i < sc->nkeys; i++) { /* a repeated key: slow path */
            if (sc->keys[i].n == key.n && memcmp(sc->keys[i].p, key.p, (size_t)key.n) == 0)
                return -1;
        }
        if (sc->nkeys >= MAX_KEYS) return -1;
        sc->keys[sc->nkeys++] = key;
        skip_ws(sc);
        if (sc->s >= sc->end || *sc->s != ':') return -1;
        sc->s++;
        skip_ws(sc);
        if (scan_value(sc, ctx, key) < 0) return -1;
        skip_ws(sc);
        if (sc->s >= sc->end) return -1;
        if (*sc->s == ',') { sc->s++; continue; }
        if (*sc->s == '}') { sc->s++; break; }
        return -1;
    }
    sc->nkeys = first_key; /* siblings may reuse the names */
    sc->depth--;
    return 0;
}

static int scan_array(scanner *sc) {
    if (++sc->depth > MAX_DEPTH) return -1;
    sc->s++; /* '[' */
    skip_ws(sc);
    if (sc->s < sc->end && *sc->s == ']') {
        sc->s++;
        sc->depth--;
        return 0;
    }
    span none = {NULL, 0};
    for (;;) {
        skip_ws(sc);
        if (scan_value(sc, CTX_OTHER, none) < 0) return -1;
        skip_ws(sc);
        if (sc->s >= sc->end) return -1;
        if (*sc->s == ',') { sc->s++; continue; }
        if (*sc->s == ']') { sc->s++; break; }
        return -1;
    }
    sc->depth--;
    return 0;
}

static int literal(scanner *sc, const char *word, Py_ssize_t n) {
    if (sc->end - sc->s < n || memcmp(sc->s, word, (size_t)n) != 0) return -1;
    sc->s += n;
    return 0;
}

/* A token count of usage: an integer from 0 to 2**53. */
static int count_value(scanner *sc, uint64_t *out) {
    int is_int, negative;
    uint64_t value;
    span text;
    if (scan_number(sc, &is_int, &value, &negative, &text) < 0) return -1;
    if (!is_int || (negative && value != 0) || value > MAX_TOKENS) return -1;
    *out = value;
    return 0;
}

/* The value of `key` in an object of context `ctx` (key.p is NULL inside arrays). */
static int scan_value(scanner *sc, enum ctx ctx, span key) {
    if (sc->s >= sc->end) return -1;
    unsigned char c = *sc->s;
    int keyed = key.p != NULL;
    if (c == '{') {
        enum ctx child = keyed ? child_ctx(ctx, key) : CTX_OTHER;
        if (child == CTX_MESSAGE) sc->has_message = sc->message_is_usable = 1;
        if (child == CTX_USAGE) sc->has_usage = 1;
        if (child == CTX_CACHE) sc->has_breakdown = 1;
        if (ctx == CTX_TOP && keyed && (KEY(key, "timestamp") || KEY(key, "requestId") ||
                                        KEY(key, "sessionId") || KEY(key, "version") ||
                                        KEY(key, "isSidechain") || KEY(key, "costUSD")))
            return -1;
        if (ctx == CTX_MESSAGE && keyed && (KEY(key, "id") || KEY(key, "model"))) return -1;
        if (ctx == CTX_USAGE && keyed && !KEY(key, "cache_creation") &&
            !KEY(key, "iterations") && !KEY(key, "server_tool_use") &&
            (KEY(key, "input_tokens") || KEY(key, "output_tokens") ||
             KEY(key, "cache_read_input_tokens") || KEY(key, "cache_creation_input_tokens") ||
             KEY(key, "speed")))
            return -1;
        if (ctx == CTX_CACHE && keyed) return -1; /* a part that is not a count */
        if (ctx == CTX_USAGE && keyed && KEY(key, "iterations")) sc->has_iterations = 1;
        return scan_object(sc, child);
    }
    if (c == '[') {
        if (keyed && ctx == CTX_TOP && KEY(key, "message")) return -1;
        if (keyed && ctx == CTX_MESSAGE && (KEY(key, "usage") || KEY(key, "id") || KEY(key, "model")))
            return -1;
        if (keyed && ctx == CTX_TOP && (KEY(key, "timestamp") || KEY(key, "requestId") ||
                                        KEY(key, "sessionId") || KEY(key, "version") ||
                                        KEY(key, "isSidechain") || KEY(key, "costUSD")))
            return -1;
        if (keyed && ctx == CTX_USAGE) {
            if (KEY(key, "iterations")) sc->has_iterations = 1;
            else if (KEY(key, "input_tokens") || KEY(key, "output_tokens") ||
                     KEY(key, "cache_read_input_tokens") ||
                     KEY(key, "cache_creation_input_tokens") || KEY(key, "speed") ||
                     KEY(key, "cache_creation"))
                return -1;
        }
        if (keyed && ctx == CTX_CACHE) return -1;
        return scan_array(sc);
    }
    if (c == '"') {
        span raw;
        int escaped;
        if (scan_string(sc, &raw, &escaped) < 0) return -1;
        if (!keyed || ctx == CTX_OTHER) return 0;
        if (ctx == CTX_TOP) {
            if (KEY(key, "message")) return -1;
            if (KEY(key, "timestamp")) { if (escaped) return -1; sc->timestamp = raw; sc->has_timestamp = 1; }
            else if (KEY(key, "requestId")) { if (escaped) return -1; sc->req_id = raw; sc->has_req_id = 1; }
            else if (KEY(key, "sessionId")) { if (escaped) return -1; sc->session = raw; sc->has_session = 1; }
            else if (KEY(key, "version")) { if (escaped) return -1; sc->version = raw; sc->has_version = 1; }
            else if (KEY(key, "cwd")) { if (escaped) return -1; sc->cwd = raw; sc->has_cwd = 1; }
            else if (KEY(key, "isSidechain") || KEY(key, "costUSD")) return -1;
            return 0;
        }
        if (ctx == CTX_MESSAGE) {
            if (KEY(key, "usage")) return -1;
            if (KEY(key, "id")) { if (escaped) return -1; sc->msg_id = raw; sc->has_msg_id = 1; }
            else if (KEY(key, "model")) { if (escaped) return -1; sc->model = raw; sc->has_model = 1; }
            return 0;
        }
        if (ctx == CTX_USAGE) {
            if (KEY(key, "speed")) {
                if (key_is(raw, "standard", 8)) sc->speed = 1;
                else if (key_is(raw, "fast", 4)) sc->speed = 2;
                else return -1;
                return 0;
            }
            if (KEY(key, "input_tokens") || KEY(key, "output_tokens") ||
                KEY(key, "cache_read_input_tokens") || KEY(key, "cache_creation_input_tokens") ||
                KEY(key, "cache_creation"))
                return -1;
            if (KEY(key, "iterations")) sc->has_iterations = 1;
            return 0;
        }
        return -1; /* CTX_CACHE: a part that is not a count */
    }
    if (c == 't' || c == 'f' || c == 'n') {
        int is_null = c == 'n';
        int truth = c == 't';
        if (literal(sc, truth ? "true" : (is_null ? "null" : "false"), truth || is_null ? 4 : 5) < 0)
            return -1;
        if (!keyed) return 0;
        if (is_null && null_matters(key)) return -1;
        if (ctx == CTX_OTHER) return 0;
        if (ctx == CTX_TOP) {
            if (KEY(key, "message")) return -1; /* message null or bool: the slow path decides */
            if (KEY(key, "isSidechain")) {
                if (is_null) return 0;
                sc->sidechain = truth;
                sc->has_sidechain = 1;
                return 0;
            }
            if (KEY(key, "isApiErrorMessage") && truth) return -1;
            if (KEY(key, "timestamp") || KEY(key, "requestId") || KEY(key, "sessionId") ||
                KEY(key, "version") || KEY(key, "costUSD"))
                return -1;
            return 0;
        }
        if (ctx == CTX_MESSAGE) {
            if (KEY(key, "usage") || KEY(key, "id") || KEY(key, "model")) return -1;
            return 0;
        }
        if (ctx == CTX_USAGE) {
            if (KEY(key, "cache_creation") && is_null) return 0; /* as if absent */
            if (KEY(key, "input_tokens") || KEY(key, "output_tokens") || KEY(key, "cache_creation") ||
                KEY(key, "cache_read_input_tokens") || KEY(key, "cache_creation_input_tokens") ||
                KEY(key, "speed"))
                return -1;
            if (KEY(key, "iterations")) sc->has_iterations = 1;
            return 0;
        }
        return -1; /* CTX_CACHE: a part that is not a count (null included) */
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        if (keyed && ctx == CTX_USAGE) {
            if (KEY(key, "input_tokens")) { sc->has_input = 1; return count_value(sc, &sc->input); }
            if (KEY(key, "output_tokens")) { sc->has_output = 1; return count_value(sc, &sc->output); }
            if (KEY(key, "cache_read_input_tokens")) {
                sc->has_cache_read = 1;
                return count_value(sc, &sc->cache_read);
            }
            if (KEY(key, "cache_creation_input_tokens")) {
                sc->has_cache_creation = 1;
                return count_value(sc, &sc->cache_creation);
            }
            if (KEY(key, "speed") || KEY(key, "cache_creation")) return -1;
            if (KEY(key, "iterations")) sc->has_iterations = 1;
        }
        if (keyed && ctx == CTX_CACHE) {
            if (KEY(key, "ephemeral_5m_input_tokens")) { sc->has_5m = 1; return count_value(sc, &sc->cache_5m); }
            if (KEY(key, "ephemeral_1h_input_tokens")) { sc->has_1h = 1; return count_value(sc, &sc->cache_1h); }
        }
        int is_int, negative;
        uint64_t value;
        span text;
        if (scan_number(sc, &is_int, &value, &negative, &text) < 0) return -1;
        if (keyed && ctx == CTX_TOP) {
            if (KEY(key, "message")) return -1;
            if (KEY(key, "costUSD")) {
                char buf[64];
                if (text.n >= (Py_ssize_t)sizeof(buf)) return -1;
                memcpy(buf, text.p, (size_t)text.n);
                buf[text.n] = 0;
                char *stop = NULL;
                double v = PyOS_string_to_double(buf, &stop, NULL);
                if (v == -1.0 && PyErr_Occurred()) { PyErr_Clear(); return -1; }
                if (stop != buf + text.n) return -1;
                sc->cost = is_int && v == 0.0 ? 0.0 : v; /* -0 is the integer 0 */
                sc->has_cost = 1;
                return 0;
            }
            if (KEY(key, "timestamp") || KEY(key, "requestId") || KEY(key, "sessionId") ||
                KEY(key, "version") || KEY(key, "isSidechain"))
                return -1;
        }
        if (keyed && ctx == CTX_MESSAGE && (KEY(key, "usage") || KEY(key, "id") || KEY(key, "model")))
            return -1;
        return 0;
    }
    return -1;
}

/* ---- the fields, checked as records.py checks them */

static const int DAYS_IN_MONTH[13] = {0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

static int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int digits(const char *p, int n, int *out) {
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') return -1;
        v = v * 10 + (p[i] - '0');
    }
    *out = v;
    return 0;
}

/* `YYYY-MM-DDTHH:MM:SS.mmmZ` (what Claude Code writes) as epoch seconds, else -1: other
 * spellings the rules accept go the slow way. Computed as records._timestamp computes it. */
static int read_timestamp(span t, double *out) {
    const char *p = t.p;
    if (t.n != 24 || p[4] != '-' || p[7] != '-' || p[10] != 'T' || p[13] != ':' || p[16] != ':' ||
        p[19] != '.' || p[23] != 'Z')
        return -1;
    int y, mo, d, h, mi, s, ms;
    if (digits(p, 4, &y) || digits(p + 5, 2, &mo) || digits(p + 8, 2, &d) ||
        digits(p + 11, 2, &h) || digits(p + 14, 2, &mi) || digits(p + 17, 2, &s) ||
        digits(p + 20, 3, &ms))
        return -1;
    int leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    if (mo < 1 || mo > 12 || d < 1 || d > DAYS_IN_MONTH[mo] + (mo == 2 && leap)) return -1;
    if (h > 23 || mi > 59 || s > 59) return -1;
    int64_t whole = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s;
    *out = (double)whole + (double)ms / 1000.0;
    return 0;
}

/* records._good_version: starts with digits.digits.digits */
static int good_version(span v) {
    Py_ssize_t i = 0;
    for (int part = 0; part < 3; part++) {
        Py_ssize_t start = i;
        while (i < v.n && v.p[i] >= '0' && v.p[i] <= '9') i++;
        if (i == start) return 0;
        if (part < 2) {
            if (i >= v.n || v.p[i] != '.') return 0;
            i++;
        }
    }
    return 1;
}

static PyObject *text_or_none(int has, span s) {
    if (!has) Py_RETURN_NONE;
    return PyUnicode_DecodeUTF8(s.p, s.n, "surrogatepass");
}

static scanner *scratch = NULL; /* one per process; the GIL is held throughout */

PyDoc_STRVAR(scan_doc,
"scan(line: bytes) -> tuple | None\n\n"
"The fields of an ordinary response line (records.FIELDS: msg_id, req_id, model, timestamp,\n"
"sidechain, cost_usd, cwd, input, output, cache_read, cache_5m, cache_1h, has_speed, fast,\n"
"total, api_error, error_text), or None when records.parse must decide (anything unusual,\n"
"and every line it would reject).");

static PyObject *scan(PyObject *self, PyObject *arg) {
    (void)self;
    if (!PyBytes_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "scan() takes bytes");
        return NULL;
    }
    if (scratch == NULL) {
        scratch = PyMem_RawMalloc(sizeof(scanner));
        if (scratch == NULL) return PyErr_NoMemory();
    }
    scanner *sc = scratch;
    memset(sc, 0, offsetof(scanner, keys));
    memset(&sc->nkeys, 0, sizeof(scanner) - offsetof(scanner, nkeys));
    sc->s = (const unsigned char *)PyBytes_AS_STRING(arg);
    sc->end = sc->s + PyBytes_GET_SIZE(arg);
    skip_ws(sc);
    if (sc->s >= sc->end || *sc->s != '{') Py_RETURN_NONE;
    if (scan_object(sc, CTX_TOP) < 0) Py_RETURN_NONE;
    skip_ws(sc);
    if (sc->s != sc->end) Py_RETURN_NONE;
    /* the plain case only: a message with usage, the counts present, nothing odd */
    if (!sc->message_is_usable || !sc->has_usage || !sc->has_input || !sc->has_output)
        Py_RETURN_NONE;
    if (!sc->has_timestamp) Py_RETURN_NONE;
    if ((sc->has_msg_id && sc->msg_id.n == 0) || (sc->has_req_id && sc->req_id.n == 0) ||
        (sc->has_model && sc->model.n == 0) || (sc->has_session && sc->session.n == 0))
        Py_RETURN_NONE;
    if (sc->has_version && !good_version(sc->version)) Py_RETURN_NONE;
    if (sc->has_iterations) {
        /* advisors are searched only when the line names one */
        const char *hay = PyBytes_AS_STRING(arg);
        if (memmem(hay, (size_t)PyBytes_GET_SIZE(arg), "\"advisor_message\"", 17) != NULL)
            Py_RETURN_NONE;
    }
    double ts;
    if (read_timestamp(sc->timestamp, &ts) < 0) Py_RETURN_NONE;
    uint64_t c5 = sc->has_breakdown ? sc->cache_5m : sc->cache_creation;
    uint64_t c1 = sc->has_breakdown ? sc->cache_1h : 0;
    PyObject *msg_id = text_or_none(sc->has_msg_id, sc->msg_id);
    PyObject *req_id = text_or_none(sc->has_req_id, sc->req_id);
    PyObject *model = sc->has_model ? PyUnicode_DecodeUTF8(sc->model.p, sc->model.n, "surrogatepass")
                                    : PyUnicode_FromString("unknown");
    PyObject *cwd = text_or_none(sc->has_cwd, sc->cwd);
    PyObject *cost = NULL;
    if (sc->has_cost) {
        cost = PyFloat_FromDouble(sc->cost);
    } else {
        cost = Py_None;
        Py_INCREF(cost);
    }
    if (!msg_id || !req_id || !model || !cwd || !cost) {
        Py_XDECREF(msg_id); Py_XDECREF(req_id); Py_XDECREF(model); Py_XDECREF(cwd); Py_XDECREF(cost);
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    /* each count has at most 18 digits: their sum fits */
    unsigned long long total = (unsigned long long)(sc->input + sc->output + sc->cache_read + c5 + c1);
    return Py_BuildValue(
        "(NNNdONNKKKKKOOKOO)", msg_id, req_id, model, ts, sc->sidechain ? Py_True : Py_False, cost,
        cwd, (unsigned long long)sc->input, (unsigned long long)sc->output,
        (unsigned long long)sc->cache_read, (unsigned long long)c5, (unsigned long long)c1,
        sc->speed ? Py_True : Py_False, sc->speed == 2 ? Py_True : Py_False, total, Py_False,
        Py_None);
}

/* ---- finding the candidate lines of a block (tailer._collect and _count_lines in one) */

static const char MARKER[] = "\"usage\":{"; /* tailer.MARKER */
#define MARKER_LEN 9

#if defined(__SSE2__)
/* The marker's first and last bytes compared sixteen positions at a time; the rest only
 * where both match (the usual SIMD substring search). */
static const char *find_marker(const char *s, size_t n) {
    size_t i = 0;
    if (n >= MARKER_LEN + 15) {
        const __m128i first = _mm_set1_epi8(MARKER[0]), last = _mm_set1_epi8(MARKER[MARKER_LEN - 1]);
        for (; i + MARKER_LEN - 1 + 16 <= n; i += 16) {
            __m128i a = _mm_loadu_si128((const __m128i *)(s + i));
            __m128i b = _mm_loadu_si128((const __m128i *)(s + i + MARKER_LEN - 1));
            unsigned mask = (unsigned)_mm_movemask_epi8(
                _mm_and_si128(_mm_cmpeq_epi8(a, first), _mm_cmpeq_epi8(b, last)));
            while (mask) {
                int bit = __builtin_ctz(mask);
                if (memcmp(s + i + bit + 1, MARKER + 1, MARKER_LEN - 2) == 0) return s + i + bit;
                mask &= mask - 1;
            }
        }
    }
    return n > i ? memmem(s + i, n - i, MARKER, MARKER_LEN) : NULL;
}
#else
static const char *find_marker(const char *s, size_t n) { return memmem(s, n, MARKER, MARKER_LEN); }
#endif

PyDoc_STRVAR(collect_doc,
"collect(block: bytes, begin: int, stop: int, base: int, out: list) -> int\n\n"
"The newlines in block[begin:stop]; appends (base + start, line) to out for each line there\n"
"that holds the marker (begin is a line start, block[stop - 1] a newline).");

static PyObject *collect(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *block, *out;
    Py_ssize_t begin, stop, base;
    if (!PyArg_ParseTuple(args, "SnnnO!", &block, &begin, &stop, &base, &PyList_Type, &out))
        return NULL;
    const char *data = PyBytes_AS_STRING(block);
    Py_ssize_t size = PyBytes_GET_SIZE(block);
    if (begin < 0 || stop > size || begin > stop) {
        PyErr_SetString(PyExc_ValueError, "collect(): begin and stop must lie in the block");
        return NULL;
    }
    Py_ssize_t lines = 0;
    const char *p = data + begin, *end = data + stop;
    while (p < end && (p = memchr(p, '\n', (size_t)(end - p))) != NULL) {
        lines++;
        p++;
    }
    const char *from = data + begin;
    while (from < end) {
        const char *hit = find_marker(from, (size_t)(end - from));
        if (hit == NULL) break;
        const char *newline = memrchr(data + begin, '\n', (size_t)(hit - (data + begin)));
        const char *start = newline != NULL ? newline + 1 : data + begin;
        const char *stop_at = memchr(hit, '\n', (size_t)(data + size - hit));
        if (stop_at == NULL) stop_at = data + size;
        PyObject *line = PyBytes_FromStringAndSize(start, stop_at - start);
        if (line == NULL) return NULL;
        PyObject *item = Py_BuildValue("(nN)", base + (start - data), line);
        if (item == NULL || PyList_Append(out, item) < 0) {
            Py_XDECREF(item);
            return NULL;
        }
        Py_DECREF(item);
        from = stop_at;
    }
    return PyLong_FromSsize_t(lines);
}

/* ---- the Bloom filter of stored message hashes (store.MessageFilter, the same in Python) */

/* The filter's bits, and its mask (its size in bits, a power of two, minus one). */
static unsigned char *bloom_bits(PyObject *bits, uint64_t *mask) {
    Py_ssize_t size = PyByteArray_GET_SIZE(bits);
    if (size <= 0 || (size & (size - 1)) != 0) {
        PyErr_SetString(PyExc_ValueError, "the filter's size must be a power of two");
        return NULL;
    }
    *mask = (uint64_t)size * 8 - 1;
    return (unsigned char *)PyByteArray_AS_STRING(bits);
}

/* Sets (set) or tests the two probes of one hash: the low bits and the bits above 24. */
static int bloom_probe(unsigned char *bits, uint64_t mask, PyObject *item, int set) {
    long long value = PyLong_AsLongLong(item);
    if (value == -1 && PyErr_Occurred()) return -1;
    uint64_t probes[2] = {(uint64_t)value & mask, ((uint64_t)value >> 24) & mask};
    int held = 1;
    for (int i = 0; i < 2; i++) {
        unsigned char bit = (unsigned char)(1u << (probes[i] & 7));
        if (set) bits[probes[i] >> 3] |= bit;
        else if (!(bits[probes[i] >> 3] & bit)) held = 0;
    }
    return held;
}

/* bloom_add and bloom_held: the hashes of an iterable, set or tested. */
static PyObject *bloom_each(PyObject *args, int set) {
    PyObject *bits, *msgs;
    if (!PyArg_ParseTuple(args, "O!O", &PyByteArray_Type, &bits, &msgs)) return NULL;
    uint64_t mask;
    unsigned char *data = bloom_bits(bits, &mask);
    if (data == NULL) return NULL;
    PyObject *iterator = PyObject_GetIter(msgs);
    if (iterator == NULL) return NULL;
    PyObject *held = set ? NULL : PyList_New(0);
    if (!set && held == NULL) {
        Py_DECREF(iterator);
        return NULL;
    }
    PyObject *item;
    while ((item = PyIter_Next(iterator)) != NULL) {
        int found = bloom_probe(data, mask, item, set);
        if (found < 0 || (found && held != NULL && PyList_Append(held, item) < 0)) {
            Py_DECREF(item);
            Py_DECREF(iterator);
            Py_XDECREF(held);
            return NULL;
        }
        Py_DECREF(item);
    }
    Py_DECREF(iterator);
    if (PyErr_Occurred()) {
        Py_XDECREF(held);
        return NULL;
    }
    if (set) Py_RETURN_NONE;
    return held;
}

PyDoc_STRVAR(bloom_add_doc,
"bloom_add(bits: bytearray, msgs: Iterable[int]) -> None\n\n"
"Sets the two probes of each signed 64-bit hash (store.MessageFilter.add_all).");

static PyObject *bloom_add(PyObject *self, PyObject *args) {
    (void)self;
    return bloom_each(args, 1);
}

PyDoc_STRVAR(bloom_held_doc,
"bloom_held(bits: bytearray, msgs: Iterable[int]) -> list[int]\n\n"
"The hashes whose probes are all set, in order (store.MessageFilter.held).");

static PyObject *bloom_held(PyObject *self, PyObject *args) {
    (void)self;
    return bloom_each(args, 0);
}

PyDoc_STRVAR(find_doc,
"find(block: bytes, begin: int, stop: int) -> int\n\n"
"Where the marker starts in block[begin:stop], or -1 (block.find(MARKER, begin, stop)).");

static PyObject *find(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *block;
    Py_ssize_t begin, stop;
    if (!PyArg_ParseTuple(args, "Snn", &block, &begin, &stop)) return NULL;
    Py_ssize_t size = PyBytes_GET_SIZE(block);
    if (begin < 0 || stop > size || begin > stop) {
        PyErr_SetString(PyExc_ValueError, "find(): begin and stop must lie in the block");
        return NULL;
    }
    const char *data = PyBytes_AS_STRING(block);
    const char *hit = find_marker(data + begin, (size_t)(stop - begin));
    return PyLong_FromSsize_t(hit == NULL ? -1 : hit - data);
}

/* ---- a chunk counted as first copies into a batch (reader.absorb_in_python, the same) */

/* Field `at` of an entry as a 64-bit integer; -1 with an error set when it is not one. */
static int entry_int(PyObject *entry, Py_ssize_t at, long long *out) {
    *out = PyLong_AsLongLong(PyTuple_GET_ITEM(entry, at));
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

/* One (minute, group) bucket of a chunk, summed in C: Python objects are made once per
 * bucket at the end, not per entry (each update of a Python list made five new floats). */
typedef struct {
    long long minute, group, first_ms, responses;
    double tokens[4], cost; /* added in the entries' order, as the Python adds them */
} bucket_sums;

/* A chunk's sums as first copies: per group input, output, cache_read, cache_creation,
 * unpriced, responses (`ints`, 6 a group) and cost (`costs`), and its (minute, group) buckets
 * in order of first appearance (`found`, `made` of them). */
typedef struct {
    long long *ints;
    double *costs;
    bucket_sums *found;
    Py_ssize_t made;
} chunk_sums;

static void free_sums(chunk_sums *sums) {
    PyMem_Free(sums->ints);
    PyMem_Free(sums->costs);
    PyMem_Free(sums->found);
}

/* Sum the entries (reader.totals_in_python's rules): 0, or 1 when a sum would pass 64 bits
 * or a field is odd (the Python decides then), or -1 with an error set. */
static int sum_chunk(PyObject *entries, Py_ssize_t groups, chunk_sums *sums) {
    Py_ssize_t n = PyList_GET_SIZE(entries);
    sums->ints = PyMem_Calloc((size_t)groups * 6 + 1, sizeof(long long));
    sums->costs = PyMem_Calloc((size_t)groups + 1, sizeof(double));
    sums->found = PyMem_Malloc(((size_t)n + 1) * sizeof(bucket_sums));
    sums->made = 0;
    /* the buckets are found through an open-addressing table of their places */
    size_t slots = 16;
    while (slots < (size_t)n * 2) slots <<= 1;
    Py_ssize_t *table = PyMem_Malloc(slots * sizeof(Py_ssize_t));
    int status = 0;
    if (sums->ints == NULL || sums->costs == NULL || sums->found == NULL || table == NULL) {
        PyErr_NoMemory();
        status = -1;
        goto done;
    }
    memset(table, 0xff, slots * sizeof(Py_ssize_t)); /* -1: empty */
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *entry = PyList_GET_ITEM(entries, i);
        if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) < 14) goto odd;
        long long tok[4], group;
        for (int k = 0; k < 4; k++)
            if (entry_int(entry, 6 + k, &tok[k]) < 0 || tok[k] < 0) goto odd;
        if (entry_int(entry, 11, &group) < 0 || group < 0 || group >= groups) goto odd;
        PyObject *cost_obj = PyTuple_GET_ITEM(entry, 10), *ts_obj = PyTuple_GET_ITEM(entry, 12);
        if (!PyFloat_CheckExact(cost_obj) || !PyFloat_CheckExact(ts_obj)) goto odd;
        double cost = PyFloat_AS_DOUBLE(cost_obj), ts = PyFloat_AS_DOUBLE(ts_obj);
        int priced = PyObject_IsTrue(PyTuple_GET_ITEM(entry, 13));
        if (priced < 0 || !(ts > -1e15 && ts < 1e15)) goto odd;
        long long *sum = sums->ints + group * 6, all = 0;
        for (int k = 0; k < 4; k++) {
            if (__builtin_add_overflow(sum[k], tok[k], &sum[k])) goto odd;
            if (__builtin_add_overflow(all, tok[k], &all)) goto odd;
        }
        if (!priced && __builtin_add_overflow(sum[4], all, &sum[4])) goto odd;
        sum[5] += 1;
        sums->costs[group] += cost;
        /* blocks.ms_of and minute_of: rounded milliseconds, minute m = ((m-1)*60, m*60] s */
        long long ms = ts >= 0 ? (long long)(ts * 1000 + 0.5) : -(long long)(-ts * 1000 + 0.5);
        long long minute = ms > 0 ? (ms + 59999) / 60000 : -((-ms) / 60000);
        uint64_t hash = ((uint64_t)minute * 0x9E3779B97F4A7C15ULL) ^ (uint64_t)group;
        size_t slot = (size_t)(hash ^ (hash >> 29)) & (slots - 1);
        bucket_sums *found = sums->found;
        while (table[slot] >= 0 &&
               (found[table[slot]].minute != minute || found[table[slot]].group != group))
            slot = (slot + 1) & (slots - 1);
        if (table[slot] < 0) {
            bucket_sums *bucket = &found[sums->made];
            bucket->minute = minute;
            bucket->group = group;
            bucket->first_ms = ms;
            bucket->responses = 1;
            for (int k = 0; k < 4; k++) bucket->tokens[k] = (double)tok[k];
            bucket->cost = cost;
            table[slot] = sums->made++;
            continue;
        }
        bucket_sums *bucket = &found[table[slot]];
        if (ms < bucket->first_ms) bucket->first_ms = ms;
        for (int k = 0; k < 4; k++) bucket->tokens[k] += (double)tok[k];
        bucket->cost += cost;
        bucket->responses += 1;
    }
    goto done;
odd:
    PyErr_Clear();
    status = 1;
done:
    PyMem_Free(table);
    return status;
}

/* A group's sums as the Python list [input, output, cache_read, cache_creation, cost,
 * unpriced, responses]. */
static PyObject *group_row(chunk_sums *sums, Py_ssize_t g) {
    long long *sum = sums->ints + g * 6;
    return Py_BuildValue("[LLLLdLL]", sum[0], sum[1], sum[2], sum[3], sums->costs[g], sum[4],
                         sum[5]);
}

/* A bucket as the Python list [minute, labels, first_ms, input, output, cache_read,
 * cache_creation, cost, responses], `labels` its group's label set. */
static PyObject *bucket_row(bucket_sums *bucket, PyObject *labels) {
    PyObject *items[9] = {
        PyLong_FromLongLong(bucket->minute), Py_NewRef(labels),
        PyLong_FromLongLong(bucket->first_ms), PyFloat_FromDouble(bucket->tokens[0]),
        PyFloat_FromDouble(bucket->tokens[1]), PyFloat_FromDouble(bucket->tokens[2]),
        PyFloat_FromDouble(bucket->tokens[3]), PyFloat_FromDouble(bucket->cost),
        PyLong_FromLongLong(bucket->responses),
    };
    PyObject *row = PyList_New(9);
    for (int k = 0; k < 9; k++) {
        if (items[k] == NULL || row == NULL) {
            for (int j = k; j < 9; j++) Py_XDECREF(items[j]);
            Py_XDECREF(row);
            return NULL;
        }
        PyList_SET_ITEM(row, k, items[k]);
    }
    return row;
}

/* have[at] = have[at] + value (a new reference to value is not taken) */
static int add_item(PyObject *have, Py_ssize_t at, PyObject *value) {
    PyObject *sum = PyNumber_Add(PyList_GET_ITEM(have, at), value);
    if (sum == NULL) return -1;
    PyList_SetItem(have, at, sum);
    return 0;
}

PyDoc_STRVAR(absorb_doc,
"absorb(entries, labels, by_labels, buckets, fresh) -> bool\n\n"
"reader.absorb_in_python in C: a chunk's entries counted as first copies into a batch (the\n"
"sums per label set, the bucket rows per (minute, label set), each entry's responses row\n"
"in fresh); False, and nothing changed, when a sum would pass 64 bits or a field is odd.");

static PyObject *absorb(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *entries, *labels, *by_labels, *buckets, *fresh;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!", &PyList_Type, &entries, &PyList_Type, &labels,
                          &PyDict_Type, &by_labels, &PyDict_Type, &buckets, &PyDict_Type,
                          &fresh))
        return NULL;
    Py_ssize_t groups = PyList_GET_SIZE(labels), n = PyList_GET_SIZE(entries);
    chunk_sums sums; /* it also checks that every entry is a tuple of 14 fields or more */
    int status = sum_chunk(entries, groups, &sums);
    if (status != 0) {
        free_sums(&sums);
        if (status < 0) return NULL;
        Py_RETURN_FALSE;
    }
    for (Py_ssize_t g = 0; g < groups; g++) {
        PyObject *labelset = PyList_GET_ITEM(labels, g);
        PyObject *row = group_row(&sums, g);
        if (row == NULL) goto fail;
        PyObject *have = PyDict_GetItemWithError(by_labels, labelset);
        int failed = 0;
        if (have == NULL) {
            failed = PyErr_Occurred() != NULL || PyDict_SetItem(by_labels, labelset, row) < 0;
        } else if (!PyList_Check(have) || PyList_GET_SIZE(have) < 7) {
            PyErr_SetString(PyExc_TypeError, "absorb(): a label set's sums are a 7-list");
            failed = 1;
        } else {
            for (Py_ssize_t k = 0; k < 7 && !failed; k++)
                failed = add_item(have, k, PyList_GET_ITEM(row, k)) < 0;
        }
        Py_DECREF(row);
        if (failed) goto fail;
    }
    for (Py_ssize_t b = 0; b < sums.made; b++) {
        bucket_sums *bucket = &sums.found[b];
        PyObject *row = bucket_row(bucket, PyList_GET_ITEM(labels, bucket->group));
        if (row == NULL) goto fail;
        PyObject *key = PyTuple_Pack(2, PyList_GET_ITEM(row, 0), PyList_GET_ITEM(row, 1));
        PyObject *have = key == NULL ? NULL : PyDict_GetItemWithError(buckets, key);
        int failed = key == NULL;
        if (!failed && have == NULL) {
            failed = PyErr_Occurred() != NULL || PyDict_SetItem(buckets, key, row) < 0;
        } else if (!failed && (!PyList_Check(have) || PyList_GET_SIZE(have) < 9)) {
            PyErr_SetString(PyExc_TypeError, "absorb(): a bucket row is a 9-list");
            failed = 1;
        } else if (!failed) { /* reader.merge_bucket */
            int earlier = PyObject_RichCompareBool(PyList_GET_ITEM(row, 2),
                                                   PyList_GET_ITEM(have, 2), Py_LT);
            failed = earlier < 0;
            if (earlier > 0) PyList_SetItem(have, 2, Py_NewRef(PyList_GET_ITEM(row, 2)));
            for (Py_ssize_t k = 3; k < 9 && !failed; k++)
                failed = add_item(have, k, PyList_GET_ITEM(row, k)) < 0;
        }
        Py_XDECREF(key);
        Py_DECREF(row);
        if (failed) goto fail;
    }
    for (Py_ssize_t i = 0; i < n; i++) { /* fresh[msg] = (*entry[:11], labels[group]) */
        PyObject *entry = PyList_GET_ITEM(entries, i);
        PyObject *row = PyTuple_New(12);
        if (row == NULL) goto fail;
        for (Py_ssize_t k = 0; k < 11; k++)
            PyTuple_SET_ITEM(row, k, Py_NewRef(PyTuple_GET_ITEM(entry, k)));
        long long group = PyLong_AsLongLong(PyTuple_GET_ITEM(entry, 11)); /* as sum_chunk read it */
        PyTuple_SET_ITEM(row, 11, Py_NewRef(PyList_GET_ITEM(labels, group)));
        int failed = PyDict_SetItem(fresh, PyTuple_GET_ITEM(entry, 0), row) < 0;
        Py_DECREF(row);
        if (failed) goto fail;
    }
    free_sums(&sums);
    Py_RETURN_TRUE;
fail:
    free_sums(&sums);
    return NULL;
}

/* ---- the ledger's 64-bit keys: BLAKE2b-64 (reader.key_hash_in_python, the same) */

PyDoc_STRVAR(key_hash_doc,
"key_hash(text: str) -> int\n\n"
"reader.key_hash_in_python in C: BLAKE2b with an 8-byte digest of the text as UTF-8 (lone\n"
"surrogates passed through), as a signed 64-bit integer.");

static PyObject *key_hash(PyObject *self, PyObject *text) {
    (void)self;
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "key_hash() takes a str");
        return NULL;
    }
    if (PyUnicode_IS_ASCII(text)) /* ids are: no copy */
        return PyLong_FromLongLong(blake2b_first8(PyUnicode_DATA(text), (size_t)PyUnicode_GET_LENGTH(text), 8));
    PyObject *encoded = PyUnicode_AsEncodedString(text, "utf-8", "surrogatepass");
    if (encoded == NULL) return NULL;
    int64_t hashed = blake2b_first8((const unsigned char *)PyBytes_AS_STRING(encoded),
                                    (size_t)PyBytes_GET_SIZE(encoded), 8);
    Py_DECREF(encoded);
    return PyLong_FromLongLong(hashed);
}

/* ---- settling the streamed copies of one chunk (reader.settle_in_python, the same) */

/* counts[name] += 1 */
static int count_in(PyObject *counts, PyObject *name) {
    PyObject *old = PyDict_GetItemWithError(counts, name);
    if (old == NULL && PyErr_Occurred()) return -1;
    PyObject *value = PyLong_FromLongLong(old == NULL ? 1 : PyLong_AsLongLong(old) + 1);
    if (value == NULL) return -1;
    int failed = PyDict_SetItem(counts, name, value);
    Py_DECREF(value);
    return failed;
}

/* What the copies of one response share (reader.settle_in_python's copy key); adds a main
 * copy's message id to main_msgs. A new reference, or NULL with an error set. */
static PyObject *copy_key(PyObject *usage, PyObject *offset, Py_ssize_t index, PyObject *main_msgs) {
    PyObject *msg_id = PyTuple_GET_ITEM(usage, 0), *req_id = PyTuple_GET_ITEM(usage, 1);
    if (msg_id == Py_None) return Py_BuildValue("(On)", offset, index);
    int sidechain = PyObject_IsTrue(PyTuple_GET_ITEM(usage, 4));
    if (sidechain < 0) return NULL;
    if (sidechain) return PyTuple_Pack(2, msg_id, Py_None);
    if (PySet_Add(main_msgs, msg_id) < 0) return NULL;
    if (req_id != Py_None) return PyTuple_Pack(2, msg_id, req_id);
    /* round(ts * 1000), as Python rounds (half to even) */
    PyObject *thousand = PyFloat_FromDouble(1000.0);
    PyObject *scaled = thousand ? PyNumber_Multiply(PyTuple_GET_ITEM(usage, 3), thousand) : NULL;
    PyObject *instant = scaled ? PyObject_CallMethod(scaled, "__round__", NULL) : NULL;
    Py_XDECREF(thousand);
    Py_XDECREF(scaled);
    if (instant == NULL) return NULL;
    PyObject *key = PyTuple_Pack(2, msg_id, instant);
    Py_DECREF(instant);
    return key;
}

/* 1 when `usage` beats `kept`: the larger total, else what better(usage, kept) says. */
static int beats(PyObject *usage, PyObject *kept, PyObject *better) {
    PyObject *total = PyTuple_GET_ITEM(usage, 14), *kept_total = PyTuple_GET_ITEM(kept, 14);
    int differ = PyObject_RichCompareBool(total, kept_total, Py_NE);
    if (differ != 0) return differ < 0 ? -1 : PyObject_RichCompareBool(total, kept_total, Py_GT);
    PyObject *answer = PyObject_CallFunctionObjArgs(better, usage, kept, NULL);
    if (answer == NULL) return -1;
    int wins = PyObject_IsTrue(answer);
    Py_DECREF(answer);
    return wins;
}

PyDoc_STRVAR(settle_doc,
"settle(candidates, rules, better, rejects, copies) -> (kept, first_ts, last_ts)\n\n"
"reader.settle_in_python in C: scans each (offset, line) candidate (rules(line) decides a\n"
"line scan declines: its usages, or the reason it is rejected), keeps the best copy of\n"
"each response and drops sidechain replays of main copies, counting both in `copies`.");

static PyObject *settle(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *candidates, *rules, *better, *rejects, *copies;
    if (!PyArg_ParseTuple(args, "O!OOO!O!", &PyList_Type, &candidates, &rules, &better,
                          &PyDict_Type, &rejects, &PyDict_Type, &copies))
        return NULL;
    PyObject *best = PyDict_New(), *main_msgs = PySet_New(NULL), *kept = NULL;
    PyObject *copy_name = PyUnicode_FromString("copy");
    PyObject *replay_name = PyUnicode_FromString("sidechain_replay");
    PyObject *first_ts = Py_None, *last_ts = Py_None, *result = NULL;
    Py_INCREF(first_ts);
    Py_INCREF(last_ts);
    if (best == NULL || main_msgs == NULL || copy_name == NULL || replay_name == NULL) goto done;
    Py_ssize_t n = PyList_GET_SIZE(candidates);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *candidate = PyList_GET_ITEM(candidates, i);
        if (!PyTuple_Check(candidate) || PyTuple_GET_SIZE(candidate) != 2) {
            PyErr_SetString(PyExc_TypeError, "settle(): a candidate is (offset, line)");
            goto done;
        }
        PyObject *offset = PyTuple_GET_ITEM(candidate, 0), *line = PyTuple_GET_ITEM(candidate, 1);
        PyObject *fields = scan(NULL, line), *parsed;
        if (fields == NULL) goto done;
        if (fields != Py_None) {
            parsed = PyTuple_Pack(1, fields);
            Py_DECREF(fields);
        } else {
            Py_DECREF(fields);
            parsed = PyObject_CallOneArg(rules, line);
        }
        if (parsed == NULL) goto done;
        if (PyUnicode_Check(parsed)) { /* rejected, and why */
            int failed = count_in(rejects, parsed);
            Py_DECREF(parsed);
            if (failed) goto done;
            continue;
        }
        PyObject *items = PySequence_Fast(parsed, "rules() returns the usages or a reason");
        Py_DECREF(parsed);
        if (items == NULL) goto done;
        Py_ssize_t count = PySequence_Fast_GET_SIZE(items);
        for (Py_ssize_t index = 0; index < count; index++) {
            PyObject *usage = PySequence_Fast_GET_ITEM(items, index);
            if (!PyTuple_Check(usage) || PyTuple_GET_SIZE(usage) < 17) {
                PyErr_SetString(PyExc_TypeError, "settle(): a usage is a records.FIELDS tuple");
                Py_DECREF(items);
                goto done;
            }
            PyObject *ts = PyTuple_GET_ITEM(usage, 3);
            int earlier = first_ts == Py_None ? 1 : PyObject_RichCompareBool(ts, first_ts, Py_LT);
            int later = last_ts == Py_None ? 1 : PyObject_RichCompareBool(ts, last_ts, Py_GT);
            if (earlier < 0 || later < 0) {
                Py_DECREF(items);
                goto done;
            }
            if (earlier) Py_SETREF(first_ts, Py_NewRef(ts));
            if (later) Py_SETREF(last_ts, Py_NewRef(ts));
            PyObject *key = copy_key(usage, offset, index, main_msgs);
            if (key == NULL) {
                Py_DECREF(items);
                goto done;
            }
            PyObject *held = PyDict_GetItemWithError(best, key);
            int keep = 1;
            if (held == NULL && PyErr_Occurred()) keep = -1;
            else if (held != NULL) {
                keep = count_in(copies, copy_name) < 0 ? -1
                                                       : beats(usage, PyTuple_GET_ITEM(held, 0), better);
            }
            if (keep > 0) {
                PyObject *entry = Py_BuildValue("(OOnO)", usage, offset, index, line);
                if (entry == NULL || PyDict_SetItem(best, key, entry) < 0) keep = -1;
                Py_XDECREF(entry);
            }
            Py_DECREF(key);
            if (keep < 0) {
                Py_DECREF(items);
                goto done;
            }
        }
        Py_DECREF(items);
    }
    kept = PyList_New(0);
    if (kept == NULL) goto done;
    {
        Py_ssize_t at = 0;
        PyObject *key, *entry;
        while (PyDict_Next(best, &at, &key, &entry)) {
            PyObject *usage = PyTuple_GET_ITEM(entry, 0);
            int sidechain = PyObject_IsTrue(PyTuple_GET_ITEM(usage, 4));
            int replay = sidechain > 0 ? PySet_Contains(main_msgs, PyTuple_GET_ITEM(usage, 0)) : sidechain;
            if (replay < 0) goto done;
            if (replay ? count_in(copies, replay_name) < 0 : PyList_Append(kept, entry) < 0) goto done;
        }
    }
    result = Py_BuildValue("(OOO)", kept, first_ts, last_ts);
done:
    Py_XDECREF(best);
    Py_XDECREF(main_msgs);
    Py_XDECREF(kept);
    Py_XDECREF(copy_name);
    Py_XDECREF(replay_name);
    Py_XDECREF(first_ts);
    Py_XDECREF(last_ts);
    return result;
}

static PyMethodDef methods[] = {
    {"settle", settle, METH_VARARGS, settle_doc},
    {"key_hash", key_hash, METH_O, key_hash_doc},
    {"absorb", absorb, METH_VARARGS, absorb_doc},
    {"find", find, METH_VARARGS, find_doc},
    {"scan", scan, METH_O, scan_doc},
    {"collect", collect, METH_VARARGS, collect_doc},
    {"bloom_add", bloom_add, METH_VARARGS, bloom_add_doc},
    {"bloom_held", bloom_held, METH_VARARGS, bloom_held_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_fastline",
    "The token ledger's per-line fast path (records.parse decides whatever it declines).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__fastline(void) { return PyModule_Create(&module); }
