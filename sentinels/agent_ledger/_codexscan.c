/* The Codex reader's line finder in C (codex._candidates_py is the same in Python).
 *
 * Most of a rollout's bytes are messages, tool output and instructions that no rule reads.
 * collect() finds, in one pass at memory speed, the lines that hold one of the six quoted
 * strings every line codex.line_kind does not skip holds, and hands back only those. It
 * decides nothing else: line_kind and the rules then read each line found, as before, so a
 * line this finds needlessly costs time, never a wrong count. tests/agents/
 * test_codex_conformance.py holds it equal to the Python loop on edge cases.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* The needles after their opening quote (codex._CANDIDATE). */
static int needle_at(const char *p, const char *end) {
    /* p points at a '"'; 1 when one of the needles starts there and ends before `end` */
    size_t left = (size_t)(end - p) - 1;
    const char *q = p + 1;
    if (left == 0) return 0;
#define IS(text) (left >= sizeof(text) - 1 && memcmp(q, text, sizeof(text) - 1) == 0)
    switch (*q) {
    case 't': return IS("turn_context\"") || IS("token_count\"") || IS("thread_settings_applied\"");
    case 'u': return IS("usage\":");
    case 'i': return IS("input_tokens\":");
    case 'p': return IS("prompt_tokens\":");
    default: return 0;
    }
#undef IS
}

static inline int starts(unsigned char c) { return c == 't' || c == 'u' || c == 'i' || c == 'p'; }

/* The first needle in [s, end), or NULL: find_needle_sse2 (or the byte loop), or where
 * the CPU has it (checked at import), the same with AVX2, 64 bytes a step. */
static const char *find_needle_sse2(const char *s, const char *end);
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
__attribute__((target("avx2"))) static const char *find_needle_avx2(const char *s,
                                                                     const char *end) {
    const __m256i quote = _mm256_set1_epi8('"');
    while (end - s >= 65) {
        __m256i a = _mm256_loadu_si256((const __m256i *)s);
        __m256i b = _mm256_loadu_si256((const __m256i *)(s + 32));
        unsigned long long mask =
            (unsigned)_mm256_movemask_epi8(_mm256_cmpeq_epi8(a, quote)) |
            (unsigned long long)(unsigned)_mm256_movemask_epi8(_mm256_cmpeq_epi8(b, quote)) << 32;
        while (mask) {
            const char *p = s + __builtin_ctzll(mask);
            if (starts((unsigned char)p[1]) && needle_at(p, end)) return p;
            mask &= mask - 1;
        }
        s += 64;
    }
    return find_needle_sse2(s, end);
}
#define HAVE_AVX2_PATH 1
#endif

static const char *(*find_needle)(const char *s, const char *end) = find_needle_sse2;

static const char *find_needle_sse2(const char *s, const char *end) {
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"');
    while (end - s >= 17) {
        __m128i a = _mm_loadu_si128((const __m128i *)s);
        unsigned mask = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(a, quote));
        while (mask) {
            int bit = __builtin_ctz(mask);
            const char *p = s + bit;
            if (starts((unsigned char)p[1]) && needle_at(p, end)) return p;
            mask &= mask - 1;
        }
        s += 16;
    }
#endif
    while (s < end && (s = memchr(s, '"', (size_t)(end - s))) != NULL) {
        if (s + 1 < end && starts((unsigned char)s[1]) && needle_at(s, end)) return s;
        s++;
    }
    return NULL;
}

PyDoc_STRVAR(collect_doc,
"collect(data: bytes, stop: int, base: int) -> list[tuple[int, bytes]]\n\n"
"(base + start, line) of each line of data[:stop] holding a needle, its newline kept\n"
"(codex._candidates_py).");

