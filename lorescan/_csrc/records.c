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

/* activation_records(activated, contents, pass_of, shared, forced_type, make) -> list
 *
 * The activation record of each activated entry, in order (lorescan/_emit.py, _records, is the
 * reference), with its text (contents[gid], else its own content) and pass (pass_of[gid], else 1):
 * the one `shared` keeps under (gid << 3 | pass & 7), as a (record, content, pass)
 * triple, while its content is the same object and its pass the same, else make(entry, text, pass)
 * (kept in `shared` unless the entry's type is `forced_type`, a caller's object). */
PyObject *
ls_activation_records(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *activated, *contents, *pass_of, *shared, *forced_type, *make, *out, *ce, *g = NULL, *text = NULL,
        *pass = NULL, *slot = NULL, *a = NULL, *kept, *triple;
    Py_ssize_t k, n;
    long long gid, p;
    int own;

    (void)self;
    if (nargs != 6 || !PyList_Check(args[0]) || !PyDict_Check(args[1]) || !PyDict_Check(args[2])
        || !PyDict_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "activation_records(activated: list, contents: dict, pass_of: dict, "
                                         "shared: dict, forced_type, make)");
        return NULL;
    }
    activated = args[0];
    contents = args[1];
    pass_of = args[2];
    shared = args[3];
    forced_type = args[4];
    make = args[5];
    n = PyList_GET_SIZE(activated);
    out = PyList_New(n);
    if (out == NULL)
        return NULL;
    for (k = 0; k < n; k++) {
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
        slot = PyLong_FromLongLong(gid << 3 | (p & 7));
        if (slot == NULL)
            goto error;
        kept = own ? PyDict_GetItemWithError(shared, slot) : NULL;      /* borrowed */
        if (kept == NULL && PyErr_Occurred())
            goto error;
        a = kept == NULL ? NULL : still_fits(kept, text, pass);
        if (a == NULL) {
            if (PyErr_Occurred())
                goto error;
            a = PyObject_CallFunctionObjArgs(make, ce, text, pass, NULL);
            if (a == NULL)
                goto error;
            if (own) {
                triple = PyTuple_Pack(3, a, text, pass);
                if (triple == NULL || PyDict_SetItem(shared, slot, triple) < 0) {
                    Py_XDECREF(triple);
                    goto error;
                }
                Py_DECREF(triple);
            }
        }
        PyList_SET_ITEM(out, k, a);     /* steals */
        a = NULL;
        Py_CLEAR(g);
        Py_CLEAR(text);
        Py_CLEAR(pass);
        Py_CLEAR(slot);
    }
    return out;
error:
    if (!PyErr_Occurred())
        PyErr_SetString(PyExc_ValueError, "an entry id or pass that is not a small int");
    Py_XDECREF(g);
    Py_XDECREF(text);
    Py_XDECREF(pass);
    Py_XDECREF(slot);
    Py_XDECREF(a);
    Py_DECREF(out);
    return NULL;
}
