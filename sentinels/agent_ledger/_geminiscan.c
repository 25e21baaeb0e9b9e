/* The Gemini CLI reader's line picker (gemini._pick_py is the same in Python).
 *
 * Most lines of a session file are user turns, tool output and "$set" updates that no rule
 * reads. pick() splits a file at '\n' and hands back, in one pass at memory speed, only the
 * lines that hold one of gemini._NEEDLES (a quoted "gemini", "stats", "result", "model",
 * "sessionId" or "session_id", and a backslash-u when asked): what
 * filter(gemini._relevant(escaped).search, raw.split(b"\n")) returns, with the count of
 * '"' in them that gemini.kept_keys compares. It decides nothing
 * else: orjson and the rules then read each line picked, as before.
 * tests/agents/test_gemini_conformance.py holds the two equal on edge cases.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
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
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i slash = _mm_set1_epi8('\\');
    while (end - s >= 16) {
        __m128i a = _mm_loadu_si128((const __m128i *)s);
        __m128i hits = _mm_cmpeq_epi8(a, quote);
        if (escaped) hits = _mm_or_si128(hits, _mm_cmpeq_epi8(a, slash));
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

PyDoc_STRVAR(utc_ms_doc,
"utc_ms(value: object) -> int | None | ellipsis\n\n"
"Epoch milliseconds of a YYYY-MM-DDTHH:MM:SS.mmmZ string (gemini._utc_ms_py).");

static PyObject *utc_ms(PyObject *self, PyObject *value) {
    (void)self;
    static const char FORM[] = "dddd-dd-ddTdd:dd:dd.dddZ";
    if (!PyUnicode_Check(value) || PyUnicode_READY(value) < 0 ||
        PyUnicode_GET_LENGTH(value) != 24 || PyUnicode_KIND(value) != PyUnicode_1BYTE_KIND)
        RETURN_ELLIPSIS;
    const unsigned char *s = PyUnicode_1BYTE_DATA(value);
    int n[24];
    for (int i = 0; i < 24; i++) {
        if (FORM[i] == 'd') {
            if (s[i] < '0' || s[i] > '9') RETURN_ELLIPSIS;
            n[i] = s[i] - '0';
        } else if (s[i] != (unsigned char)FORM[i]) {
            RETURN_ELLIPSIS;
        }
    }
    int year = n[0] * 1000 + n[1] * 100 + n[2] * 10 + n[3];
    int month = n[5] * 10 + n[6], day = n[8] * 10 + n[9];
    int hour = n[11] * 10 + n[12], minute = n[14] * 10 + n[15];
    int millis = (n[17] * 10 + n[18]) * 1000 + n[20] * 100 + n[21] * 10 + n[22];
    if (month < 1 || month > 12) Py_RETURN_NONE;
    int leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    if (day == 0 || day > DAYS[month - 1] + (month == 2 && leap)) Py_RETURN_NONE;
    if (hour > 23 || minute > 59 || millis >= 60000) Py_RETURN_NONE;
    long long ms = days_from_civil(year, month, day) * 86400000LL
                   + (long long)(hour * 60 + minute) * 60000LL + millis;
    return PyLong_FromLongLong(ms);
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

static PyMethodDef methods[] = {
    {"pick", pick, METH_VARARGS, pick_doc},
    {"quotes", quotes, METH_O, quotes_doc},
    {"utc_ms", utc_ms, METH_O, utc_ms_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_geminiscan",
    "The Gemini CLI reader's line picker (gemini._pick_py is the same in Python).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__geminiscan(void) { return PyModule_Create(&module); }