static PyObject *collect(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *block;
    Py_ssize_t stop, base;
    if (!PyArg_ParseTuple(args, "Snn", &block, &stop, &base)) return NULL;
    const char *data = PyBytes_AS_STRING(block);
    if (stop < 0 || stop > PyBytes_GET_SIZE(block)) {
        PyErr_SetString(PyExc_ValueError, "collect(): stop must lie in the block");
        return NULL;
    }
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    const char *from = data, *end = data + stop;
    while (from < end) {
        const char *hit = find_needle(from, end);
        if (hit == NULL) break;
        const char *newline = memrchr(from, '\n', (size_t)(hit - from));
        const char *start = newline != NULL ? newline + 1 : from;
        const char *after = memchr(hit, '\n', (size_t)(end - hit));
        const char *stop_at = after != NULL ? after + 1 : end;
        PyObject *item = Py_BuildValue("(ny#)", base + (start - data), start, stop_at - start);
        if (item == NULL || PyList_Append(out, item) < 0) {
            Py_XDECREF(item);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(item);
        from = stop_at;
    }
    return out;
}

/* ---- a token_count or turn_context line as Codex writes it, read in one pass -----------
 *
 * plain(line) answers only for the plain case: the whole line strict JSON of ASCII
 * with no escape, no exponent and no nesting past MAX_DEPTH; at the top "type":"event_msg",
 * a string "timestamp" and a "payload" object whose "type" is "token_count", with no
 * model, model_name, metadata or thread_settings; its "info" object with no model,
 * model_name or metadata and two usage objects of exactly Codex's names (with or without
 * cache_write_input_tokens), each value a plain integer below 10^19; no key the rules read
 * given twice. Then json.loads and orjson both read the line, and codex._token_count_line
 * would take it: it returns (timestamp, total, last, millis), each usage as (input, cached,
 * cache_write, output, reasoning, total_tokens) as recorded, millis the timestamp's epoch
 * milliseconds when it is in Codex's form (codex.parse_timestamp_ms's first case), else None. Or the same kind of line with
 * "type":"turn_context" at the top, a "payload" object with no model_name, metadata,
 * thread_settings or info, its "type", "model" and "cwd" strings when present, the top's
 * timestamp a string when present: (model, cwd), either None when absent, which is all
 * codex._session_line takes from it (and _session_line_ok passes it). Anything else: None,
 * and the Python rules decide (tests/agents/test_codex_conformance.py holds the two equal).
 * Both "type" members (the top's and, for token_count, the payload's) must be written
 * compactly ("type":"event_msg"): then codex.line_kind calls the line a session line at its
 * first check, and the caller need not ask it. */

#define MAX_DEPTH 64

typedef struct {
    const char *s, *end;
    int compact; /* the member being visited is written "key":value, no blank around the colon */
} cursor;

static inline void ws(cursor *c) {
    while (c->s < c->end && (*c->s == ' ' || *c->s == '\t' || *c->s == '\n' || *c->s == '\r'))
        c->s++;
}

/* A string at c->s ('"'); its contents in [*from, *to). -1: not a plain string. */
static int string(cursor *c, const char **from, const char **to) {
    const char *p = c->s + 1;
    while (p < c->end) {
        unsigned char ch = (unsigned char)*p;
        if (ch == '"') {
            *from = c->s + 1;
            *to = p;
            c->s = p + 1;
            return 0;
        }
        if (ch == '\\' || ch < 0x20 || ch >= 0x80) return -1;
        p++;
    }
    return -1;
}

static inline int is_digit(char ch) { return ch >= '0' && ch <= '9'; }

static int number(cursor *c) {
    const char *p = c->s;
    if (p < c->end && *p == '-') p++;
    if (p >= c->end || !is_digit(*p)) return -1;
    if (*p == '0') p++;
    else while (p < c->end && is_digit(*p)) p++;
    if (p < c->end && *p == '.') {
        p++;
        if (p >= c->end || !is_digit(*p)) return -1;
        while (p < c->end && is_digit(*p)) p++;
    }
    if (p < c->end && (*p == 'e' || *p == 'E')) return -1;
    c->s = p;
    return 0;
}

static int word(cursor *c, const char *text, size_t n) {
    if ((size_t)(c->end - c->s) < n || memcmp(c->s, text, n) != 0) return -1;
    c->s += n;
    return 0;
}

static int value(cursor *c, int depth);

/* An object or array at c->s, skipped. */
static int container(cursor *c, int depth) {
    if (depth > MAX_DEPTH) return -1;
    char close = *c->s == '{' ? '}' : ']';
    int object = close == '}';
    c->s++;
    ws(c);
    if (c->s < c->end && *c->s == close) {
        c->s++;
        return 0;
    }
    for (;;) {
        if (object) {
            const char *a, *b;
            if (c->s >= c->end || *c->s != '"' || string(c, &a, &b) < 0) return -1;
            ws(c);
            if (c->s >= c->end || *c->s != ':') return -1;
            c->s++;
            ws(c);
        }
        if (value(c, depth + 1) < 0) return -1;
        ws(c);
        if (c->s >= c->end) return -1;
        if (*c->s == ',') {
            c->s++;
            ws(c);
            continue;
        }
        if (*c->s != close) return -1;
        c->s++;
        return 0;
    }
}

static int value(cursor *c, int depth) {
    if (c->s >= c->end) return -1;
    const char *a, *b;
    switch (*c->s) {
    case '"': return string(c, &a, &b);
    case '{': case '[': return container(c, depth);
    case 't': return word(c, "true", 4);
    case 'f': return word(c, "false", 5);
    case 'n': return word(c, "null", 4);
    default: return number(c);
    }
}

static inline int key_is(const char *a, const char *b, const char *name) {
    size_t n = strlen(name);
    return (size_t)(b - a) == n && memcmp(a, name, n) == 0;
}

/* Walks an object at c->s (after ws): for each key, calls visit(key, c, depth, ctx), which
 * reads the value and returns 0, or -1 to give up. */
typedef int (*visitor)(const char *a, const char *b, cursor *c, int depth, void *ctx);

static int members(cursor *c, int depth, visitor visit, void *ctx) {
    if (depth > MAX_DEPTH || c->s >= c->end || *c->s != '{') return -1;
    c->s++;
    ws(c);
    if (c->s < c->end && *c->s == '}') {
        c->s++;
        return 0;
    }
    for (;;) {
        const char *a, *b;
        if (c->s >= c->end || *c->s != '"' || string(c, &a, &b) < 0) return -1;
        const char *colon = c->s;
        ws(c);
        if (c->s >= c->end || *c->s != ':') return -1;
        c->compact = c->s == colon;
        c->s++;
        colon = c->s;
        ws(c);
        c->compact = c->compact && c->s == colon;
        if (visit(a, b, c, depth + 1, ctx) < 0) return -1;
        ws(c);
        if (c->s >= c->end) return -1;
        if (*c->s == ',') {
            c->s++;
            ws(c);
            continue;
        }
        if (*c->s != '}') return -1;
        c->s++;
        return 0;
    }
}

static const char *const USAGE_NAMES[6] = {
    "input_tokens", "cached_input_tokens", "cache_write_input_tokens",
    "output_tokens", "reasoning_output_tokens", "total_tokens",
};

typedef struct { unsigned long long n[6]; int seen; } usage;

#define LENGTH(text) (sizeof(text) - 1)
static const size_t USAGE_LENGTHS[6] = {
    LENGTH("input_tokens"), LENGTH("cached_input_tokens"), LENGTH("cache_write_input_tokens"),
    LENGTH("output_tokens"), LENGTH("reasoning_output_tokens"), LENGTH("total_tokens"),
};
#undef LENGTH

static int usage_member(const char *a, const char *b, cursor *c, int depth, void *ctx) {
    (void)depth;
    usage *u = ctx;
    size_t n = (size_t)(b - a);
    for (int i = 0; i < 6; i++) {
        if (n != USAGE_LENGTHS[i] || memcmp(a, USAGE_NAMES[i], n) != 0) continue;
        if (u->seen & (1 << i)) return -1;
        u->seen |= 1 << i;
        const char *p = c->s;
        unsigned long long n = 0;
        int count = 0;
        while (p < c->end && is_digit(*p)) {
            n = n * 10 + (unsigned long long)(*p - '0');
            p++;
            count++;
        }
        if (count == 0 || count > 19 || (count > 1 && *c->s == '0')) return -1;
        if (p < c->end && (*p == '.' || *p == 'e' || *p == 'E')) return -1;
        u->n[i] = n;
        c->s = p;
        return 0;
    }
    return -1; /* a name Codex does not write: the rules in Python */
}

static int read_usage(cursor *c, int depth, usage *u) {
    memset(u, 0, sizeof *u);
    if (members(c, depth, usage_member, u) < 0) return -1;
    return (u->seen == 0x3b || u->seen == 0x3f) ? 0 : -1; /* all five, cache writes or not */
}

typedef struct { usage total, last; int seen; } info_fields;

static int info_member(const char *a, const char *b, cursor *c, int depth, void *ctx) {
    info_fields *f = ctx;
    if (key_is(a, b, "total_token_usage") || key_is(a, b, "last_token_usage")) {
        int which = key_is(a, b, "total_token_usage") ? 1 : 2;
        if (f->seen & which) return -1;
        f->seen |= which;
        return read_usage(c, depth, which == 1 ? &f->total : &f->last);
    }
    if (key_is(a, b, "model") || key_is(a, b, "model_name") || key_is(a, b, "metadata"))
        return -1;
    return value(c, depth);
}

/* payload's seen bits */
#define P_TYPE 1
#define P_INFO 2
#define P_MODEL 4
#define P_CWD 8
typedef struct {
    info_fields info;
    const char *type, *type_end, *model, *model_end, *cwd, *cwd_end;
    int seen, type_compact;
} payload_fields;

static int text_once(cursor *c, int *seen, int bit, const char **from, const char **to) {
    if ((*seen & bit) || c->s >= c->end || *c->s != '"') return -1;
    *seen |= bit;
    return string(c, from, to);
}

static int payload_member(const char *a, const char *b, cursor *c, int depth, void *ctx) {
    payload_fields *f = ctx;
    if (key_is(a, b, "type")) {
        f->type_compact = c->compact;
        return text_once(c, &f->seen, P_TYPE, &f->type, &f->type_end);
    }
    if (key_is(a, b, "model")) return text_once(c, &f->seen, P_MODEL, &f->model, &f->model_end);
    if (key_is(a, b, "cwd")) return text_once(c, &f->seen, P_CWD, &f->cwd, &f->cwd_end);
    if (key_is(a, b, "info")) {
        if (f->seen & P_INFO) return -1;
        f->seen |= P_INFO;
        return members(c, depth, info_member, &f->info);
    }
    if (key_is(a, b, "model_name") || key_is(a, b, "metadata") || key_is(a, b, "thread_settings"))
        return -1;
    return value(c, depth);
}

#define T_TYPE 1
#define T_STAMP 2
#define T_PAYLOAD 4
typedef struct {
    payload_fields payload;
    const char *type, *type_end, *stamp, *stamp_end;
    int seen, type_compact;
} top_fields;

static int top_member(const char *a, const char *b, cursor *c, int depth, void *ctx) {
    top_fields *f = ctx;
    if (key_is(a, b, "type")) {
        f->type_compact = c->compact;
        if (text_once(c, &f->seen, T_TYPE, &f->type, &f->type_end) < 0) return -1;
        /* no other kind of line is read here: give up at once */
        return key_is(f->type, f->type_end, "event_msg") ||
                       key_is(f->type, f->type_end, "turn_context")
                   ? 0
                   : -1;
    }
    if (key_is(a, b, "timestamp")) return text_once(c, &f->seen, T_STAMP, &f->stamp, &f->stamp_end);
    if (key_is(a, b, "payload")) {
        if (f->seen & T_PAYLOAD) return -1;
        f->seen |= T_PAYLOAD;
        return members(c, depth, payload_member, &f->payload);
    }
    return value(c, depth);
}

/* Epoch milliseconds of YYYY-MM-DDTHH:MM:SS.mmmZ (the form Codex writes), read as
 * codex.parse_timestamp_ms reads it, in *out; 0 for any other text, or no real date and time
 * (a time before 1970 is negative: no value is free to say "none"). */
static int zulu_ms(const char *p, const char *end, long long *out) {
    if (end - p != 24 || p[4] != '-' || p[7] != '-' || p[10] != 'T' || p[13] != ':' ||
        p[16] != ':' || p[19] != '.' || p[23] != 'Z')
        return 0;
    static const int at[] = {0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18, 20, 21, 22};
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++)
        if (!is_digit(p[at[i]])) return 0;
#define NUM2(i) ((p[i] - '0') * 10 + (p[(i) + 1] - '0'))
    long long year = NUM2(0) * 100 + NUM2(2), month = NUM2(5), day = NUM2(8);
    long long hour = NUM2(11), minute = NUM2(14), second = NUM2(17);
    long long millis = (p[20] - '0') * 100 + NUM2(21);
#undef NUM2
    static const int month_days[13] = {0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    if (year < 1 || month < 1 || month > 12 || day < 1 ||
        day > month_days[month] + (month == 2 && leap) || hour > 23 || minute > 59 || second > 59)
        return 0;
    /* days from civil (proleptic Gregorian), as datetime.date counts them */
    long long y = year - (month <= 2);
    long long era = (y >= 0 ? y : y - 399) / 400;
    long long yoe = y - era * 400;
    long long doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
    long long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    long long days = era * 146097 + doe - 719468;
    *out = (((days * 24 + hour) * 60 + minute) * 60 + second) * 1000 + millis;
    return 1;
}

static PyObject *usage_tuple(const usage *u) {
    return Py_BuildValue("(KKKKKK)", u->n[0], u->n[1], u->n[2], u->n[3], u->n[4], u->n[5]);
}

static PyObject *text(int has, const char *from, const char *to) {
    if (!has) Py_RETURN_NONE;
    return PyUnicode_DecodeASCII(from, to - from, NULL);
}

PyDoc_STRVAR(plain_doc,
"plain(line: bytes) -> tuple | None\n\n"
"A plain token_count line: (timestamp, total, last, its epoch milliseconds when it is in\n"
"Codex's form, else None); a plain turn_context line: (model,\n"
"cwd), either None when absent (see the comment in the source); None for any other line.");

/* 1: a plain token_count line, 2: a plain turn_context line, 0: any other line (see the
 * comment above); *f holds what was read. */
static int plain_kind(const char *s, const char *end, top_fields *f) {
    cursor c = {s, end, 0};
    memset(f, 0, sizeof *f);
    ws(&c);
    if (members(&c, 0, top_member, f) < 0) return 0;
    ws(&c);
    payload_fields *p = &f->payload;
    /* written compactly, the types are what codex.line_kind finds first: a session line */
    if (c.s != c.end || !(f->seen & T_TYPE) || !(f->seen & T_PAYLOAD) || !f->type_compact)
        return 0;
    if (key_is(f->type, f->type_end, "event_msg")) {
        if (!(f->seen & T_STAMP) || (p->seen & (P_TYPE | P_INFO | P_MODEL)) != (P_TYPE | P_INFO) ||
            !key_is(p->type, p->type_end, "token_count") || !p->type_compact || p->info.seen != 3)
            return 0;
        return 1;
    }
    if (key_is(f->type, f->type_end, "turn_context")) return (p->seen & P_INFO) ? 0 : 2;
    return 0;
}

static PyObject *plain(PyObject *self, PyObject *arg) {
    (void)self;
    if (!PyBytes_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "plain() takes bytes");
        return NULL;
    }
    top_fields f;
    const char *s = PyBytes_AS_STRING(arg);
    int kind = plain_kind(s, s + PyBytes_GET_SIZE(arg), &f);
    payload_fields *p = &f.payload;
    if (kind == 1) {
        PyObject *total = usage_tuple(&p->info.total), *last = usage_tuple(&p->info.last);
        PyObject *stamp = text(1, f.stamp, f.stamp_end);
        if (total == NULL || last == NULL || stamp == NULL) {
            Py_XDECREF(total);
            Py_XDECREF(last);
            Py_XDECREF(stamp);
            return NULL;
        }
        long long millis = 0;
        PyObject *ms = zulu_ms(f.stamp, f.stamp_end, &millis) ? PyLong_FromLongLong(millis)
                                                               : Py_NewRef(Py_None);
        if (ms == NULL) {
            Py_DECREF(total);
            Py_DECREF(last);
            Py_DECREF(stamp);
            return NULL;
        }
        return Py_BuildValue("(NNNN)", stamp, total, last, ms);
    }
    if (kind == 2) {
        PyObject *model = text(p->seen & P_MODEL, p->model, p->model_end);
        PyObject *cwd = text(p->seen & P_CWD, p->cwd, p->cwd_end);
        if (model == NULL || cwd == NULL) {
            Py_XDECREF(model);
            Py_XDECREF(cwd);
            return NULL;
        }
        return Py_BuildValue("(NN)", model, cwd);
    }
    Py_RETURN_NONE;
}

