/* Each needle's entries listed while a key index is built (key_lists, index_keys); lorescan/_index.py
 * (KeyIndex._add_group, _list_keys and _list_entries) is the reference. */
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
        PyErr_SetString(PyExc_IndexError, "index_keys: a needle id outside the lists");
        return -1;
    }
    list = PyList_GET_ITEM(lists, at);
    if (!PyList_Check(list)) {
        PyErr_SetString(PyExc_TypeError, "index_keys: each needle's entries must be a list");
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
        PyErr_SetString(PyExc_TypeError, "index_keys: a key's nids must be a tuple");
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

/* One prepared key listed for owner `g`: an int is a needle id, and `g` is appended to lists[id]; a
 * Key is listed under each of its `nids`, or, with none and a kind other than `skip`, `g` goes to
 * `always` unless it is already last there. 0, or -1 on error. */
static int
list_item(PyObject *item, PyObject *g, PyObject *lists, PyObject *always, PyObject *skip)
{
    return PyLong_CheckExact(item) ? list_under(lists, item, g) : list_key(item, g, lists, always, skip);
}

/* An entry's raw keys prepared by lookup in `cache`: a new list of new references, or NULL with no
 * exception when a key is not there or cannot be hashed (the caller's `prepare` prepares them), or
 * NULL with an exception on another error. */
static PyObject *
looked_up(PyObject *keys, PyObject *cache)
{
    Py_ssize_t k, n = PyList_GET_SIZE(keys);
    PyObject *out = PyList_New(n), *item;

    for (k = 0; out != NULL && k < n && k < PyList_GET_SIZE(keys); k++) {
        item = PyDict_GetItemWithError(cache, PyList_GET_ITEM(keys, k));
        if (item == NULL) {
            Py_CLEAR(out);
            if (PyErr_ExceptionMatches(PyExc_TypeError))    /* an unhashable key */
                PyErr_Clear();
            break;
        }
        Py_INCREF(item);
        PyList_SET_ITEM(out, k, item);
    }
    if (out != NULL && k < n) {     /* the list got shorter: never, unless a key's __eq__ changed it */
        Py_CLEAR(out);
        PyErr_SetString(PyExc_RuntimeError, "index_keys: a key list changed while it was read");
    }
    return out;
}

/* index_keys(klists, gids, cache, lists, always, skip, macro, prepare) -> list
 *
 * KeyIndex._add_group's listing in one pass: for each entry, its primary keys klists[i] (a falsy
 * value: none) prepared by lookup in `cache` (a list with a key the cache lacks or cannot hash, or
 * keys that are not a list: prepare(keys)) and listed under their needles as _list_entries lists
 * them, the entry's gid being gids[i]; an item that is `macro` is not listed, and its entry's place
 * i goes to the list returned (the entries with a macro key, in order). */
PyObject *
ls_index_keys(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *klists, *gids, *macro_places, *keys, *items, *g;
    Py_ssize_t i, k;
    int r, has_macro;

    (void)self;
    if (nargs != 8 || !PyList_Check(args[0]) || !PyList_Check(args[1]) || !PyDict_Check(args[2])
        || !PyList_Check(args[3]) || !PyList_Check(args[4]) || PyList_GET_SIZE(args[0]) != PyList_GET_SIZE(args[1])) {
        PyErr_SetString(PyExc_TypeError, "index_keys(klists: list, gids: list (as long), cache: dict, lists: list, "
                                         "always: list, skip, macro, prepare)");
        return NULL;
    }
    klists = args[0];
    gids = args[1];
    macro_places = PyList_New(0);
    for (i = 0; macro_places != NULL && i < PyList_GET_SIZE(klists) && i < PyList_GET_SIZE(gids); i++) {
        keys = PyList_GET_ITEM(klists, i);
        if (keys == Py_None || (PyList_CheckExact(keys) && PyList_GET_SIZE(keys) == 0))
            continue;
        Py_INCREF(keys);
        g = PyList_GET_ITEM(gids, i);
        Py_INCREF(g);
        items = NULL;
        r = PyList_CheckExact(keys) ? 1 : PyObject_IsTrue(keys);
        if (r > 0 && PyList_CheckExact(keys))
            items = looked_up(keys, args[2]);
        if (r > 0 && items == NULL && !PyErr_Occurred()) {    /* odd keys: prepared one by one */
            PyObject *made = PyObject_CallOneArg(args[7], keys);
            items = made == NULL ? NULL : PySequence_List(made);
            Py_XDECREF(made);
        }
        r = r < 0 || (r > 0 && items == NULL) ? -1 : 0;
        has_macro = 0;
        for (k = 0; items != NULL && r == 0 && k < PyList_GET_SIZE(items); k++) {
            PyObject *item = PyList_GET_ITEM(items, k);
            if (item == args[6])
                has_macro = 1;
            else
                r = list_item(item, g, args[3], args[4], args[5]);
        }
        if (r == 0 && has_macro) {
            PyObject *place = PyLong_FromSsize_t(i);
            r = place == NULL ? -1 : PyList_Append(macro_places, place);
            Py_XDECREF(place);
        }
        Py_XDECREF(items);
        Py_DECREF(g);
        Py_DECREF(keys);
        if (r < 0)
            Py_CLEAR(macro_places);
    }
    return macro_places;
}

/* the slots key_lists reads */
enum { K_KEYS, K_SECONDARY, K_GID, N_KEY_SLOTS };
static const char *const key_slot_names[N_KEY_SLOTS] = {"keys", "keys_secondary", "gid"};
static PyObject *key_slots[N_KEY_SLOTS];

/* The names above, interned once (module.c's init): 0, or -1. */
int
ls_listing_init(void)
{
    return ls_intern_all(key_slot_names, N_KEY_SLOTS, key_slots);
}

/* Every key of a truthy `keys` value added to `distinct`: 1, 0 when a key cannot be hashed (the
 * TypeError cleared), -1 on another error. */
static int
add_distinct(PyObject *distinct, PyObject *keys)
{
    PyObject *it, *k;
    int r;

    if (keys == Py_None)
        return 1;
    if (PyList_CheckExact(keys)) {
        Py_ssize_t j;
        for (j = 0; j < PyList_GET_SIZE(keys); j++) {
            k = PyList_GET_ITEM(keys, j);
            Py_INCREF(k);
            r = PySet_Add(distinct, k);
            Py_DECREF(k);
            if (r < 0)
                goto failed;
        }
        return 1;
    }
    r = PyObject_IsTrue(keys);
    if (r <= 0)
        return r < 0 ? -1 : 1;
    if ((it = PyObject_GetIter(keys)) == NULL)
        return -1;
    while ((k = PyIter_Next(it)) != NULL) {
        r = PySet_Add(distinct, k);
        Py_DECREF(k);
        if (r < 0)
            break;
    }
    Py_DECREF(it);
    if (!PyErr_Occurred())
        return 1;
failed:
    if (!PyErr_ExceptionMatches(PyExc_TypeError))
        return -1;
    PyErr_Clear();
    return 0;
}

/* key_lists(cls, entries) -> (klists, slists, gids, distinct) | None
 *
 * What KeyIndex._add_group reads of a group's entries, in one pass (`cls`: the class whose slots
 * hold them): each one's primary and secondary key lists and gid, and the set of every key (the
 * primary ones added first, then the secondary ones, in order: the set _add_group builds). None
 * when a key cannot be hashed (the caller then reads them its own way). */
PyObject *
ls_key_lists(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyTypeObject *cls;
    PyObject *entries, *lists[3] = {NULL, NULL, NULL}, *distinct = NULL, *out = NULL;
    Py_ssize_t offsets[N_KEY_SLOTS], i, n;
    int k, r = 1;

    (void)self;
    if (nargs != 2 || !PyType_Check(args[0]) || !PyList_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "key_lists(cls: type, entries: list)");
        return NULL;
    }
    cls = (PyTypeObject *)args[0];
    entries = args[1];
    if (ls_slot_offsets(cls, key_slots, N_KEY_SLOTS, offsets, "key_lists") < 0)
        return NULL;
    n = PyList_GET_SIZE(entries);
    for (k = 0; k < 3; k++)
        if ((lists[k] = PyList_New(n)) == NULL)
            goto done;
    if ((distinct = PySet_New(NULL)) == NULL)
        goto done;
    for (i = 0; i < n && r > 0; i++) {
        PyObject *ce;
        if (i >= PyList_GET_SIZE(entries)) {
            PyErr_SetString(PyExc_RuntimeError, "key_lists: the entries changed while they were read");
            r = -1;
            break;
        }
        ce = PyList_GET_ITEM(entries, i);
        Py_INCREF(ce);
        for (k = 0; k < N_KEY_SLOTS && r > 0; k++) {
            PyObject *v = ls_slot_or_attr(ce, cls, offsets[k], key_slots[k]);
            if (v == NULL) {
                r = -1;
                break;
            }
            if (k == K_KEYS)
                r = add_distinct(distinct, v);
            PyList_SET_ITEM(lists[k], i, v);
        }
        Py_DECREF(ce);
    }
    for (i = 0; i < n && r > 0; i++)     /* the secondary keys after all the primary ones, as KeyIndex adds them */
    {
        PyObject *keys = PyList_GET_ITEM(lists[K_SECONDARY], i);
        Py_INCREF(keys);
        r = add_distinct(distinct, keys);
        Py_DECREF(keys);
    }
    if (r > 0)
        out = Py_BuildValue("(OOOO)", lists[0], lists[1], lists[2], distinct);
    else if (r == 0)
        out = Py_NewRef(Py_None);
done:
    for (k = 0; k < 3; k++)
        Py_XDECREF(lists[k]);
    Py_XDECREF(distinct);
    return out;
}
