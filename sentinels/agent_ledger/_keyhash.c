/* The agent ledger's stored key of a reader's key text: store.key_hash in one C call for a
 * whole batch. A backfill hashes every response's key (Gemini 256 MiB: 413,000 of them), and
 * hashlib's per-call work (a hash object, a digest, a slice, int.from_bytes) took 0.24 s of
 * it; this takes 0.08 s.
 *
 * key_hashes(keys: list[str]) -> list[int]: for each key, the first 8 bytes of
 * BLAKE2b-128(key.encode("utf-8", "surrogatepass")) read as a big-endian signed integer, what
 * store.key_hash computes with hashlib (tests/agents/test_agent_ledger_store.py holds the two
 * equal). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "../_blake2b.h"

static PyObject *key_hashes(PyObject *Py_UNUSED(self), PyObject *keys) {
    if (!PyList_Check(keys)) {
        PyErr_SetString(PyExc_TypeError, "key_hashes() takes a list of str");
        return NULL;
    }
    Py_ssize_t count = PyList_GET_SIZE(keys);
    PyObject *out = PyList_New(count);
    if (out == NULL) return NULL;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *key = PyList_GET_ITEM(keys, i);
        if (!PyUnicode_Check(key)) {
            PyErr_SetString(PyExc_TypeError, "key_hashes() takes a list of str");
            Py_DECREF(out);
            return NULL;
        }
        int64_t hashed;
        if (PyUnicode_IS_ASCII(key)) { /* its UTF-8 is its own bytes: no copy */
            hashed = blake2b_first8(PyUnicode_DATA(key), (size_t)PyUnicode_GET_LENGTH(key), 16);
        } else {
            PyObject *encoded = PyUnicode_AsEncodedString(key, "utf-8", "surrogatepass");
            if (encoded == NULL) {
                Py_DECREF(out);
                return NULL;
            }
            hashed = blake2b_first8((const unsigned char *)PyBytes_AS_STRING(encoded),
                                    (size_t)PyBytes_GET_SIZE(encoded), 16);
            Py_DECREF(encoded);
        }
        PyObject *number = PyLong_FromLongLong(hashed);
        if (number == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, number);
    }
    return out;
}

static PyMethodDef methods[] = {
    {"key_hashes", key_hashes, METH_O, "store.key_hash of each str of a list, as a list of int."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_keyhash", "The agent ledger's key hash, a batch at a time.", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__keyhash(void) { return PyModule_Create(&module); }