/* ---- the plain lines of a chunk taken whole, state and all -----------------------------
 *
 * advance() walks the lines collect() would find, from `pos` on, and takes each plain line
 * (plain() answers for it) the way codex._plain_line_read and the rules behind it take it:
 * a turn_context sets the FileState's model and cwd; a token_count runs _recorded (total
 * recomputed when 0, then Usage.normalised) on both usage objects, appends the first two
 * stamps, takes turn_usage's result (last_token_usage when the running total moved, else
 * Usage.minus of the totals), sets previous_totals and appends _count's Event with
 * _resolve_model's model. It hands back (next_pos, offset, line) at the first line it does
 * not take, for the rules in Python: any other line, a timestamp not in Codex's own form,
 * a model that would be resolved as codex-auto-review, a previous total that is no six
 * u64s, a total past u64. codex.parse_file calls it only while every rule it repeats is the
 * module's own (a knock-out that patches one turns it off), and
 * tests/agents/test_codex_conformance.py holds its FileState equal to the rules'. */

typedef unsigned long long u64;

static int u64_of(PyObject *v, u64 *out) {
    if (!PyLong_CheckExact(v)) return 0;
    u64 n = PyLong_AsUnsignedLongLong(v);
    if (n == (u64)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    *out = n;
    return 1;
}

/* _recorded: total recomputed (0 when input + output is not), then normalised; 0 when the
 * sum passes u64 (the rules in Python then decide). */
static int recorded(u64 n[6]) {
    if (n[5] == 0 && (n[0] | n[3]) != 0 && __builtin_add_overflow(n[0], n[3], &n[5])) return 0;
    return 1;
}

static void normalise(u64 n[6]) {
    if (n[1] > n[0]) n[1] = n[0];
    if (n[2] > n[0] - n[1]) n[2] = n[0] - n[1];
}

/* A tuple subclass (Usage, Event) of `n` new references; they are released on failure. */
static PyObject *made(PyTypeObject *type, Py_ssize_t n, PyObject **items) {
    for (Py_ssize_t i = 0; i < n; i++)
        if (items[i] == NULL) {
            for (Py_ssize_t j = 0; j < n; j++) Py_XDECREF(items[j]);
            return NULL;
        }
    PyObject *out = type->tp_alloc(type, n);
    if (out == NULL) {
        for (Py_ssize_t j = 0; j < n; j++) Py_DECREF(items[j]);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) PyTuple_SET_ITEM(out, i, items[i]);
    return out;
}

static PyObject *usage_of(PyTypeObject *type, const u64 n[6]) {
    PyObject *items[6];
    for (int i = 0; i < 6; i++) items[i] = PyLong_FromUnsignedLongLong(n[i]);
    return made(type, 6, items);
}

typedef struct {
    PyObject *state, *events, *stamps, *tier, *model, *cwd;
    PyTypeObject *usage_type, *event_type;
    u64 previous[6];
    int has_previous, previous_known, model_set, cwd_set, previous_set;
} walk;

static int write_back(walk *w) {
    int bad = 0;
    if (w->model_set) bad |= PyObject_SetAttrString(w->state, "model", w->model) < 0;
    if (w->cwd_set && !bad) bad |= PyObject_SetAttrString(w->state, "cwd", w->cwd) < 0;
    if (w->previous_set && !bad) {
        PyObject *total = usage_of(w->usage_type, w->previous);
        bad = total == NULL || PyObject_SetAttrString(w->state, "previous_totals", total) < 0;
        Py_XDECREF(total);
    }
    return bad ? -1 : 0;
}

static void let_go(walk *w) {
    Py_XDECREF(w->events);
    Py_XDECREF(w->stamps);
    Py_XDECREF(w->tier);
    Py_XDECREF(w->model);
    Py_XDECREF(w->cwd);
}

/* Takes one plain token_count line; 0: not taken (nothing changed), -1: an error. */
static int count(walk *w, const top_fields *f, const char *line, const char *data,
                 Py_ssize_t base, PyObject *fallback, PyObject *auto_review) {
    long long millis;
    if (!w->previous_known || !zulu_ms(f->stamp, f->stamp_end, &millis)) return 0;
    PyObject *model = w->model == Py_None ? fallback : w->model;
    int review = PyObject_RichCompareBool(model, auto_review, Py_EQ);
    if (review != 0) return review < 0 ? -1 : 0;
    u64 total[6], last[6], turn[6];
    memcpy(total, f->payload.info.total.n, sizeof total);
    memcpy(last, f->payload.info.last.n, sizeof last);
    if (!recorded(total) || !recorded(last)) return 0;
    normalise(total);
    normalise(last);
    if (PyList_GET_SIZE(w->stamps) < 2) {
        PyObject *stamp = PyLong_FromLongLong(millis);
        int bad = stamp == NULL || PyList_Append(w->stamps, stamp) < 0;
        Py_XDECREF(stamp);
        if (bad) return -1;
    }
    if (!w->has_previous || memcmp(w->previous, total, sizeof total) != 0) {
        memcpy(turn, last, sizeof turn);
    } else {
        for (int i = 0; i < 6; i++) turn[i] = total[i] > w->previous[i] ? total[i] - w->previous[i] : 0;
        normalise(turn);
    }
    memcpy(w->previous, total, sizeof total);
    w->has_previous = w->previous_set = 1;
    if (!(turn[0] | turn[1] | turn[2] | turn[3] | turn[4])) return 1;
    if (w->model == Py_None) {
        Py_SETREF(w->model, Py_NewRef(fallback));
        w->model_set = 1;
    }
    PyObject *items[7] = {
        PyUnicode_DecodeASCII(f->stamp, f->stamp_end - f->stamp, NULL),
        Py_NewRef(w->model),
        usage_of(w->usage_type, turn),
        Py_NewRef(w->tier),
        PyLong_FromSsize_t(base + (line - data)),
        Py_NewRef(Py_False),
        PyLong_FromLongLong(millis),
    };
    PyObject *event = made(w->event_type, 7, items);
    if (event == NULL) return -1;
    int bad = PyList_Append(w->events, event) < 0;
    Py_DECREF(event);
    return bad ? -1 : 1;
}

/* Takes one plain turn_context line. */
static int turn(walk *w, const top_fields *f) {
    const payload_fields *p = &f->payload;
    if (p->seen & P_MODEL) {
        const char *a = p->model, *b = p->model_end; /* str.strip(): ASCII here, so blanks */
        while (a < b && *a == ' ') a++;
        while (b > a && b[-1] == ' ') b--;
        if (a < b) {
            PyObject *model = PyUnicode_DecodeASCII(a, b - a, NULL);
            if (model == NULL) return -1;
            Py_SETREF(w->model, model);
            w->model_set = 1;
        }
    }
    if (p->seen & P_CWD) {
        PyObject *cwd = PyUnicode_DecodeASCII(p->cwd, p->cwd_end - p->cwd, NULL);
        if (cwd == NULL) return -1;
        Py_XSETREF(w->cwd, cwd);
        w->cwd_set = 1;
    }
    return 1;
}

PyDoc_STRVAR(advance_doc,
"advance(data, stop, base, pos, state, usage_type, event_type, fallback, auto_review)\n"
"    -> tuple[int, int, bytes] | None\n\n"
"Takes the plain lines of data[pos:stop] into state (a codex.FileState) as the rules\n"
"take them, up to the first line it does not take: (where to go on, base + its start,\n"
"the line); None at stop. See the comment in the source.");

static PyObject *advance(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 9 || !PyBytes_Check(args[0]) || !PyType_Check(args[5]) ||
        !PyType_IsSubtype((PyTypeObject *)args[5], &PyTuple_Type) || !PyType_Check(args[6]) ||
        !PyType_IsSubtype((PyTypeObject *)args[6], &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError,
                        "advance() takes bytes, three ints, a state and two tuple types, two models");
        return NULL;
    }
    Py_ssize_t size = PyBytes_GET_SIZE(args[0]);
    Py_ssize_t stop = PyLong_AsSsize_t(args[1]), base = PyLong_AsSsize_t(args[2]);
    Py_ssize_t pos = PyLong_AsSsize_t(args[3]);
    if (PyErr_Occurred()) return NULL;
    if (stop < 0 || stop > size || pos < 0 || pos > stop) {
        PyErr_SetString(PyExc_ValueError, "advance(): pos <= stop must lie in the block");
        return NULL;
    }
    walk w;
    memset(&w, 0, sizeof w);
    w.state = args[4];
    w.usage_type = (PyTypeObject *)args[5];
    w.event_type = (PyTypeObject *)args[6];
    PyObject *previous = NULL, *out = NULL;
    w.events = PyObject_GetAttrString(w.state, "events");
    w.stamps = PyObject_GetAttrString(w.state, "usage_stamps");
    w.tier = PyObject_GetAttrString(w.state, "tier");
    w.model = PyObject_GetAttrString(w.state, "model");
    previous = PyObject_GetAttrString(w.state, "previous_totals");
    if (w.events == NULL || w.stamps == NULL || w.tier == NULL || w.model == NULL ||
        previous == NULL)
        goto done;
    if (!PyList_Check(w.events) || !PyList_Check(w.stamps)) {
        PyErr_SetString(PyExc_TypeError, "advance(): a state's events and stamps are lists");
        goto done;
    }
    w.previous_known = previous == Py_None;
    if (PyTuple_Check(previous) && PyTuple_GET_SIZE(previous) == 6) {
        w.previous_known = w.has_previous = 1;
        for (int i = 0; i < 6; i++)
            w.previous_known &= u64_of(PyTuple_GET_ITEM(previous, i), &w.previous[i]);
    }
    const char *data = PyBytes_AS_STRING(args[0]), *from = data + pos, *end = data + stop;
    while (from < end) {
        const char *hit = find_needle(from, end);
        if (hit == NULL) break;
        const char *newline = memrchr(from, '\n', (size_t)(hit - from));
        const char *start = newline != NULL ? newline + 1 : from;
        const char *after = memchr(hit, '\n', (size_t)(end - hit));
        const char *stop_at = after != NULL ? after + 1 : end;
        top_fields f;
        int kind = plain_kind(start, stop_at, &f), took = 0;
        if (kind == 1) took = count(&w, &f, start, data, base, args[7], args[8]);
        else if (kind == 2) took = turn(&w, &f);
        if (took < 0) goto done;
        if (!took) {
            if (write_back(&w) == 0)
                out = Py_BuildValue("(nny#)", (Py_ssize_t)(stop_at - data), base + (start - data),
                                    start, (Py_ssize_t)(stop_at - start));
            goto done;
        }
        from = stop_at;
    }
    if (write_back(&w) == 0) out = Py_NewRef(Py_None);
done:
    Py_XDECREF(previous);
    let_go(&w);
    return out;
}
/* ---- the dedup key and the record, made without Python bytecode ------------------------
 *
 * codex._key_py hashes "millis|model|input|cached|cache_write|output|reasoning|total" with
 * SHA-256 and keeps the first 16 bytes in hex; key() does the same with the SHA-256 below
 * (FIPS 180-4, written for this file; tests/agents/test_codex_conformance.py holds it equal
 * to hashlib's on random inputs and to _key_py on random events). A knock-out that patches
 * codex._key replaces this function too. */

