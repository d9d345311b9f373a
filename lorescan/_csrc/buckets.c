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
        text = ls_entry_text(ce, g, contents);
        Py_DECREF(g);
        if (text == NULL)
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


/* recursion_lines(now, failed, contents) -> (entries, lines)
 *
 * The entries whose content recursion scans (lorescan/_engine.py, _Evaluation._next_state, is the
 * reference): each of `now` whose gid is not in `failed` and that does not prevent recursion, in
 * order; and their texts (contents[gid], else the entry's own content). */
PyObject *
ls_recursion_lines(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *now, *failed, *contents, *entries, *lines, *ce, *g, *text, *out;
    Py_ssize_t k, n;
    int r;

    (void)self;
    if (nargs != 3 || !PyList_Check(args[0]) || !PyAnySet_Check(args[1]) || !PyDict_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "recursion_lines(now: list, failed: set, contents: dict)");
        return NULL;
    }
    now = args[0];
    failed = args[1];
    contents = args[2];
    entries = PyList_New(0);
    lines = PyList_New(0);
    if (entries == NULL || lines == NULL)
        goto error;
    n = PyList_GET_SIZE(now);
    for (k = 0; k < n; k++) {
        ce = PyList_GET_ITEM(now, k);
        g = ls_getattr(ce, s_gid);
        if (g == NULL)
            goto error;
        r = PySet_Contains(failed, g);
        if (r == 0)
            r = ls_attr_true(ce, s_prevent_recursion);
        if (r != 0) {
            Py_DECREF(g);
            if (r < 0)
                goto error;
            continue;
        }
        text = ls_entry_text(ce, g, contents);
        Py_DECREF(g);
        if (text == NULL)
            goto error;
        r = PyList_Append(lines, text);
        Py_DECREF(text);
        if (r < 0 || PyList_Append(entries, ce) < 0)
            goto error;
    }
    out = PyTuple_Pack(2, entries, lines);
    Py_DECREF(entries);
    Py_DECREF(lines);
    return out;
error:
    Py_XDECREF(entries);
    Py_XDECREF(lines);
    return NULL;
}
