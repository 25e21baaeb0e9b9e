/* The Gemini CLI reader's line picker and plain-line reader (gemini._pick_py and
 * gemini._scan_py are the same without it).
 *
 * Most lines of a session file are user turns, tool output and "$set" updates that no rule
 * reads. pick() splits a file at '\n' and hands back, in one pass at memory speed, only the
 * lines that hold one of gemini._NEEDLES (a quoted "gemini", "stats", "result", "model",
 * "sessionId" or "session_id", and a backslash-u when asked): what
 * filter(gemini._relevant(escaped).search, raw.split(b"\n")) returns, with the count of
 * '"' in them that gemini.kept_keys compares. scan() picks the same lines and reads each
 * plain `type: gemini` line (a response as Gemini CLI writes it) itself, into the few
 * values the rules take from it; every other line is left to orjson and the rules, as
 * before. plain_file() does the same for a plain whole-file session (older CLI versions),
 * utc_ms() reads Gemini's timestamp form, quotes() counts what orjson would write, and
 * keys() makes a file's ledger keys. tests/agents/test_gemini_conformance.py holds each
 * equal to its Python path.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__) /* only its compression is used here, not blake2b_first8 */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#endif
#include "../_blake2b.h"
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* p points at '"' or '\\' inside [.., end); 1 when a needle starts there. */
static int needle_at(const char *p, const char *end, int escaped) {
    size_t left = (size_t)(end - p) - 1;
    const char *q = p + 1;
    if (left == 0) return 0;
    if (*p == '\\') return escaped && *q == 'u';
#define IS(text) (left >= sizeof(text) - 1 && memcmp(q, text, sizeof(text) - 1) == 0)
    switch (*q) {
    case 'g': return IS("gemini\"");
    case 's': return IS("stats\"") || IS("sessionId\"") || IS("session_id\"");
    case 'r': return IS("result\"");
    case 'm': return IS("model\"");
    default: return 0;
    }
#undef IS
}

/* The first needle in [s, end), or NULL. */
static const char *find_needle(const char *s, const char *end, int escaped) {
#if defined(__SSE2__)
    /* only a '"' before g, s, r or m (or a '\\' before u) can start one */
    const __m128i quote = _mm_set1_epi8('"'), slash = _mm_set1_epi8('\\');
    const __m128i g = _mm_set1_epi8('g'), sl = _mm_set1_epi8('s'), r = _mm_set1_epi8('r');
    const __m128i m = _mm_set1_epi8('m'), u = _mm_set1_epi8('u');
    while (end - s >= 17) {
        __m128i a = _mm_loadu_si128((const __m128i *)s);
        __m128i b = _mm_loadu_si128((const __m128i *)(s + 1));
        __m128i next = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(b, g), _mm_cmpeq_epi8(b, sl)),
                                    _mm_or_si128(_mm_cmpeq_epi8(b, r), _mm_cmpeq_epi8(b, m)));
        __m128i hits = _mm_and_si128(_mm_cmpeq_epi8(a, quote), next);
        if (escaped)
            hits = _mm_or_si128(hits, _mm_and_si128(_mm_cmpeq_epi8(a, slash), _mm_cmpeq_epi8(b, u)));
        unsigned mask = (unsigned)_mm_movemask_epi8(hits);
        while (mask) {
            const char *p = s + __builtin_ctz(mask);
            if (needle_at(p, end, escaped)) return p;
            mask &= mask - 1;
        }
        s += 16;
    }
#endif
    for (; s < end; s++) {
        if ((*s == '"' || (escaped && *s == '\\')) && needle_at(s, end, escaped)) return s;
    }
    return NULL;
}

PyDoc_STRVAR(pick_doc,
"pick(raw: bytes, escaped: bool) -> tuple[list[bytes], int]\n\n"
"The lines of raw.split(b'\\n') that hold a needle, and the number of '\"' in them\n"
"(gemini._pick_py).");

