/* The prompt's buckets (fill_buckets); lorescan/_emit.py (_Buckets.fill) is the reference. */
#include "native.h"

/* An at-depth entry's text in its group (lorescan/_emit.py, _Buckets._at_depth, is the reference),
 * for an entry whose depth is an int and whose role is an int or unset, both exact as JavaScript
 * numbers: such ints are their own strict-equality keys. 1 placed; 0 left to the caller (another
 * depth or role); -1 on error. */
static int
at_depth(PyObject *ce, PyObject *text, PyObject *depth, PyObject *groups)
{
    const long long exact = 9007199254740992LL;     /* 2**53 */
    PyObject *d = ls_getattr(ce, s_depth), *role = NULL, *key = NULL, *group, *items;
    long long v;
    int r = -1;

    if (d == NULL)
        return -1;
    if (!PyLong_CheckExact(d) || !ls_as_ll(d, &v) || v < -exact || v > exact) {
        r = 0;
        goto out;
    }
    role = ls_getattr(ce, s_role);
    if (role == NULL)
        goto out;
    if (role == Py_None) {
        Py_DECREF(role);
        role = PyLong_FromLong(0);
        if (role == NULL)
            goto out;
    }
    else if (!PyLong_CheckExact(role) || !ls_as_ll(role, &v) || v < -exact || v > exact) {
        r = 0;
        goto out;
    }
    key = PyTuple_Pack(2, d, role);
    if (key == NULL)
        goto out;
    group = PyDict_GetItemWithError(groups, key);      /* borrowed */
    if (group != NULL) {
        items = PyDict_CheckExact(group) ? PyDict_GetItemWithError(group, s_entries) : NULL;
        if (items == NULL || !PyList_CheckExact(items)) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "fill_buckets: a depth group must be a dict with an entries list");
            goto out;
        }
        r = PyList_Append(items, text) < 0 ? -1 : 1;
        goto out;
    }
    if (PyErr_Occurred())
        goto out;
    group = PyDict_New();
    items = PyList_New(1);
    if (group == NULL || items == NULL) {
        Py_XDECREF(group);
        Py_XDECREF(items);
        goto out;
    }
    Py_INCREF(text);
    PyList_SET_ITEM(items, 0, text);
    if (PyDict_SetItem(group, s_depth, d) < 0 || PyDict_SetItem(group, s_role, role) < 0
        || PyDict_SetItem(group, s_entries, items) < 0 || PyList_Append(depth, group) < 0
        || PyDict_SetDefault(groups, key, group) == NULL)
        r = -1;
    else
        r = 1;
    Py_DECREF(items);
    Py_DECREF(group);
out:
    Py_DECREF(d);
    Py_XDECREF(role);
    Py_XDECREF(key);
    return r;
}

/* An example-messages entry's text (position 5: before, 6: after) appended to `em` as an instance
 * of `example` (ExampleEntry, made as construct makes it); 0, or -1 on error. */
static int
example(PyObject *text, long long at, PyObject *em, PyObject *example_cls)
{
    PyObject *fields = PyDict_New(), *m;
    int r;

    if (fields == NULL)
        return -1;
    if (PyDict_SetItem(fields, s_position, at == 5 ? s_before : s_after) < 0
        || PyDict_SetItem(fields, s_content, text) < 0) {
        Py_DECREF(fields);
        return -1;
    }
    m = ls_bare_model((PyTypeObject *)example_cls, fields, PySet_New(fields));
    if (m == NULL)
        return -1;
    r = PyList_Append(em, m);
    Py_DECREF(m);
    return r;
}

/* fill_buckets(entries, contents, plain, em, example, depth, groups, rest) -> None
 *
 * For each entry in order, its text (contents[gid], else its own content): an empty one is
 * dropped; by the entry's `bucket`, a text at 0-3 is appended to plain[position] (four lists:
 * before, after, the author's note's top and bottom); at 5 or 6 to `em`, as an `example` instance
 * (position "before" or "after"); at 4, to its group in `depth` (dicts {depth, role, entries},
 * found in `groups` by (depth, role)) when its depth and role are exact ints (an unset role is 0)
 * and no at-depth entry before it went to `rest`; any other entry goes to `rest` with its text, as
 * an (entry, text) pair, for the caller to place in the same order. */