#include <stdint.h>
#ifdef Py_T_OBJECT_EX /* 3.12 on */
#define FIELD_OBJECT Py_T_OBJECT_EX
#else
#include <structmember.h>
#define FIELD_OBJECT T_OBJECT_EX
#endif

static const uint32_t SHA_K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha_block(uint32_t h[8], const unsigned char *p) {
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | (uint32_t)p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = k + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) + SHA_K[i] + w[i];
        uint32_t t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        k = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += k;
}

/* With the CPU's SHA extensions (SHA-NI, checked at import), the same compression: four
 * rounds a step, the message schedule by sha256msg1/msg2 (Intel's published sequence). */
#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
__attribute__((target("sha,sse4.1"))) static void sha_block_ni(uint32_t h[8],
                                                               const unsigned char *p) {
    const __m128i order = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
    __m128i tmp = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[0]), 0xB1); /* CDAB */
    __m128i state1 = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[4]), 0x1B);
    __m128i state0 = _mm_alignr_epi8(tmp, state1, 8);    /* ABEF */
    state1 = _mm_blend_epi16(state1, tmp, 0xF0);          /* CDGH */
    __m128i abef = state0, cdgh = state1, words[4];
    for (int g = 0; g < 16; g++) {
        if (g < 4)
            words[g] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * g)), order);
        __m128i w = words[g & 3];
        __m128i msg = _mm_add_epi32(w, _mm_loadu_si128((const __m128i *)&SHA_K[4 * g]));
        state1 = _mm_sha256rnds2_epu32(state1, state0, msg);
        if (g >= 3 && g <= 14) {
            __m128i next = _mm_add_epi32(words[(g + 1) & 3],
                                         _mm_alignr_epi8(w, words[(g - 1) & 3], 4));
            words[(g + 1) & 3] = _mm_sha256msg2_epu32(next, w);
        }
        state0 = _mm_sha256rnds2_epu32(state0, state1, _mm_shuffle_epi32(msg, 0x0E));
        if (g >= 1 && g <= 12) words[(g - 1) & 3] = _mm_sha256msg1_epu32(words[(g - 1) & 3], w);
    }
    state0 = _mm_add_epi32(state0, abef);
    state1 = _mm_add_epi32(state1, cdgh);
    tmp = _mm_shuffle_epi32(state0, 0x1B);               /* FEBA */
    state1 = _mm_shuffle_epi32(state1, 0xB1);            /* DCHG */
    _mm_storeu_si128((__m128i *)&h[0], _mm_blend_epi16(tmp, state1, 0xF0)); /* DCBA */
    _mm_storeu_si128((__m128i *)&h[4], _mm_alignr_epi8(state1, tmp, 8));    /* HGFE */
}

