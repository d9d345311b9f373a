/* The activation records of an evaluation (activation_records); lorescan/_emit.py (_records) is the
 * reference. */
#include "native.h"

/* -- activation records ---------------------------------------------------------------------- */


/* The record `kept` (a shared (record, content, pass) triple) holds when it still holds this content
 * (the same object) and pass, as a new reference; NULL without an error when it does not; NULL
 * with one on error. Only the triple is read, not the record. */
static PyObject *
still_fits(PyObject *kept, PyObject *text, PyObject *pass)
{
    PyObject *was;
    int same;

    if (!PyTuple_CheckExact(kept) || PyTuple_GET_SIZE(kept) != 3 || PyTuple_GET_ITEM(kept, 1) != text)
        return NULL;
    was = PyTuple_GET_ITEM(kept, 2);
    same = was == pass ? 1 : PyObject_RichCompareBool(was, pass, Py_EQ);
    if (same <= 0)
        return NULL;
    was = PyTuple_GET_ITEM(kept, 0);
    Py_INCREF(was);
    return was;
}

/* The record the first-pass lists keep for entry `gid` when it still holds this content (the same
 * object), as a new reference; NULL when they keep none. */
static PyObject *
kept_first(PyObject *records, PyObject *texts, long long gid, PyObject *text)
{
    PyObject *a;

    if (gid >= PyList_GET_SIZE(records) || gid >= PyList_GET_SIZE(texts) || PyList_GET_ITEM(texts, gid) != text)
        return NULL;
    a = PyList_GET_ITEM(records, gid);
    if (a == Py_None)
        return NULL;
    Py_INCREF(a);
    return a;
}

/* Keep `a` (made for `text`) as entry `gid`'s first-pass record; 0, or -1 on error. */
static int
keep_first(PyObject *records, PyObject *texts, long long gid, PyObject *a, PyObject *text)
{
    if (gid >= PyList_GET_SIZE(records) || gid >= PyList_GET_SIZE(texts))
        return 0;       /* not an entry of these books: not kept */
    Py_INCREF(a);
    Py_INCREF(text);
    /* the text first: while both are set, the record is never taken with another text */
    return PyList_SetItem(texts, gid, text) < 0 || PyList_SetItem(records, gid, a) < 0 ? -1 : 0;
}

/* The record of an entry activated in a later pass: the one `later` keeps under (gid << 3 | pass & 7),
 * as a (record, content, pass) triple, while its content is the same object and its pass the same,
 * else make(entry, text, pass), kept there when `own`. A new reference, or NULL on error. */
static PyObject *
later_record(PyObject *later, PyObject *ce, long long gid, long long p, PyObject *text, PyObject *pass, int own,
             PyObject *make)
{
    PyObject *slot, *kept, *a = NULL, *triple;

    slot = PyLong_FromLongLong(gid << 3 | (p & 7));
    if (slot == NULL)
        return NULL;
    kept = own ? PyDict_GetItemWithError(later, slot) : NULL;      /* borrowed */
    if (kept == NULL && PyErr_Occurred())
        goto out;
    a = kept == NULL ? NULL : still_fits(kept, text, pass);
    if (a == NULL && !PyErr_Occurred()) {
        a = PyObject_CallFunctionObjArgs(make, ce, text, pass, NULL);
        if (a != NULL && own) {
            triple = PyTuple_Pack(3, a, text, pass);
            if (triple == NULL || PyDict_SetItem(later, slot, triple) < 0)
                Py_CLEAR(a);
            Py_XDECREF(triple);
        }
    }
out:
    Py_DECREF(slot);
    return a;
}

/* activation_records(activated, contents, pass_of, records, texts, later, forced_type, make) -> list
 *
 * The activation record of each activated entry, in order (lorescan/_emit.py, _records, is the
 * reference), with its text (contents[gid], else its own content) and pass (pass_of[gid], else 1).
 * A first-pass record is the one `records[gid]` keeps while `texts[gid]` is the same text object;
 * a later pass's, the one `later` keeps (see later_record); else make(entry, text, pass), kept
 * unless the entry's type is `forced_type` (a caller's object). */
PyObject *
ls_activation_records(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *activated, *contents, *pass_of, *records, *texts, *later, *forced_type, *make, *out, *ce,
        *g = NULL, *text = NULL, *pass = NULL, *a = NULL;
    Py_ssize_t k, n;
    long long gid, p;
    int own;

    (void)self;
    if (nargs != 8 || !PyList_Check(args[0]) || !PyDict_Check(args[1]) || !PyDict_Check(args[2])
        || !PyList_CheckExact(args[3]) || !PyList_CheckExact(args[4]) || !PyDict_Check(args[5])) {
        PyErr_SetString(PyExc_TypeError, "activation_records(activated: list, contents: dict, pass_of: dict, "
                                         "records: list, texts: list, later: dict, forced_type, make)");
        return NULL;
    }
    activated = args[0];
    contents = args[1];
    pass_of = args[2];
    records = args[3];
    texts = args[4];
    later = args[5];
    forced_type = args[6];
    make = args[7];
    n = PyList_GET_SIZE(activated);
    out = PyList_New(n);
    if (out == NULL)
        return NULL;
    for (k = 0; k < n && k < PyList_GET_SIZE(activated); k++) {
        ce = PyList_GET_ITEM(activated, k);
        g = ls_getattr(ce, s_gid);
        if (g == NULL || !ls_as_ll(g, &gid) || gid < 0 || gid > (LLONG_MAX >> 4))
            goto error;
        text = ls_entry_text(ce, g, contents);
        if (text == NULL)
            goto error;
        pass = PyDict_GetItemWithError(pass_of, g);
        if (pass != NULL)
            Py_INCREF(pass);
        else if (PyErr_Occurred() || (pass = PyLong_FromLong(1)) == NULL)
            goto error;
        if (!ls_as_ll(pass, &p))
            goto error;
        own = (PyObject *)Py_TYPE(ce) != forced_type;
        if (p == 1) {
            a = own ? kept_first(records, texts, gid, text) : NULL;
            if (a == NULL) {
                a = PyObject_CallFunctionObjArgs(make, ce, text, pass, NULL);
                if (a == NULL || (own && keep_first(records, texts, gid, a, text) < 0))
                    goto error;
            }
        }
        else if ((a = later_record(later, ce, gid, p, text, pass, own, make)) == NULL)
            goto error;
        PyList_SET_ITEM(out, k, a);     /* steals */
        a = NULL;
        Py_CLEAR(g);
        Py_CLEAR(text);
        Py_CLEAR(pass);
    }
    if (k < n) {        /* `make` shortened the list: what was made so far */
        PyObject *part = PyList_GetSlice(out, 0, k);
        Py_DECREF(out);
        return part;
    }
    return out;
error:
    if (!PyErr_Occurred())
        PyErr_SetString(PyExc_ValueError, "an entry id or pass that is not a small int");
    Py_XDECREF(g);
    Py_XDECREF(text);
    Py_XDECREF(pass);
    Py_XDECREF(a);
    Py_DECREF(out);
    return NULL;
}