PyObject *
ls_fill_buckets(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *entries, *contents, *plain, *em, *depth, *groups, *rest, *ce, *g, *text, *pos, *pair;
    Py_ssize_t k, n;
    long long at;
    int r, depth_left = 0;

    (void)self;
    if (nargs != 8 || !PyList_Check(args[0]) || !PyDict_Check(args[1]) || !PyTuple_Check(args[2])
        || PyTuple_GET_SIZE(args[2]) != 4 || !PyList_Check(args[3]) || !PyType_Check(args[4])
        || !PyList_Check(args[5]) || !PyDict_Check(args[6]) || !PyList_Check(args[7])) {
        PyErr_SetString(PyExc_TypeError, "fill_buckets(entries: list, contents: dict, plain: tuple of 4 lists, "
                                         "em: list, example: type, depth: list, groups: dict, rest: list)");
        return NULL;
    }
    entries = args[0];
    contents = args[1];
    plain = args[2];
    em = args[3];
    depth = args[5];
    groups = args[6];
    rest = args[7];
    for (k = 0; k < 4; k++) {
        if (!PyList_Check(PyTuple_GET_ITEM(plain, k))) {
            PyErr_SetString(PyExc_TypeError, "fill_buckets: the plain buckets must be lists");
            return NULL;
        }
    }
    n = PyList_GET_SIZE(entries);
    for (k = 0; k < n && k < PyList_GET_SIZE(entries); k++) {
        ce = PyList_GET_ITEM(entries, k);
        Py_INCREF(ce);
        g = ls_getattr(ce, s_gid);
        text = g == NULL ? NULL : ls_entry_text(ce, g, contents);
        Py_XDECREF(g);
        r = text == NULL ? -1 : PyObject_IsTrue(text);
        pos = r <= 0 ? NULL : ls_getattr(ce, s_bucket);
        if (pos == NULL) {      /* an empty text is placed nowhere */
            Py_XDECREF(text);
            Py_DECREF(ce);
            if (r < 0 || PyErr_Occurred())
                return NULL;
            continue;
        }
        at = -1;
        if (!PyLong_CheckExact(pos) || !ls_as_ll(pos, &at))
            at = -1;
        if (at >= 0 && at <= 3)
            r = PyList_Append(PyTuple_GET_ITEM(plain, at), text);
        else if (at == 5 || at == 6)
            r = example(text, at, em, args[4]);
        else {
            r = at == 4 && !depth_left ? at_depth(ce, text, depth, groups) : 0;
            if (r == 0) {       /* the caller's, and every later at-depth entry with it */
                depth_left = depth_left || at == 4;
                pair = PyTuple_Pack(2, ce, text);
                r = pair == NULL ? -1 : PyList_Append(rest, pair);
                Py_XDECREF(pair);
            }
            else if (r > 0)
                r = 0;
        }
        Py_DECREF(pos);
        Py_DECREF(text);
        Py_DECREF(ce);
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

/* with_groups(now) -> list
 *
 * The entries of `now` whose `group_names` is true, in order: the members of some inclusion group,
 * which filter_groups groups (lorescan/_select.py is the reference). */
PyObject *
ls_with_groups(PyObject *self, PyObject *now)
{
    PyObject *out, *ce;
    Py_ssize_t k;
    int r;

    (void)self;
    if (!PyList_Check(now)) {
        PyErr_SetString(PyExc_TypeError, "with_groups(now: list)");
        return NULL;
    }
    out = PyList_New(0);
    if (out == NULL)
        return NULL;
    for (k = 0; k < PyList_GET_SIZE(now); k++) {
        ce = PyList_GET_ITEM(now, k);
        Py_INCREF(ce);
        r = ls_attr_true(ce, s_group_names);
        if (r > 0)
            r = PyList_Append(out, ce);
        Py_DECREF(ce);
        if (r < 0) {
            Py_DECREF(out);
            return NULL;
        }
    }
    return out;
}

/* -- the activated entries in the order their buckets are filled ------------------------------ */

typedef struct {
    double order;
    Py_ssize_t at;
    PyObject *entry;    /* held */
} ls_ordered;

/* greatest order first; equal orders in the order given (a stable sort, as sorted(reverse=True) is) */
static int
order_first(const void *a, const void *b)
{
    const ls_ordered *x = a, *y = b;

    if (x->order != y->order)
        return x->order > y->order ? -1 : 1;
    return x->at < y->at ? -1 : x->at > y->at;
}

/* by_order(entries) -> list | None
 *
 * sorted(entries, key=order_num, reverse=True) (lorescan/_emit.py, emit, is the reference), or None
 * when an order_num is neither an exact int within 2**53 (which a double holds exactly, so the two
 * compare as Python compares them) nor a float, or is NaN: the caller sorts those. Each entry is
 * held while its order is read (a property's code could change the list). */
PyObject *
ls_by_order(PyObject *self, PyObject *entries)
{
    ls_ordered *keyed;
    PyObject *out = NULL, *v;
    Py_ssize_t k, n, m = 0;
    double d;
    int overflow;
    long long i;

    (void)self;
    if (!PyList_Check(entries)) {
        PyErr_SetString(PyExc_TypeError, "by_order(entries: list)");
        return NULL;
    }
    n = PyList_GET_SIZE(entries);
    keyed = PyMem_New(ls_ordered, n > 0 ? n : 1);
    if (keyed == NULL)
        return PyErr_NoMemory();
    for (k = 0; k < n && k < PyList_GET_SIZE(entries); k++, m++) {
        keyed[k].entry = PyList_GET_ITEM(entries, k);
        Py_INCREF(keyed[k].entry);
        keyed[k].at = k;
        v = ls_getattr(keyed[k].entry, s_order_num);
        if (v == NULL) {
            m++;
            goto done;
        }
        if (PyFloat_CheckExact(v))
            d = PyFloat_AS_DOUBLE(v);
        else if (PyLong_CheckExact(v)) {
            i = PyLong_AsLongLongAndOverflow(v, &overflow);
            d = (overflow || i > (1LL << 53) || i < -(1LL << 53)) ? Py_NAN : (double)i;
        }
        else
            d = Py_NAN;
        Py_DECREF(v);
        keyed[k].order = d;
        if (d != d) {
            m++;
            out = Py_NewRef(Py_None);
            goto done;
        }
    }
    qsort(keyed, (size_t)m, sizeof(ls_ordered), order_first);
    out = PyList_New(m);
    if (out != NULL)
        for (k = 0; k < m; k++) {
            PyList_SET_ITEM(out, k, keyed[k].entry);      /* steals the hold */
            keyed[k].entry = NULL;
        }
done:
    for (k = 0; k < m; k++)
        Py_XDECREF(keyed[k].entry);
    PyMem_Free(keyed);
    return out;
}
