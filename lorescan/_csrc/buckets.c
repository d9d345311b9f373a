/* The prompt's plain buckets (fill_plain); lorescan/_emit.py (_Buckets.fill) is the reference. */
#include "native.h"

/* fill_plain(entries, contents, plain, rest) -> None
 *
 * For each entry in order, its text (contents[gid], else its own content): an empty one is
 * dropped; a text whose position (the entry's `bucket`) is 0-3 is appended to plain[position] (four
 * lists: before, after, the author's note's top and bottom); any other entry goes to `rest` with its
 * text, as an (entry, text) pair, for the caller to place in the same order. */
PyObject *
ls_fill_plain(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *entries, *contents, *plain, *rest, *ce, *g, *text, *pos, *pair;
    Py_ssize_t k, n;
    long long at;
    int r;

    (void)self;
    if (nargs != 4 || !PyList_Check(args[0]) || !PyDict_Check(args[1]) || !PyTuple_Check(args[2])
        || PyTuple_GET_SIZE(args[2]) != 4 || !PyList_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "fill_plain(entries: list, contents: dict, plain: tuple of 4 lists, "
                                         "rest: list)");
        return NULL;
    }
    entries = args[0];
    contents = args[1];
    plain = args[2];
    rest = args[3];
    for (k = 0; k < 4; k++) {
        if (!PyList_Check(PyTuple_GET_ITEM(plain, k))) {
            PyErr_SetString(PyExc_TypeError, "fill_plain: the plain buckets must be lists");
            return NULL;
        }
    }
    n = PyList_GET_SIZE(entries);
    for (k = 0; k < n; k++) {
        ce = PyList_GET_ITEM(entries, k);
        g = ls_getattr(ce, s_gid);
        if (g == NULL)
            return NULL;
        text = PyDict_GetItemWithError(contents, g);    /* borrowed */
        Py_DECREF(g);
        if (text != NULL)
            Py_INCREF(text);
        else if (PyErr_Occurred() || (text = ls_getattr(ce, s_content)) == NULL)
            return NULL;
        r = PyObject_IsTrue(text);
        if (r <= 0) {
            Py_DECREF(text);
            if (r < 0)
                return NULL;
            continue;       /* an empty text is placed nowhere */
        }
        pos = ls_getattr(ce, s_bucket);
        if (pos == NULL) {
            Py_DECREF(text);
            return NULL;
        }
        if (PyLong_CheckExact(pos) && ls_as_ll(pos, &at) && at >= 0 && at <= 3) {
            r = PyList_Append(PyTuple_GET_ITEM(plain, at), text);
        }
        else {
            pair = PyTuple_Pack(2, ce, text);
            r = pair == NULL ? -1 : PyList_Append(rest, pair);
            Py_XDECREF(pair);
        }
        Py_DECREF(pos);
        Py_DECREF(text);
        if (r < 0)
            return NULL;
    }
    Py_RETURN_NONE;
}
