/* Each needle's entries listed while a key index is built (list_entries); lorescan/_index.py
 * (KeyIndex._add_group's last loop) is the reference. */
#include "native.h"

/* Append owner `g` to lists[nid], refusing an id outside the lists; 0, or -1 on error. */
static int
list_under(PyObject *lists, PyObject *nid, PyObject *g)
{
    Py_ssize_t at = PyLong_AsSsize_t(nid);
    PyObject *list;

    if (at == -1 && PyErr_Occurred())
        return -1;
    if (at < 0 || at >= PyList_GET_SIZE(lists)) {
        PyErr_SetString(PyExc_IndexError, "list_entries: a needle id outside the lists");
        return -1;
    }
    list = PyList_GET_ITEM(lists, at);
    if (!PyList_Check(list)) {
        PyErr_SetString(PyExc_TypeError, "list_entries: each needle's entries must be a list");
        return -1;
    }
    return PyList_Append(list, g);
}

/* A prepared key that is not a needle id (a Key): listed under each of its needles `nids`; with
 * none, its owner goes to `always` (once in a row) unless its kind is `skip`. 0, or -1 on error. */
static int
list_key(PyObject *key, PyObject *g, PyObject *lists, PyObject *always, PyObject *skip)
{
    PyObject *nids = ls_getattr(key, s_nids), *kind;
    Py_ssize_t k, n, last;
    int r = 0, same;

    if (nids == NULL)
        return -1;
    if (!PyTuple_Check(nids)) {
        Py_DECREF(nids);
        PyErr_SetString(PyExc_TypeError, "list_entries: a key's nids must be a tuple");
        return -1;
    }
    n = PyTuple_GET_SIZE(nids);
    for (k = 0; k < n && r == 0; k++)
        r = list_under(lists, PyTuple_GET_ITEM(nids, k), g);
    Py_DECREF(nids);
    if (n > 0 || r < 0)
        return r;
    kind = ls_getattr(key, s_kind);
    if (kind == NULL)
        return -1;
    same = PyObject_RichCompareBool(kind, skip, Py_NE);
    Py_DECREF(kind);
    if (same <= 0)
        return same;        /* a key of kind `skip` (or an error) */
    last = PyList_GET_SIZE(always);
    if (last > 0) {
        same = PyObject_RichCompareBool(PyList_GET_ITEM(always, last - 1), g, Py_EQ);
        if (same != 0)
            return same < 0 ? -1 : 0;
    }
    return PyList_Append(always, g);
}

/* list_entries(items, owners, lists, always, skip) -> None
 *
 * For each prepared key in `items` and its entry's gid in `owners` (lists of one length): an int
 * is a needle id, and the gid is appended to lists[id]; a Key is listed under each of its `nids`,
 * or, with none and a kind other than `skip`, its gid goes to `always` unless it is already last
 * there. */
PyObject *
ls_list_entries(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *items, *owners, *lists, *always, *item, *g;
    Py_ssize_t i, n;
    int r;

    (void)self;
    if (nargs != 5 || !PyList_Check(args[0]) || !PyList_Check(args[1]) || !PyList_Check(args[2])
        || !PyList_Check(args[3]) || PyList_GET_SIZE(args[0]) != PyList_GET_SIZE(args[1])) {
        PyErr_SetString(PyExc_TypeError, "list_entries(items: list, owners: list (as long), lists: list, "
                                         "always: list, skip)");
        return NULL;
    }
    items = args[0];
    owners = args[1];
    lists = args[2];
    always = args[3];
    n = PyList_GET_SIZE(items);
    for (i = 0; i < n && i < PyList_GET_SIZE(items) && i < PyList_GET_SIZE(owners); i++) {
        item = PyList_GET_ITEM(items, i);
        g = PyList_GET_ITEM(owners, i);
        Py_INCREF(item);
        Py_INCREF(g);
        r = PyLong_CheckExact(item) ? list_under(lists, item, g) : list_key(item, g, lists, always, args[4]);
        Py_DECREF(item);
        Py_DECREF(g);
        if (r < 0)
            return NULL;
    }
    Py_RETURN_NONE;
}