static PyObject *pick(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *block;
    int escaped;
    if (!PyArg_ParseTuple(args, "Sp", &block, &escaped)) return NULL;
    const char *data = PyBytes_AS_STRING(block);
    const char *from = data, *end = data + PyBytes_GET_SIZE(block);
    Py_ssize_t quotes = 0;
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    while (from < end) {
        const char *hit = find_needle(from, end, escaped);
        if (hit == NULL) break;
        const char *newline = hit > from ? memrchr(from, '\n', (size_t)(hit - from)) : NULL;
        const char *start = newline != NULL ? newline + 1 : from;
        const char *after = memchr(hit, '\n', (size_t)(end - hit));
        const char *stop = after != NULL ? after : end;
        PyObject *line = PyBytes_FromStringAndSize(start, stop - start);
        if (line == NULL || PyList_Append(out, line) < 0) {
            Py_XDECREF(line);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(line);
        for (const char *q = start; (q = memchr(q, '"', (size_t)(stop - q))) != NULL; q++)
            quotes++;
        from = after != NULL ? after + 1 : end;
    }
    PyObject *both = Py_BuildValue("(Nn)", out, quotes);
    return both;
}

/* ---- a plain `type: gemini` line, read in one pass -------------------------------------
 *
 * Most lines picked are responses Gemini CLI wrote: {"type": "gemini", "content": ...,
 * "id": ..., "timestamp": ..., "model": ..., "tokens": {six integers}, "toolCalls": ...}.
 * plain_line() reads such a line without building its objects and answers only for the
 * plain case, which orjson and json.loads both read, with every key kept:
 *   - the whole line one strict JSON object (blanks around it), nesting at most MAX_DEPTH
 *     deep, no \u escape anywhere, numbers without an exponent and of at most 20 digits
 *     a part (the caller passes text that is UTF-8: read_file checked it);
 *   - at the top "type" the string gemini; no sessionId or session_id; none of the record
 *     fields (gemini.RECORD_FIELDS) twice; a "timestamp" string in the form utc_ms reads,
 *     of a valid moment; "id" and "model", when present, strings of printable ASCII with no
 *     escape; "tokens" absent, null, or an object of exactly input, output, cached,
 *     thoughts, tool and total, each once, each a plain integer of at most 15 digits.
 * Then gemini.parse_jsonl_file's rules on that line need only (model, name, millis,
 * counts): model and name trimmed of blanks (None when absent or blank), millis the
 * timestamp's epoch milliseconds, counts None without tokens, else gemini.message_counts's
 * answer, () for a response worth nothing. Anything else: NULL (no error set), and the
 * line goes to orjson and the rules as before (tests/agents/test_gemini_conformance.py
 * holds the two equal). */

#define MAX_DEPTH 64
#define MAX_DIGITS 20

typedef struct { const char *s, *end; } cursor;

static inline void ws(cursor *c) {
    while (c->s < c->end && (*c->s == ' ' || *c->s == '\t' || *c->s == '\n' || *c->s == '\r'))
        c->s++;
}

static inline int is_digit(char ch) { return ch >= '0' && ch <= '9'; }

/* A string at c->s ('"'), its contents in [*from, *to). plain: printable ASCII without an
 * escape (a field read); else also UTF-8 bytes and the escapes other than \u (skipped
 * text). -1: not such a string. */
static int string(cursor *c, int plain, const char **from, const char **to) {
    const char *p = c->s + 1;
    while (p < c->end) {
#if defined(__SSE2__)
        /* 16 bytes at a time up to the first '"', '\\', control byte (or, plain, a byte
         * past printable ASCII) */
        while (c->end - p >= 16) {
            __m128i x = _mm_loadu_si128((const __m128i *)p);
            __m128i stop = _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('"')),
                                        _mm_cmpeq_epi8(x, _mm_set1_epi8('\\')));
            /* x <= 0x1f, or (plain) x - 0x20 >= 0x5f: both unsigned */
            __m128i odd = plain ? _mm_sub_epi8(x, _mm_set1_epi8(0x20)) : x;
            __m128i bound = _mm_set1_epi8(plain ? 0x5f : 0x1f);
            odd = plain ? _mm_cmpeq_epi8(_mm_max_epu8(odd, bound), odd)
                        : _mm_cmpeq_epi8(_mm_min_epu8(odd, bound), odd);
            unsigned mask = (unsigned)_mm_movemask_epi8(_mm_or_si128(stop, odd));
            if (mask) {
                p += __builtin_ctz(mask);
                break;
            }
            p += 16;
        }
        if (p >= c->end) break;
#endif
        unsigned char ch = (unsigned char)*p;
        if (ch == '"') {
            *from = c->s + 1;
            *to = p;
            c->s = p + 1;
            return 0;
        }
        if (ch < 0x20) return -1;
        if (ch == '\\') {
            if (plain || p + 1 >= c->end) return -1;
            switch (p[1]) {
            case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
                p += 2;
                continue;
            default: return -1;
            }
        }
        if (ch >= 0x7f && plain) return -1;
        p++;
    }
    return -1;
}

static int digits(cursor *c) {
    const char *p = c->s;
    while (p < c->end && is_digit(*p)) p++;
    size_t n = (size_t)(p - c->s);
    c->s = p;
    return n >= 1 && n <= MAX_DIGITS ? 0 : -1;
}