static int cpu_has_sha(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(b & (1u << 29))) return 0;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    return (c & (1u << 19)) != 0; /* SSE4.1 */
}
#define HAVE_SHA_NI_PATH 1
#endif

static void (*sha_compress)(uint32_t h[8], const unsigned char *p) = sha_block;

static void sha256(const unsigned char *data, size_t n, unsigned char out[32]) {
    uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                     0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    size_t done = 0;
    for (; n - done >= 64; done += 64) sha_compress(h, data + done);
    unsigned char tail[128] = {0};
    size_t rest = n - done, size = rest + 9 <= 64 ? 64 : 128;
    memcpy(tail, data + done, rest);
    tail[rest] = 0x80;
    uint64_t bits = (uint64_t)n * 8;
    for (int i = 0; i < 8; i++) tail[size - 1 - i] = (unsigned char)(bits >> (8 * i));
    sha_compress(h, tail);
    if (size == 128) sha_compress(h, tail + 64);
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (unsigned char)(h[i] >> 24);
        out[4 * i + 1] = (unsigned char)(h[i] >> 16);
        out[4 * i + 2] = (unsigned char)(h[i] >> 8);
        out[4 * i + 3] = (unsigned char)h[i];
    }
}

PyDoc_STRVAR(sha256_doc,
"sha256(data: bytes) -> bytes\n\n"
"The SHA-256 digest of data (hashlib.sha256(data).digest(); key() hashes with it).");

static PyObject *sha256_py(PyObject *self, PyObject *arg) {
    (void)self;
    if (!PyBytes_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "sha256() takes bytes");
        return NULL;
    }
    unsigned char out[32];
    sha256((const unsigned char *)PyBytes_AS_STRING(arg), (size_t)PyBytes_GET_SIZE(arg), out);
    return PyBytes_FromStringAndSize((const char *)out, 32);
}

/* Appends f"{value}" to a growing buffer (first `space`, on the stack; then the heap): a
 * plain int in digits, anything else by format(). */
typedef struct { char *p, *space; size_t n, cap; } text_buf;

static int put(text_buf *t, const char *s, size_t n) {
    if (t->n + n > t->cap) {
        size_t cap = (t->n + n) * 2;
        char *p = t->p == t->space ? PyMem_Malloc(cap) : PyMem_Realloc(t->p, cap);
        if (p == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        if (t->p == t->space) memcpy(p, t->space, t->n);
        t->p = p, t->cap = cap;
    }
    memcpy(t->p + t->n, s, n);
    t->n += n;
    return 0;
}

static int put_value(text_buf *t, PyObject *v) {
    if (PyLong_CheckExact(v)) {
        int overflow = 0;
        long long n = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (!overflow && !(n == -1 && PyErr_Occurred())) {
            char digits[24], *end = digits + sizeof digits, *p = end;
            unsigned long long u = n < 0 ? 0ULL - (unsigned long long)n : (unsigned long long)n;
            do {
                *--p = (char)('0' + u % 10);
                u /= 10;
            } while (u);
            if (n < 0) *--p = '-';
            return put(t, p, (size_t)(end - p));
        }
        PyErr_Clear();
    }
    PyObject *s = PyObject_Format(v, NULL);
    if (s == NULL) return -1;
    Py_ssize_t len;
    const char *u = PyUnicode_AsUTF8AndSize(s, &len);
    int r = u == NULL ? -1 : put(t, u, (size_t)len);
    Py_DECREF(s);
    return r;
}

PyDoc_STRVAR(key_doc,
"key(event: tuple, millis: int) -> str\n\n"
"codex._key_py(event, millis): \"codex:\" and the first 32 hex digits of the SHA-256 of\n"
"f\"{millis}|{model}|{input}|{cached}|{cache_write}|{output}|{reasoning}|{total}\".");

static PyObject *key_of(PyObject *event, PyObject *millis) {
    if (!PyTuple_Check(event) || PyTuple_GET_SIZE(event) < 3) {
        PyErr_SetString(PyExc_TypeError, "key() takes an event and its millis");
        return NULL;
    }
    PyObject *model = PyTuple_GET_ITEM(event, 1), *usage = PyTuple_GET_ITEM(event, 2);
    if (!PyTuple_Check(usage) || PyTuple_GET_SIZE(usage) != 6) {
        PyErr_SetString(PyExc_TypeError, "key(): an event's usage has six numbers");
        return NULL;
    }
    char space[160];
    text_buf t = {space, space, 0, sizeof space};
    int bad = put_value(&t, millis) < 0 || put(&t, "|", 1) < 0 || put_value(&t, model) < 0;
    for (int i = 0; i < 6 && !bad; i++)
        bad = put(&t, "|", 1) < 0 || put_value(&t, PyTuple_GET_ITEM(usage, i)) < 0;
    unsigned char digest[32];
    if (!bad) sha256((const unsigned char *)t.p, t.n, digest);
    if (t.p != space) PyMem_Free(t.p);
    if (bad) return NULL;
    static const char hex[] = "0123456789abcdef";
    char out[6 + 32];
    memcpy(out, "codex:", 6);
    for (int i = 0; i < 16; i++) {
        out[6 + 2 * i] = hex[digest[i] >> 4];
        out[7 + 2 * i] = hex[digest[i] & 15];
    }
    return PyUnicode_DecodeASCII(out, sizeof out, NULL);
}

static PyObject *key(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "key() takes an event and its millis");
        return NULL;
    }
    return key_of(args[0], args[1]);
}

