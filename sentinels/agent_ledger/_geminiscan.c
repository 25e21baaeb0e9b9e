/* The Gemini CLI reader's line picker (gemini._pick_py is the same in Python).
 *
 * Most lines of a session file are user turns, tool output and "$set" updates that no rule
 * reads. pick() splits a file at '\n' and hands back, in one pass at memory speed, only the
 * lines that hold one of gemini._NEEDLES (a quoted "gemini", "stats", "result", "model",
 * "sessionId" or "session_id", and a backslash-u when asked): what
 * filter(gemini._relevant(escaped).search, raw.split(b"\n")) returns. It decides nothing
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
"pick(raw: bytes, escaped: bool) -> list[bytes]\n\n"
"The lines of raw.split(b'\\n') that hold a needle (gemini._pick_py).");

static PyObject *pick(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *block;
    int escaped;
    if (!PyArg_ParseTuple(args, "Sp", &block, &escaped)) return NULL;
    const char *data = PyBytes_AS_STRING(block);
    const char *from = data, *end = data + PyBytes_GET_SIZE(block);
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
        from = after != NULL ? after + 1 : end;
    }
    return out;
}

static PyMethodDef methods[] = {
    {"pick", pick, METH_VARARGS, pick_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_geminiscan",
    "The Gemini CLI reader's line picker (gemini._pick_py is the same in Python).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__geminiscan(void) { return PyModule_Create(&module); }