static int number(cursor *c) {
    if (c->s < c->end && *c->s == '-') c->s++;
    if (c->s >= c->end || !is_digit(*c->s)) return -1;
    if (*c->s == '0') {
        c->s++;
        if (c->s < c->end && is_digit(*c->s)) return -1;
    } else if (digits(c) < 0) {
        return -1;
    }
    if (c->s < c->end && *c->s == '.') {
        c->s++;
        if (digits(c) < 0) return -1;
    }
    if (c->s < c->end && (*c->s == 'e' || *c->s == 'E')) return -1;
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
    c->s++;
    ws(c);
    if (c->s < c->end && *c->s == close) {
        c->s++;
        return 0;
    }
    for (;;) {
        if (close == '}') {
            const char *a, *b;
            if (c->s >= c->end || *c->s != '"' || string(c, 0, &a, &b) < 0) return -1;
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
    case '"': return string(c, 0, &a, &b);
    case '{': case '[': return container(c, depth);
    case 't': return word(c, "true", 4);
    case 'f': return word(c, "false", 5);
    case 'n': return word(c, "null", 4);
    default: return number(c);
    }
}

static inline int key_is(const char *a, const char *b, const char *name, size_t n) {
    return (size_t)(b - a) == n && memcmp(a, name, n) == 0;
}
#define KEY_IS(name) key_is(a, b, name, sizeof(name) - 1)

/* Walks an object at c->s: for each key (printable ASCII, no escape), calls visit, which
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
        if (c->s >= c->end || *c->s != '"' || string(c, 1, &a, &b) < 0) return -1;
        ws(c);
        if (c->s >= c->end || *c->s != ':') return -1;
        c->s++;
        ws(c);
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

/* gemini._PLAIN_FIELDS: input, output, cached, thoughts, tool, total (token_index) */
typedef struct { long long n[6]; int seen; } token_fields;

/* The place of a name in gemini._PLAIN_FIELDS, -1 for another. */
static int token_index(const char *a, const char *b) {
    switch (b - a) {
    case 4: return memcmp(a, "tool", 4) == 0 ? 4 : -1;
    case 5: return memcmp(a, "input", 5) == 0 ? 0 : memcmp(a, "total", 5) == 0 ? 5 : -1;
    case 6: return memcmp(a, "output", 6) == 0 ? 1 : memcmp(a, "cached", 6) == 0 ? 2 : -1;
    case 8: return memcmp(a, "thoughts", 8) == 0 ? 3 : -1;
    default: return -1;
    }
}

static int token_member(const char *a, const char *b, cursor *c, int depth, void *ctx) {
    (void)depth;
    token_fields *t = ctx;
    int i = token_index(a, b);
    if (i < 0 || (t->seen & (1 << i))) return -1; /* another name: the other spellings */
    t->seen |= 1 << i;
    const char *p = c->s;
    unsigned long long n = 0; /* unsigned: a longer number wraps, then is refused */
    while (p < c->end && is_digit(*p)) n = n * 10 + (unsigned long long)(*p++ - '0');
    size_t count = (size_t)(p - c->s);
    if (count == 0 || count > 15 || (count > 1 && *c->s == '0')) return -1;
    if (p < c->end && (*p == '.' || *p == 'e' || *p == 'E')) return -1;
    t->n[i] = (long long)n;
    c->s = p;
    return 0;
}

/* the top's record fields (gemini.RECORD_FIELDS) */
enum {
    F_TYPE = 1, F_ID = 2, F_MODEL = 4, F_STAMP = 8, F_TOKENS = 16, F_START = 32,
    F_UPDATED = 64, F_MESSAGES = 128, F_CREATED = 256, F_STATS = 512, F_RESULT = 1024,
};

typedef struct {
    token_fields tokens;
    const char *id, *id_end, *model, *model_end, *stamp, *stamp_end;
    int seen, has_tokens;
    int any_type; /* a message of a whole-file session: any "type" (else only "gemini") */
    int gemini;   /* its "type" is the string gemini */
} line_fields;

static int plain_text(cursor *c, const char **from, const char **to) {
    if (c->s >= c->end || *c->s != '"') return -1;
    return string(c, 1, from, to);
}

static int top_member(const char *a, const char *b, cursor *c, int depth, void *ctx) {
    line_fields *f = ctx;
    int bit;
    switch (b - a) { /* a name's length, then the name */
    case 2: bit = KEY_IS("id") ? F_ID : 0; break;
    case 4: bit = KEY_IS("type") ? F_TYPE : 0; break;
    case 5: bit = KEY_IS("model") ? F_MODEL : KEY_IS("stats") ? F_STATS : 0; break;
    case 6: bit = KEY_IS("tokens") ? F_TOKENS : KEY_IS("result") ? F_RESULT : 0; break;
    case 8: bit = KEY_IS("messages") ? F_MESSAGES : 0; break;
    case 9:
        if (KEY_IS("sessionId")) return -1;
        bit = KEY_IS("timestamp") ? F_STAMP : KEY_IS("startTime") ? F_START : 0;
        break;
    case 10:
        if (KEY_IS("session_id")) return -1;
        bit = KEY_IS("created_at") ? F_CREATED : 0;
        break;
    case 11: bit = KEY_IS("lastUpdated") ? F_UPDATED : 0; break;
    default: bit = 0;
    }
    if (bit == 0) return value(c, depth);
    if (f->seen & bit) return -1; /* ccusage drops the line: the rules say so */
    f->seen |= bit;
    const char *from, *to;
    switch (bit) {
    case F_TYPE:
        if (c->s >= c->end || *c->s != '"') return f->any_type ? value(c, depth) : -1;
        if (string(c, !f->any_type, &from, &to) < 0) return -1;
        f->gemini = key_is(from, to, "gemini", 6); /* an escape never makes it gemini */
        return f->gemini || f->any_type ? 0 : -1;
    case F_ID: return plain_text(c, &f->id, &f->id_end);
    case F_MODEL: return plain_text(c, &f->model, &f->model_end);
    case F_STAMP: return plain_text(c, &f->stamp, &f->stamp_end);
    case F_TOKENS:
        if (c->s < c->end && *c->s == 'n') return word(c, "null", 4);
        f->has_tokens = 1;
        if (members(c, depth, token_member, &f->tokens) < 0) return -1;
        return f->tokens.seen == 0x3f ? 0 : -1;
    default: return value(c, depth);
    }
}

/* The last model, name and time a scan made: a message's copies (and a session's model)
 * repeat them line after line, so they are made once (borrowed: the lines hold them). */
typedef struct { PyObject *model, *name, *stamp; const char *stamp_text; } made;

/* [from, to) trimmed of blanks, as a str (last, when it holds that text); None when
 * nothing is left. */
static PyObject *trimmed(const char *from, const char *to, PyObject **last) {
    while (from < to && *from == ' ') from++;
    while (to > from && to[-1] == ' ') to--;
    if (from == to) Py_RETURN_NONE;
    Py_ssize_t n = to - from;
    if (*last != NULL && PyUnicode_GET_LENGTH(*last) == n &&
        memcmp(PyUnicode_1BYTE_DATA(*last), from, (size_t)n) == 0)
        return Py_NewRef(*last);
    PyObject *text = PyUnicode_DecodeASCII(from, n, NULL);
    if (text != NULL) *last = text;
    return text;
}

static int stamp_ms(const char *s, const char *end, long long *ms);

/* gemini.message_counts of the six integers (each below 10**15): (input, output, cache
 * read), or () for a response worth nothing. */
static PyObject *counts(const long long *n) {
    long long i = n[0], o = n[1], c = n[2], th = n[3], tl = n[4], total = n[5];
    long long inclusive = i + o + th + tl;
    if (c > 0 && total == inclusive && total != inclusive + c) i -= i < c ? i : c;
    i += tl; /* tool tokens are input */
    long long missing = total - (i + o + c + th);
    if (missing > 0) {
        if (o == 0) o = missing;
        else th += missing;
    }
    if (i == 0 && o == 0 && c == 0 && th == 0) return PyTuple_New(0);
    PyObject *out = PyTuple_New(3);
    if (out == NULL) return NULL;
    long long parts[3] = {i, o + th, c};
    for (int k = 0; k < 3; k++) {
        PyObject *number = PyLong_FromLongLong(parts[k]);
        if (number == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(out, k, number);
    }
    return out;
}

/* (model, name, millis, counts) of a message read into f (see above; name "" in place of
 * None when blank_name is given), NULL with no error set when its time is not plain. */
static PyObject *message_tuple(const line_fields *f, made *last, PyObject *blank_name) {
    PyObject *stamp;
    if (last->stamp != NULL && f->stamp_end - f->stamp == 24 &&
        memcmp(last->stamp_text, f->stamp, 24) == 0) {
        stamp = Py_NewRef(last->stamp);
    } else {
        long long ms = 0;
        if (stamp_ms(f->stamp, f->stamp_end, &ms) != 1) return NULL; /* also: no timestamp */
        if ((stamp = PyLong_FromLongLong(ms)) == NULL) return NULL;
        last->stamp = stamp;
        last->stamp_text = f->stamp;
    }
    PyObject *out = PyTuple_New(4);
    if (out == NULL) {
        Py_DECREF(stamp);
        return NULL;
    }
    PyTuple_SET_ITEM(out, 2, stamp);
    PyObject *model = f->seen & F_MODEL ? trimmed(f->model, f->model_end, &last->model)
                                        : Py_NewRef(Py_None);
    PyTuple_SET_ITEM(out, 0, model);
    PyObject *name = f->seen & F_ID ? trimmed(f->id, f->id_end, &last->name) : Py_NewRef(Py_None);
    if (name == Py_None && blank_name != NULL) {
        Py_DECREF(name);
        name = Py_NewRef(blank_name);
    }
    PyTuple_SET_ITEM(out, 1, name);
    PyObject *n = f->has_tokens ? counts(f->tokens.n) : Py_NewRef(Py_None);
    PyTuple_SET_ITEM(out, 3, n);
    if (model == NULL || name == NULL || n == NULL) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

/* The tuple of a plain line, NULL with no error set when the line is not plain. */
static PyObject *plain_line(const char *start, const char *stop, made *last) {
    cursor c = {start, stop};
    line_fields f;
    memset(&f, 0, sizeof f);
    ws(&c);
    if (members(&c, 0, top_member, &f) < 0) return NULL;
    ws(&c);
    if (c.s != c.end || !f.gemini) return NULL;
    return message_tuple(&f, last, NULL);
}

PyDoc_STRVAR(scan_doc,
"scan(raw: bytes, escaped: bool) -> tuple[list[bytes | tuple], list[int], int]\n\n"
"pick(raw, escaped)'s lines, each plain `type: gemini` line as (model, name, millis,\n"
"counts) (see the comment in the source); the places of the other lines (bytes), and\n"
"the number of '\"' in those. raw must be UTF-8.");

static PyObject *scan(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *block;
    int escaped;
    if (!PyArg_ParseTuple(args, "Sp", &block, &escaped)) return NULL;
    const char *data = PyBytes_AS_STRING(block);
    const char *from = data, *end = data + PyBytes_GET_SIZE(block);
    Py_ssize_t quotes = 0;
    made last = {NULL, NULL, NULL, NULL};
    PyObject *out = PyList_New(0), *at = PyList_New(0);
    if (out == NULL || at == NULL) goto fail;
    while (from < end) {
        const char *hit = find_needle(from, end, escaped);
        if (hit == NULL) break;
        const char *newline = hit > from ? memrchr(from, '\n', (size_t)(hit - from)) : NULL;
        const char *start = newline != NULL ? newline + 1 : from;
        const char *after = memchr(hit, '\n', (size_t)(end - hit));
        const char *stop = after != NULL ? after : end;
        from = after != NULL ? after + 1 : end;
        PyObject *item = plain_line(start, stop, &last);
        if (item == NULL) {
            if (PyErr_Occurred()) goto fail;
            PyObject *place = PyLong_FromSsize_t(PyList_GET_SIZE(out));
            if (place == NULL || PyList_Append(at, place) < 0) {
                Py_XDECREF(place);
                goto fail;
            }
            Py_DECREF(place);
            item = PyBytes_FromStringAndSize(start, stop - start);
            if (item == NULL) goto fail;
            for (const char *q = start; (q = memchr(q, '"', (size_t)(stop - q))) != NULL; q++)
                quotes++;
        }
        if (PyList_Append(out, item) < 0) {
            Py_DECREF(item);
            goto fail;
        }
        Py_DECREF(item);
    }
    return Py_BuildValue("(NNn)", out, at, quotes);
fail:
    Py_XDECREF(out);
    Py_XDECREF(at);
    return NULL;
}

/* ---- a plain whole-file session (Gemini CLI before 0.61), read in one pass ---------------
 *
 * plain_file(raw) answers only for the plain case of a `session-*.json`: the whole text one
 * strict JSON object as plain_line asks of a line (no \u escape anywhere, ...); at its top
 * a "sessionId" string of printable ASCII, not blank; no session_id; a "messages" array;
 * none of the record fields twice. Each message that is an object is read as a plain
 * line's top (no sessionId or session_id, no record field twice; "type" any value); one
 * whose "type" is the string gemini must also be plain as such a line is, with a model
 * (not blank) when it has tokens. Then gemini.parse_json_file needs only (session,
 * messages): the session id trimmed, and each gemini message in order as (model, name,
 * millis, counts), name "" when absent or blank. Anything else: None, and orjson and the
 * rules decide as before (tests/agents/test_gemini_conformance.py holds the two equal). */

typedef struct {
    const char *session, *session_end;
    PyObject *messages, *blank; /* the list made, and "" */
    made *last;
    int seen;
} file_fields;

static int messages_array(cursor *c, int depth, file_fields *f) {
    if (depth > MAX_DEPTH || c->s >= c->end || *c->s != '[') return -1;
    c->s++;
    ws(c);
    if (c->s < c->end && *c->s == ']') {
        c->s++;
        return 0;
    }
    for (;;) {
        if (c->s < c->end && *c->s == '{') {
            line_fields m;
            memset(&m, 0, sizeof m);
            m.any_type = 1;
            if (members(c, depth + 1, top_member, &m) < 0) return -1;
            if (m.gemini) {
                PyObject *item = message_tuple(&m, f->last, f->blank);
                if (item == NULL) return -1; /* not plain, or a Python error (then set) */
                /* with tokens, no model (or a blank one) is a reject: the rules decide */
                if ((m.has_tokens && PyTuple_GET_ITEM(item, 0) == Py_None) ||
                    PyList_Append(f->messages, item) < 0) {
                    Py_DECREF(item);
                    return -1;
                }
                Py_DECREF(item);
            }
        } else if (value(c, depth + 1) < 0) {
            return -1;
        }
        ws(c);
        if (c->s >= c->end) return -1;
        if (*c->s == ',') {
            c->s++;
            ws(c);
            continue;
        }
        if (*c->s != ']') return -1;
        c->s++;
        return 0;
    }
}

static int file_member(const char *a, const char *b, cursor *c, int depth, void *ctx) {
    file_fields *f = ctx;
    int bit;
    switch (b - a) {
    case 2: bit = KEY_IS("id") ? F_ID : 0; break;
    case 4: bit = KEY_IS("type") ? F_TYPE : 0; break;
    case 5: bit = KEY_IS("model") ? F_MODEL : KEY_IS("stats") ? F_STATS : 0; break;
    case 6: bit = KEY_IS("tokens") ? F_TOKENS : KEY_IS("result") ? F_RESULT : 0; break;
    case 8: bit = KEY_IS("messages") ? F_MESSAGES : 0; break;
    case 9:
        if (KEY_IS("sessionId")) {
            if (f->session != NULL) return -1;
            if (c->s >= c->end || *c->s != '"') return -1;
            return string(c, 1, &f->session, &f->session_end);
        }
        bit = KEY_IS("timestamp") ? F_STAMP : KEY_IS("startTime") ? F_START : 0;
        break;
    case 10:
        if (KEY_IS("session_id")) return -1;
        bit = KEY_IS("created_at") ? F_CREATED : 0;
        break;
    case 11: bit = KEY_IS("lastUpdated") ? F_UPDATED : 0; break;
    default: bit = 0;
    }
    if (bit == 0) return value(c, depth);
    if (f->seen & bit) return -1;
    f->seen |= bit;
    return bit == F_MESSAGES ? messages_array(c, depth, f) : value(c, depth);
}

PyDoc_STRVAR(plain_file_doc,
"plain_file(raw: bytes) -> tuple[str, list[tuple]] | None\n\n"
"A plain whole-file session as (session id, its gemini messages as (model, name, millis,\n"
"counts)); None for any other text (see the comment in the source). raw must be UTF-8.");

static PyObject *plain_file(PyObject *self, PyObject *arg) {
    (void)self;
    if (!PyBytes_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "plain_file() takes bytes");
        return NULL;
    }
    made last = {NULL, NULL, NULL, NULL};
    file_fields f = {NULL, NULL, PyList_New(0), PyUnicode_New(0, 0), &last, 0};
    PyObject *session = NULL;
    if (f.messages == NULL || f.blank == NULL) goto done;
    cursor c = {PyBytes_AS_STRING(arg), PyBytes_AS_STRING(arg) + PyBytes_GET_SIZE(arg)};
    ws(&c);
    int ok = members(&c, 0, file_member, &f) == 0;
    ws(&c);
    if (ok && c.s == c.end && f.session != NULL && (f.seen & F_MESSAGES))
        session = trimmed(f.session, f.session_end, &last.name);
done:
    Py_XDECREF(f.blank);
    if (session == NULL || session == Py_None) {
        Py_XDECREF(session);
        Py_XDECREF(f.messages);
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_NONE;
    }
    return Py_BuildValue("(NN)", session, f.messages);
}

/* ---- a timestamp in the form Gemini CLI writes: YYYY-MM-DDTHH:MM:SS.mmmZ ---------------
 *
 * utc_ms(value) answers for a str of exactly that form (ASCII digits): its epoch milliseconds
 * when the date and time are valid (month 1-12, a day of that month, leap years
 * Gregorian, hour <= 23, minute and second <= 59), else None. Any other value: Ellipsis,
 * and gemini.parse_timestamp's regex decides (gemini._utc_ms_py is the same in Python). */

#define RETURN_ELLIPSIS do { Py_INCREF(Py_Ellipsis); return Py_Ellipsis; } while (0)

static const int DAYS[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

static long long days_from_civil(long long y, long long m, long long d) {
    y -= m <= 2;
    long long era = (y >= 0 ? y : y - 399) / 400;
    long long yoe = y - era * 400;
    long long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    return era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
}

/* [s, end) in that form: 1 and its epoch milliseconds in *ms when the date and time are
 * valid, 0 when they are not, -1 for text of another form. */
static int stamp_ms(const char *s, const char *end, long long *ms) {
    static const char FORM[] = "dddd-dd-ddTdd:dd:dd.dddZ";
    if (end - s != 24) return -1;
    int n[24];
    for (int i = 0; i < 24; i++) {
        if (FORM[i] == 'd') {
            if (!is_digit(s[i])) return -1;
            n[i] = s[i] - '0';
        } else if (s[i] != FORM[i]) {
            return -1;
        }
    }
    int year = n[0] * 1000 + n[1] * 100 + n[2] * 10 + n[3];
    int month = n[5] * 10 + n[6], day = n[8] * 10 + n[9];
    int hour = n[11] * 10 + n[12], minute = n[14] * 10 + n[15];
    int millis = (n[17] * 10 + n[18]) * 1000 + n[20] * 100 + n[21] * 10 + n[22];
    if (month < 1 || month > 12) return 0;
    int leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    if (day == 0 || day > DAYS[month - 1] + (month == 2 && leap)) return 0;
    if (hour > 23 || minute > 59 || millis >= 60000) return 0;
    *ms = days_from_civil(year, month, day) * 86400000LL + (long long)(hour * 60 + minute) * 60000LL
          + millis;
    return 1;
}

PyDoc_STRVAR(utc_ms_doc,
"utc_ms(value: object) -> int | None | ellipsis\n\n"
"Epoch milliseconds of a YYYY-MM-DDTHH:MM:SS.mmmZ string (gemini._utc_ms_py).");

static PyObject *utc_ms(PyObject *self, PyObject *value) {
    (void)self;
    if (!PyUnicode_Check(value) || PyUnicode_READY(value) < 0 ||
        PyUnicode_KIND(value) != PyUnicode_1BYTE_KIND)
        RETURN_ELLIPSIS;
    const char *s = (const char *)PyUnicode_1BYTE_DATA(value);
    long long ms = 0;
    switch (stamp_ms(s, s + PyUnicode_GET_LENGTH(value), &ms)) {
    case 1: return PyLong_FromLongLong(ms);
    case 0: Py_RETURN_NONE;
    default: RETURN_ELLIPSIS;
    }
}

/* ---- the '"' orjson.dumps(value) would write, counted without writing it -----------------
 *
 * quotes(value) walks what orjson.loads made (dict with str keys, list, str, int, float,
 * bool, None): each str, key or value, is written as '"' + its text + '"', a '"' inside
 * it as '\\"'; nothing else writes one. So the count is 2 + the '"' in each str. Anything
 * else (another type, an int orjson.dumps refuses, nesting past MAX_NEST, past what
 * orjson.loads makes): -1, which gemini.kept_keys takes as "not kept". Where dumps refuses
 * deep nesting (past 255 levels) this still counts: either answer reads the line alike. */

#define MAX_NEST 2048

static Py_ssize_t in_str(PyObject *text) {
    if (PyUnicode_READY(text) < 0) return -1;
    Py_ssize_t n = 2, size = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    if (kind == PyUnicode_1BYTE_KIND) {
        const char *p = data, *end = p + size;
        while ((p = memchr(p, '"', (size_t)(end - p))) != NULL) { n++; p++; }
        return n;
    }
    for (Py_ssize_t i = 0; i < size; i++) n += PyUnicode_READ(kind, data, i) == '"';
    return n;
}

static Py_ssize_t walk(PyObject *value, int depth) {
    if (depth > MAX_NEST) return -1;
    if (PyUnicode_CheckExact(value)) return in_str(value);
    if (PyDict_CheckExact(value)) {
        Py_ssize_t pos = 0, n = 0, part;
        PyObject *key, *item;
        while (PyDict_Next(value, &pos, &key, &item)) {
            if (!PyUnicode_CheckExact(key) || (part = in_str(key)) < 0) return -1;
            n += part;
            if ((part = walk(item, depth + 1)) < 0) return -1;
            n += part;
        }
        return n;
    }
    if (PyList_CheckExact(value)) {
        Py_ssize_t n = 0, part;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(value); i++) {
            if ((part = walk(PyList_GET_ITEM(value, i), depth + 1)) < 0) return -1;
            n += part;
        }
        return n;
    }
    if (PyLong_CheckExact(value)) { /* orjson.dumps writes -2**63 .. 2**64-1, else raises */
        int overflow;
        PyLong_AsLongLongAndOverflow(value, &overflow);
        if (PyErr_Occurred()) return -1;
        if (overflow == 0) return 0;
        if (overflow < 0) return -1;
        PyLong_AsUnsignedLongLong(value);
        if (PyErr_Occurred()) { PyErr_Clear(); return -1; }
        return 0;
    }
    if (PyFloat_CheckExact(value) || PyBool_Check(value) || value == Py_None) return 0;
    return -1;
}

PyDoc_STRVAR(quotes_doc,
"quotes(value: object) -> int\n\n"
"orjson.dumps(value).count(b'\"') for what orjson.loads makes; -1 for anything else.");

static PyObject *quotes(PyObject *self, PyObject *value) {
    (void)self;
    Py_ssize_t n = walk(value, 0);
    if (n < 0 && PyErr_Occurred()) return NULL;
    return PyLong_FromSsize_t(n);
}

/* ---- the ledger's key of each response: blake2b-128 of the path and its parts ----------
 *
 * keys(label, path, events) gives, for each event (a tuple whose first item is the tuple of
 * its key's parts, str), label + the hex of blake2b(path + b"\0" + part + b"\0" + part ...,
 * digest_size=16), each part UTF-8 with surrogates passed: what gemini._keys_py makes with
 * hashlib, in one call per file (BLAKE2b from sentinels/_blake2b.h, a 16-byte digest). */

/* blake2b(data, digest_size=16) into out[16] (sentinels/_blake2b.h) */
static void blake2b_16(const unsigned char *data, size_t n, unsigned char out[16]) {
    uint64_t h[8];
    blake2b_state(data, n, 16, h);
    for (int i = 0; i < 16; i++) out[i] = (unsigned char)(h[i / 8] >> (8 * (i % 8)));
}

/* buffer: the path, then a NUL and the parts' UTF-8 (surrogates passed) joined by NULs:
 * ("\0" + "\0".join(parts)).encode("utf-8", "surrogatepass") after the path */
static int key_text(PyObject *parts, char **buffer, size_t *size, size_t path_size,
                    size_t *length) {
    if (!PyTuple_Check(parts)) {
        PyErr_SetString(PyExc_TypeError, "keys(): an event's key parts must be a tuple");
        return -1;
    }
    size_t at = path_size;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(parts) || i == 0; i++) {
        PyObject *part = i < PyTuple_GET_SIZE(parts) ? PyTuple_GET_ITEM(parts, i) : NULL;
        PyObject *encoded = NULL;
        const char *text = "";
        Py_ssize_t n = 0;
        if (part != NULL) {
            if (!PyUnicode_Check(part)) {
                PyErr_SetString(PyExc_TypeError, "keys(): a key part must be a str");
                return -1;
            }
            text = PyUnicode_AsUTF8AndSize(part, &n);
            if (text == NULL) { /* surrogates: as .encode("utf-8", "surrogatepass") */
                PyErr_Clear();
                encoded = PyUnicode_AsEncodedString(part, "utf-8", "surrogatepass");
                if (encoded == NULL) return -1;
                text = PyBytes_AS_STRING(encoded);
                n = PyBytes_GET_SIZE(encoded);
            }
        }
        if (at + 1 + (size_t)n > *size) {
            size_t grown = (at + 1 + (size_t)n) * 2;
            char *bigger = PyMem_Realloc(*buffer, grown);
            if (bigger == NULL) {
                Py_XDECREF(encoded);
                PyErr_NoMemory();
                return -1;
            }
            *buffer = bigger;
            *size = grown;
        }
        (*buffer)[at] = '\0';
        memcpy(*buffer + at + 1, text, (size_t)n);
        at += 1 + (size_t)n;
        Py_XDECREF(encoded);
    }
    *length = at;
    return 0;
}

PyDoc_STRVAR(keys_doc,
"keys(label: str, path: bytes, events: list[tuple]) -> list[str]\n\n"
"label + the blake2b-128 hex of path and each event's key parts (gemini._keys_py).");

static PyObject *keys(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *label, *path, *events;
    if (!PyArg_ParseTuple(args, "USO!", &label, &path, &PyList_Type, &events)) return NULL;
    Py_ssize_t label_size = PyUnicode_GET_LENGTH(label);
    if (PyUnicode_READY(label) < 0 || PyUnicode_MAX_CHAR_VALUE(label) > 127) {
        PyErr_SetString(PyExc_ValueError, "keys(): the label must be ASCII");
        return NULL;
    }
    size_t path_size = (size_t)PyBytes_GET_SIZE(path), size = path_size + 256;
    char *buffer = PyMem_Malloc(size);
    PyObject *out = PyList_New(PyList_GET_SIZE(events));
    if (buffer == NULL || out == NULL) {
        PyMem_Free(buffer);
        Py_XDECREF(out);
        return PyErr_NoMemory();
    }
    memcpy(buffer, PyBytes_AS_STRING(path), path_size);
    static const char HEX[] = "0123456789abcdef";
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(events); i++) {
        PyObject *event = PyList_GET_ITEM(events, i);
        size_t length;
        if (!PyTuple_Check(event) || PyTuple_GET_SIZE(event) < 1) {
            PyErr_SetString(PyExc_TypeError, "keys(): an event must be a tuple");
            goto fail;
        }
        if (key_text(PyTuple_GET_ITEM(event, 0), &buffer, &size, path_size, &length) < 0)
            goto fail;
        unsigned char digest[16];
        blake2b_16((const unsigned char *)buffer, length, digest);
        PyObject *key = PyUnicode_New(label_size + 32, 127);
        if (key == NULL) goto fail;
        Py_UCS1 *text = PyUnicode_1BYTE_DATA(key);
        memcpy(text, PyUnicode_1BYTE_DATA(label), (size_t)label_size);
        for (int k = 0; k < 16; k++) {
            text[label_size + 2 * k] = (Py_UCS1)HEX[digest[k] >> 4];
            text[label_size + 2 * k + 1] = (Py_UCS1)HEX[digest[k] & 15];
        }
        PyList_SET_ITEM(out, i, key);
    }
    PyMem_Free(buffer);
    return out;
fail:
    PyMem_Free(buffer);
    Py_DECREF(out);
    return NULL;
}

static PyMethodDef methods[] = {
    {"pick", pick, METH_VARARGS, pick_doc},
    {"quotes", quotes, METH_O, quotes_doc},
    {"scan", scan, METH_VARARGS, scan_doc},
    {"keys", keys, METH_VARARGS, keys_doc},
    {"plain_file", plain_file, METH_O, plain_file_doc},
    {"utc_ms", utc_ms, METH_O, utc_ms_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_geminiscan",
    "The Gemini CLI reader's line picker and plain-line reader (see the source).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__geminiscan(void) { return PyModule_Create(&module); }