/* record(): a codex.CodexUsage with its fields set as object.__setattr__ sets them (what
 * the frozen dataclass's __init__ does, without a Python call per field). record_class()
 * names the class and its fields in order once, at import. */
static PyObject *record_type, *record_names;
/* Where each field's slot lies in a record, when every field is a plain object slot (a
 * member descriptor, as a slots dataclass has): record() then stores into the slots as
 * object.__setattr__ would, without looking the names up. 0: set by name. */
#define MAX_FIELDS 32
static Py_ssize_t record_offsets[MAX_FIELDS];
static int record_direct;

PyDoc_STRVAR(record_class_doc,
"record_class(cls: type, names: tuple[str, ...]) -> bool\n\n"
"The class record() makes and its fields, in the order record() takes them; whether\n"
"record() stores into their slots directly (else it sets them by name).");

static PyObject *record_class(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 2 || !PyType_Check(args[0]) || !PyTuple_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "record_class() takes a class and a tuple of names");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args[1]); i++)
        if (!PyUnicode_Check(PyTuple_GET_ITEM(args[1], i))) {
            PyErr_SetString(PyExc_TypeError, "record_class(): names are strings");
            return NULL;
        }
    Py_XSETREF(record_type, Py_NewRef(args[0]));
    Py_XSETREF(record_names, Py_NewRef(args[1]));
    Py_ssize_t n = PyTuple_GET_SIZE(args[1]);
    record_direct = n <= MAX_FIELDS && !((PyTypeObject *)args[0])->tp_dictoffset;
    for (Py_ssize_t i = 0; i < n && record_direct; i++) {
        /* the class's attribute of that name: its member descriptor, for a slot */
        PyObject *found = PyObject_GetAttr(args[0], PyTuple_GET_ITEM(args[1], i));
        if (found == NULL) PyErr_Clear();
        record_direct = found != NULL && Py_IS_TYPE(found, &PyMemberDescr_Type) &&
                        PyType_IsSubtype((PyTypeObject *)args[0],
                                         ((PyMemberDescrObject *)found)->d_common.d_type);
        if (record_direct) {
            PyMemberDef *member = ((PyMemberDescrObject *)found)->d_member;
            record_direct = member->type == FIELD_OBJECT && member->offset > 0;
            record_offsets[i] = member->offset;
        }
        Py_XDECREF(found);
    }
    return PyBool_FromLong(record_direct);
}

PyDoc_STRVAR(record_doc,
"record(*values) -> CodexUsage\n\n"
"The record_class() class with its fields, in order, set to values (its __init__'s result).");

static PyObject *new_record(PyObject *const *args, Py_ssize_t nargs) {
    if (record_type == NULL || nargs != PyTuple_GET_SIZE(record_names)) {
        PyErr_SetString(PyExc_TypeError, "record(): one value per field of record_class()");
        return NULL;
    }
    PyTypeObject *type = (PyTypeObject *)record_type;
    PyObject *made = type->tp_alloc(type, 0);
    if (made == NULL) return NULL;
    if (record_direct) {
        for (Py_ssize_t i = 0; i < nargs; i++)
            *(PyObject **)((char *)made + record_offsets[i]) = Py_NewRef(args[i]);
        return made;
    }
    for (Py_ssize_t i = 0; i < nargs; i++)
        if (PyObject_GenericSetAttr(made, PyTuple_GET_ITEM(record_names, i), args[i]) < 0) {
            Py_DECREF(made);
            return NULL;
        }
    return made;
}

static PyObject *record(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    return new_record(args, nargs);
}

/* assemble(): codex.read_files's loop over one rollout's events, for the events it covers
 * alone: a time known (millis read by C), no mtime stamp, a key not kept yet. For each it
 * makes the key (key()) and the record (record(): agent, key, millis / 1000, session,
 * project, model, input - cached - cache_write, output, cached, cache_write, None, the
 * recorded tier or the default) and keeps [record, tier, default] under the key. It
 * returns the index of the first event it does not cover (read_files takes that one in
 * Python), or None at the end. read_files calls it only while codex._key and
 * codex._record are these functions. */
PyDoc_STRVAR(assemble_doc,
"assemble(events, start, kept, agent, session, project, default_fast) -> int | None\n\n"
"read_files's loop over events[start:], up to the first event it leaves to Python\n"
"(its index; None at the end). See the comment in the source.");

static PyObject *assemble(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 7 || !PyList_Check(args[0]) || !PyDict_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "assemble() takes a list, an int, a dict and four values");
        return NULL;
    }
    PyObject *events = args[0], *kept = args[2], *default_fast = args[6];
    Py_ssize_t index = PyLong_AsSsize_t(args[1]);
    if (index == -1 && PyErr_Occurred()) return NULL;
    for (; index >= 0 && index < PyList_GET_SIZE(events); index++) {
        PyObject *event = PyList_GET_ITEM(events, index);
        if (!PyTuple_Check(event) || PyTuple_GET_SIZE(event) != 7) break;
        PyObject *millis = PyTuple_GET_ITEM(event, 6), *usage = PyTuple_GET_ITEM(event, 2);
        if (!PyLong_CheckExact(millis) || PyTuple_GET_ITEM(event, 5) != Py_False) break;
        if (!PyTuple_Check(usage) || PyTuple_GET_SIZE(usage) != 6) break;
        long long ms = PyLong_AsLongLong(millis);
        if (ms == -1 && PyErr_Occurred()) return NULL;
        if (ms > (1LL << 53) || ms < -(1LL << 53)) break;
        PyObject *ident = key_of(event, millis);
        if (ident == NULL) return NULL;
        int seen = PyDict_Contains(kept, ident);
        if (seen != 0) {
            Py_DECREF(ident);
            if (seen < 0) return NULL;
            break;
        }
        PyObject *tier = PyTuple_GET_ITEM(event, 3);
        PyObject *cached = PyTuple_GET_ITEM(usage, 1), *write = PyTuple_GET_ITEM(usage, 2);
        PyObject *stamp = PyFloat_FromDouble((double)ms / 1000.0);
        PyObject *part = PyNumber_Subtract(PyTuple_GET_ITEM(usage, 0), cached);
        PyObject *fresh = part == NULL ? NULL : PyNumber_Subtract(part, write);
        Py_XDECREF(part);
        PyObject *entry = NULL;
        if (stamp != NULL && fresh != NULL) {
            PyObject *values[12] = {
                args[3], ident, stamp, args[4], args[5], PyTuple_GET_ITEM(event, 1), fresh,
                PyTuple_GET_ITEM(usage, 3), cached, write, Py_None,
                tier == Py_None ? default_fast : tier,
            };
            entry = new_record(values, 12);
        }
        Py_XDECREF(stamp);
        Py_XDECREF(fresh);
        PyObject *first = entry == NULL ? NULL : PyList_New(3);
        if (first == NULL) {
            Py_XDECREF(entry);
            Py_DECREF(ident);
            return NULL;
        }
        PyList_SET_ITEM(first, 0, entry);
        PyList_SET_ITEM(first, 1, Py_NewRef(tier));
        PyList_SET_ITEM(first, 2, Py_NewRef(default_fast));
        int bad = PyDict_SetItem(kept, ident, first) < 0;
        Py_DECREF(first);
        Py_DECREF(ident);
        if (bad) return NULL;
    }
    if (index >= PyList_GET_SIZE(events)) Py_RETURN_NONE;
    return PyLong_FromSsize_t(index);
}

