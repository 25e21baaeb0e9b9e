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

/* The first needle in [s, end), or NULL. */
static const char *find_needle(const char *s, const char *end) {
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

static PyMethodDef methods[] = {
    {"collect", collect, METH_VARARGS, collect_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_codexscan",
    "The Codex reader's line finder (codex._candidates_py is the same in Python).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__codexscan(void) { return PyModule_Create(&module); }