/* ---- a session_meta first line, read without building it --------------------------------
 *
 * meta(line) reads what codex._meta_of takes from a rollout's first line: the payload's
 * id, cwd and forked_from_id, and the top's timestamp as epoch ms. It walks the whole line
 * as strict JSON (so that a line json.loads refuses is never read here): strings of valid
 * UTF-8 and valid escapes, with no \u escape of a surrogate; no nesting past MAX_DEPTH; a
 * key written with an escape, a key the rules read given twice, a read value that is an
 * escaped string, a timestamp not in Codex's form and a payload "source" object (with no
 * string forked_from_id) all give None: codex._meta_of's rules in Python then decide.
 * tests/agents/test_codex_conformance.py holds the two equal. */

typedef struct {
    const char *s, *end;
} lenient;

static inline void lws(lenient *c) {
    while (c->s < c->end && (*c->s == ' ' || *c->s == '\t' || *c->s == '\n' || *c->s == '\r'))
        c->s++;
}

static int hex4(const char *p, unsigned *out) {
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char ch = p[i];
        v <<= 4;
        if (ch >= '0' && ch <= '9') v |= (unsigned)(ch - '0');
        else if (ch >= 'a' && ch <= 'f') v |= (unsigned)(ch - 'a' + 10);
        else if (ch >= 'A' && ch <= 'F') v |= (unsigned)(ch - 'A' + 10);
        else return -1;
    }
    *out = v;
    return 0;
}

/* The length of a valid UTF-8 sequence at p (no overlong form, no surrogate, at most
 * U+10FFFF), or 0. */
static int utf8_length(const unsigned char *p, const unsigned char *end) {
    unsigned char a = p[0];
    int n = a >= 0xf0 ? 4 : a >= 0xe0 ? 3 : a >= 0xc2 ? 2 : 0;
    if (n == 0 || a > 0xf4 || end - p < n) return 0;
    for (int i = 1; i < n; i++)
        if ((p[i] & 0xc0) != 0x80) return 0;
    if (a == 0xe0 && p[1] < 0xa0) return 0;
    if (a == 0xed && p[1] >= 0xa0) return 0;
    if (a == 0xf0 && p[1] < 0x90) return 0;
    if (a == 0xf4 && p[1] >= 0x90) return 0;
    return n;
}

/* A string at c->s ('"'): its contents in [*from, *to) and *escaped whether it holds an
 * escape. -1: no valid string here, or one holding a surrogate escape. */
static int lstring(lenient *c, const char **from, const char **to, int *escaped) {
    const char *p = c->s + 1;
    *escaped = 0;
    for (;;) {
#if defined(__SSE2__)
        const __m128i quote = _mm_set1_epi8('"'), slash = _mm_set1_epi8('\\');
        const __m128i low = _mm_set1_epi8(0x20);
        while (c->end - p >= 16) {
            __m128i a = _mm_loadu_si128((const __m128i *)p);
            __m128i special = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(a, quote),
                                                        _mm_cmpeq_epi8(a, slash)),
                                           _mm_cmplt_epi8(a, low)); /* signed: < 0x20 or >= 0x80 */
            unsigned mask = (unsigned)_mm_movemask_epi8(special);
            if (mask) {
                p += __builtin_ctz(mask);
                break;
            }
            p += 16;
        }
#endif
        if (p >= c->end) return -1;
        unsigned char ch = (unsigned char)*p;
        if (ch == '"') {
            *from = c->s + 1;
            *to = p;
            c->s = p + 1;
            return 0;
        }
        if (ch == '\\') {
            *escaped = 1;
            if (c->end - p < 2) return -1;
            char e = p[1];
            if (e == 'u') {
                unsigned v;
                if (c->end - p < 6 || hex4(p + 2, &v) < 0 || (v >= 0xd800 && v <= 0xdfff))
                    return -1;
                p += 6;
            } else if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' ||
                       e == 'r' || e == 't') {
                p += 2;
            } else {
                return -1;
            }
            continue;
        }
        if (ch < 0x20) return -1;
        if (ch >= 0x80) {
            int n = utf8_length((const unsigned char *)p, (const unsigned char *)c->end);
            if (n == 0) return -1;
            p += n;
            continue;
        }
        p++;
    }
}

static int lvalue(lenient *c, int depth);

static int lcontainer(lenient *c, int depth) {
    if (depth > MAX_DEPTH) return -1;
    char close = *c->s == '{' ? '}' : ']';
    int object = close == '}';
    c->s++;
    lws(c);
    if (c->s < c->end && *c->s == close) {
        c->s++;
        return 0;
    }
    for (;;) {
        if (object) {
            const char *a, *b;
            int escaped;
            if (c->s >= c->end || *c->s != '"' || lstring(c, &a, &b, &escaped) < 0) return -1;
            lws(c);
            if (c->s >= c->end || *c->s != ':') return -1;
            c->s++;
            lws(c);
        }
        if (lvalue(c, depth + 1) < 0) return -1;
        lws(c);
        if (c->s >= c->end) return -1;
        if (*c->s == ',') {
            c->s++;
            lws(c);
            continue;
        }
        if (*c->s != close) return -1;
        c->s++;
        return 0;
    }
}

static int lvalue(lenient *c, int depth) {
    if (c->s >= c->end) return -1;
    const char *a, *b;
    int escaped;
    cursor n = {c->s, c->end, 0};
    switch (*c->s) {
    case '"': return lstring(c, &a, &b, &escaped);
    case '{': case '[': return lcontainer(c, depth);
    case 't': n.s = c->s; if (word(&n, "true", 4) < 0) return -1; break;
    case 'f': if (word(&n, "false", 5) < 0) return -1; break;
    case 'n': if (word(&n, "null", 4) < 0) return -1; break;
    default: {
        /* number(): a JSON number; an exponent is read here too (no value read is one) */
        const char *p = c->s;
        if (p < c->end && *p == '-') p++;
        if (p >= c->end || !is_digit(*p)) return -1;
        if (*p == '0') p++;
        else while (p < c->end && is_digit(*p)) p++;
        if (p < c->end && *p == '.') {
            p++;
            if (p >= c->end || !is_digit(*p)) return -1;
            while (p < c->end && is_digit(*p)) p++;
        }
        if (p < c->end && (*p == 'e' || *p == 'E')) {
            p++;
            if (p < c->end && (*p == '+' || *p == '-')) p++;
            if (p >= c->end || !is_digit(*p)) return -1;
            while (p < c->end && is_digit(*p)) p++;
        }
        n.s = p;
    }
    }
    c->s = n.s;
    return 0;
}

/* A read string value: 1 a plain string in [*from, *to), 0 another value (skipped), -1 give
 * up (an escaped string, or no valid value). */
static int read_text(lenient *c, int depth, const char **from, const char **to) {
    if (c->s < c->end && *c->s == '"') {
        int escaped;
        if (lstring(c, from, to, &escaped) < 0 || escaped) return -1;
        return 1;
    }
    return lvalue(c, depth) < 0 ? -1 : 0;
}

/* meta fields: 1 a plain string, 0 another value, -1 absent */
typedef struct {
    const char *type, *type_end, *stamp, *stamp_end, *id, *id_end, *cwd, *cwd_end, *fork,
        *fork_end;
    int type_is, stamp_is, id_is, cwd_is, fork_is, payload_object, source_object, seen;
} meta_fields;

#define M_TYPE 1
#define M_STAMP 2
#define M_PAYLOAD 4
#define M_ID 8
#define M_CWD 16
#define M_FORK 32
#define M_SOURCE 64

static int once(meta_fields *f, int bit) {
    if (f->seen & bit) return -1;
    f->seen |= bit;
    return 0;
}

/* An object's members at c->s: in the payload (payload != 0) or at the top. */
static int meta_members(lenient *c, int depth, meta_fields *f, int payload) {
    c->s++;
    lws(c);
    if (c->s < c->end && *c->s == '}') {
        c->s++;
        return 0;
    }
    for (;;) {
        const char *a, *b;
        int escaped, r = 0;
        if (c->s >= c->end || *c->s != '"' || lstring(c, &a, &b, &escaped) < 0 || escaped)
            return -1;
        lws(c);
        if (c->s >= c->end || *c->s != ':') return -1;
        c->s++;
        lws(c);
        if (!payload && key_is(a, b, "type")) {
            r = once(f, M_TYPE) < 0 ? -1 : (f->type_is = read_text(c, depth, &f->type, &f->type_end));
        } else if (!payload && key_is(a, b, "timestamp")) {
            r = once(f, M_STAMP) < 0 ? -1
                                     : (f->stamp_is = read_text(c, depth, &f->stamp, &f->stamp_end));
        } else if (!payload && key_is(a, b, "payload")) {
            if (once(f, M_PAYLOAD) < 0) return -1;
            if (c->s < c->end && *c->s == '{') {
                if (depth + 1 > MAX_DEPTH) return -1;
                f->payload_object = 1;
                r = meta_members(c, depth + 1, f, 1);
            } else {
                r = lvalue(c, depth);
            }
        } else if (payload && key_is(a, b, "id")) {
            r = once(f, M_ID) < 0 ? -1 : (f->id_is = read_text(c, depth, &f->id, &f->id_end));
        } else if (payload && key_is(a, b, "cwd")) {
            r = once(f, M_CWD) < 0 ? -1 : (f->cwd_is = read_text(c, depth, &f->cwd, &f->cwd_end));
        } else if (payload && key_is(a, b, "forked_from_id")) {
            r = once(f, M_FORK) < 0 ? -1
                                    : (f->fork_is = read_text(c, depth, &f->fork, &f->fork_end));
        } else if (payload && key_is(a, b, "source")) {
            if (once(f, M_SOURCE) < 0) return -1;
            f->source_object = c->s < c->end && *c->s == '{';
            r = lvalue(c, depth);
        } else {
            r = lvalue(c, depth);
        }
        if (r < 0) return -1;
        lws(c);
        if (c->s >= c->end) return -1;
        if (*c->s == ',') {
            c->s++;
            lws(c);
            continue;
        }
        if (*c->s != '}') return -1;
        c->s++;
        return 0;
    }
}

static PyObject *text_or_empty(int is, const char *from, const char *to) {
    if (is != 1) return PyUnicode_FromStringAndSize("", 0);
    return PyUnicode_DecodeUTF8(from, to - from, NULL);
}

PyDoc_STRVAR(meta_doc,
"meta(line: bytes) -> tuple[str, str, int | None, str] | None\n\n"
"(session id, parent id, fork time in epoch ms, cwd) of a session_meta first line, as\n"
"codex._meta_of reads them; None for a line it leaves to _meta_of (see the source).");

static PyObject *meta(PyObject *self, PyObject *arg) {
    (void)self;
    if (!PyBytes_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "meta() takes bytes");
        return NULL;
    }
    lenient c = {PyBytes_AS_STRING(arg), PyBytes_AS_STRING(arg) + PyBytes_GET_SIZE(arg)};
    meta_fields f;
    memset(&f, 0, sizeof f);
    f.type_is = f.stamp_is = f.id_is = f.cwd_is = f.fork_is = -1;
    lws(&c);
    if (c.s >= c.end || *c.s != '{' || meta_members(&c, 0, &f, 0) < 0) Py_RETURN_NONE;
    lws(&c);
    if (c.s != c.end) Py_RETURN_NONE;
    long long millis = 0;
    PyObject *forked_at = Py_None;
    if (f.stamp_is == 1) {
        if (!zulu_ms(f.stamp, f.stamp_end, &millis)) Py_RETURN_NONE;
        if (millis >= 0) forked_at = NULL; /* made below */
    } else if (f.stamp_is == 0) {
        Py_RETURN_NONE; /* a number or another value: _meta_of decides */
    }
    int session = f.type_is == 1 && key_is(f.type, f.type_end, "session_meta") && f.payload_object;
    if (session && f.fork_is != 1 && f.source_object) Py_RETURN_NONE;
    PyObject *id = text_or_empty(session ? f.id_is : 0, f.id, f.id_end);
    PyObject *parent = text_or_empty(session ? f.fork_is : 0, f.fork, f.fork_end);
    PyObject *cwd = text_or_empty(session ? f.cwd_is : 0, f.cwd, f.cwd_end);
    PyObject *at = forked_at == NULL ? PyLong_FromLongLong(millis) : Py_NewRef(Py_None);
    if (id == NULL || parent == NULL || cwd == NULL || at == NULL) {
        Py_XDECREF(id);
        Py_XDECREF(parent);
        Py_XDECREF(cwd);
        Py_XDECREF(at);
        return NULL;
    }
    return Py_BuildValue("(NNNN)", id, parent, at, cwd);
}

PyDoc_STRVAR(avx2_doc,
"avx2(use: bool) -> bool\n\n"
"Whether the line finder now uses AVX2: asked for and the CPU has it (the tests run both).");

static PyObject *avx2(PyObject *self, PyObject *arg) {
    (void)self;
    int use = PyObject_IsTrue(arg);
    if (use < 0) return NULL;
    find_needle = find_needle_sse2;
#ifdef HAVE_AVX2_PATH
    if (use && __builtin_cpu_supports("avx2")) find_needle = find_needle_avx2;
#endif
    return PyBool_FromLong(find_needle != find_needle_sse2);
}

PyDoc_STRVAR(sha_ni_doc,
"sha_ni(use: bool) -> bool\n\n"
"Whether sha256() now uses the CPU's SHA extensions: asked for and the CPU has them.");

static PyObject *sha_ni(PyObject *self, PyObject *arg) {
    (void)self;
    int use = PyObject_IsTrue(arg);
    if (use < 0) return NULL;
    sha_compress = sha_block;
#ifdef HAVE_SHA_NI_PATH
    if (use && cpu_has_sha()) sha_compress = sha_block_ni;
#endif
    return PyBool_FromLong(sha_compress != sha_block);
}

static PyMethodDef methods[] = {
    {"sha_ni", sha_ni, METH_O, sha_ni_doc},
    {"avx2", avx2, METH_O, avx2_doc},
    {"collect", collect, METH_VARARGS, collect_doc},
    {"plain", plain, METH_O, plain_doc},
    {"meta", meta, METH_O, meta_doc},
    {"advance", (PyCFunction)(void (*)(void))advance, METH_FASTCALL, advance_doc},
    {"sha256", sha256_py, METH_O, sha256_doc},
    {"key", (PyCFunction)(void (*)(void))key, METH_FASTCALL, key_doc},
    {"record_class", (PyCFunction)(void (*)(void))record_class, METH_FASTCALL, record_class_doc},
    {"record", (PyCFunction)(void (*)(void))record, METH_FASTCALL, record_doc},
    {"assemble", (PyCFunction)(void (*)(void))assemble, METH_FASTCALL, assemble_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_codexscan",
    "The Codex reader's line finder (codex._candidates_py is the same in Python).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__codexscan(void) {
#ifdef HAVE_SHA_NI_PATH
    if (cpu_has_sha()) sha_compress = sha_block_ni;
#endif
#ifdef HAVE_AVX2_PATH
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2")) find_needle = find_needle_avx2;
#endif
    return PyModule_Create(&module);
}
