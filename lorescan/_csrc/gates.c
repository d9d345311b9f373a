/* The gate tables of a plan (PlaceGates): each place's record in compact arrays, and the gates of
 * a pass's candidates against a bitmap of the visible needles. lorescan/_index.py (PlaceTables)
 * and lorescan/_select.py (pass_candidates, plain_gate) are the reference. */
#include "native.h"

/* -- the visible needles as a bitmap -------------------------------------------------------- */

/* bitmap(ids) -> bytes: bit n set for every needle id n in the set (non-negative ints). */
PyObject *
ls_bitmap(PyObject *self, PyObject *ids)
{
    PyObject *it, *item, *out;
    long top = -1, v;
    Py_ssize_t n;
    unsigned char *bits;

    (void)self;
    if (!PyAnySet_Check(ids)) {
        PyErr_SetString(PyExc_TypeError, "bitmap() takes a set of needle ids");
        return NULL;
    }
    /* first the highest id, for the size */
    it = PyObject_GetIter(ids);
    if (it == NULL)
        return NULL;
    while ((item = PyIter_Next(it)) != NULL) {
        v = PyLong_AsLong(item);
        Py_DECREF(item);
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(it);
            return NULL;
        }
        if (v < 0) {
            Py_DECREF(it);
            PyErr_SetString(PyExc_ValueError, "needle ids are not negative");
            return NULL;
        }
        if (v > top)
            top = v;
    }
    Py_DECREF(it);
    if (PyErr_Occurred())
        return NULL;
    n = top < 0 ? 0 : (Py_ssize_t)(top >> 3) + 1;
    out = PyBytes_FromStringAndSize(NULL, n);
    if (out == NULL)
        return NULL;
    bits = (unsigned char *)PyBytes_AS_STRING(out);
    memset(bits, 0, (size_t)n);
    it = PyObject_GetIter(ids);
    if (it == NULL) {
        Py_DECREF(out);
        return NULL;
    }
    while ((item = PyIter_Next(it)) != NULL) {
        v = PyLong_AsLong(item);
        Py_DECREF(item);
        bits[v >> 3] |= (unsigned char)(1u << (v & 7));
    }
    Py_DECREF(it);
    if (PyErr_Occurred()) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}


static void
gates_dealloc(PlaceGates *self)
{
    PyMem_Free(self->kind);
    PyMem_Free(self->exclude);
    PyMem_Free(self->logic);
    PyMem_Free(self->start);
    PyMem_Free(self->n_primary);
    PyMem_Free(self->n_secondary);
    PyMem_Free(self->needles);
    PyMem_Free(self->place_of);
    PyMem_Free(self->list_start);
    PyMem_Free(self->list_count);
    PyMem_Free(self->list_places);
    Py_XDECREF(self->lists);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int
gates_init(PlaceGates *self, PyObject *args, PyObject *kwds)
{
    Py_ssize_t size, g, p;
    PyObject *pos, *lists;
    static char *names[] = {"size", "pos", "lists", NULL};

    if (!PyArg_ParseTupleAndKeywords(args, kwds, "nO!O!", names, &size, &PyList_Type, &pos, &PyList_Type, &lists))
        return -1;
    if (size < 0 || size > INT32_MAX || PyList_GET_SIZE(pos) > INT32_MAX || PyList_GET_SIZE(lists) > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "size out of range");
        return -1;
    }
    if (self->kind != NULL) {
        PyErr_SetString(PyExc_TypeError, "PlaceGates is initialised once");
        return -1;
    }
    self->size = size;
    self->kind = PyMem_Calloc((size_t)size + 1, 1);
    self->exclude = PyMem_Calloc((size_t)size + 1, 1);
    self->logic = PyMem_Calloc((size_t)size + 1, 1);
    self->start = PyMem_Calloc((size_t)size + 1, sizeof(uint32_t));
    self->n_primary = PyMem_Calloc((size_t)size + 1, sizeof(uint32_t));
    self->n_secondary = PyMem_Calloc((size_t)size + 1, sizeof(uint32_t));
    self->n_gids = PyList_GET_SIZE(pos);
    self->place_of = PyMem_Malloc(((size_t)self->n_gids + 1) * sizeof(int32_t));
    self->n_lists = PyList_GET_SIZE(lists);
    self->list_start = PyMem_Calloc((size_t)self->n_lists + 1, sizeof(uint32_t));
    self->list_count = PyMem_Malloc(((size_t)self->n_lists + 1) * sizeof(uint32_t));
    if (!self->kind || !self->exclude || !self->logic || !self->start || !self->n_primary || !self->n_secondary
        || !self->place_of || !self->list_start || !self->list_count) {
        PyErr_NoMemory();
        return -1;
    }
    for (g = 0; g < self->n_gids; g++) {
        p = PyLong_AsSsize_t(PyList_GET_ITEM(pos, g));
        if (p == -1 && PyErr_Occurred())
            return -1;
        self->place_of[g] = p >= 0 && p < size ? (int32_t)p : -1;
    }
    memset(self->list_count, 0xff, ((size_t)self->n_lists + 1) * sizeof(uint32_t));
    Py_INCREF(lists);
    self->lists = lists;
    return 0;
}

/* Append the ids of a tuple of needle ids to the arena; -1 on error. */
static int
append_ids(PlaceGates *self, PyObject *ids)
{
    Py_ssize_t k, n = PyTuple_GET_SIZE(ids);
    long v;

    if (self->used + (size_t)n > UINT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "too many needles");
        return -1;
    }
    if (self->used + (size_t)n > self->capacity) {
        size_t cap = self->capacity ? self->capacity : 1024;
        uint32_t *grown;
        while (cap < self->used + (size_t)n)
            cap *= 2;
        grown = PyMem_Realloc(self->needles, cap * sizeof(uint32_t));
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        self->needles = grown;
        self->capacity = cap;
    }
    for (k = 0; k < n; k++) {
        v = PyLong_AsLong(PyTuple_GET_ITEM(ids, k));
        if (v == -1 && PyErr_Occurred())
            return -1;
        if (v < 0 || v > (long)UINT32_MAX) {
            PyErr_SetString(PyExc_ValueError, "needle ids are not negative");
            return -1;
        }
        self->needles[self->used++] = (uint32_t)v;
    }
    return 0;
}

/* note(place, kind, primary, secondary, logic, exclude): the record met at `place`: its kind
 * (PRIMARY, SECONDARY, CONSTANT or NEVER), its needle ids (secondary None for PRIMARY), its
 * selective logic and whether it is excluded from recursion. A place is written once; later notes
 * of it are ignored, as they say the same. */
static PyObject *
gates_note(PlaceGates *self, PyObject *args)
{
    Py_ssize_t place;
    PyObject *primary, *secondary;
    int kind, logic, exclude;
    size_t at;

    if (!PyArg_ParseTuple(args, "niO!Oip", &place, &kind, &PyTuple_Type, &primary, &secondary, &logic, &exclude))
        return NULL;
    if (place < 0 || place >= self->size) {
        PyErr_SetString(PyExc_IndexError, "place out of range");
        return NULL;
    }
    if (kind < PRIMARY || kind > NEVER || (kind == SECONDARY) != (secondary != Py_None)
        || (secondary != Py_None && !PyTuple_Check(secondary))) {
        PyErr_SetString(PyExc_ValueError, "a kind 1-4, with a tuple of secondary needles for kind 2 only");
        return NULL;
    }
    if (self->kind[place] != UNKNOWN)
        Py_RETURN_NONE;
    at = self->used;
    if (append_ids(self, primary) < 0)
        return NULL;
    if (secondary != Py_None && append_ids(self, secondary) < 0) {
        self->used = at;
        return NULL;
    }
    self->start[place] = (uint32_t)at;
    self->n_primary[place] = (uint32_t)PyTuple_GET_SIZE(primary);
    self->n_secondary[place] = secondary == Py_None ? 0 : (uint32_t)PyTuple_GET_SIZE(secondary);
    self->logic[place] = (int8_t)(logic >= 0 && logic <= 3 ? logic : -1);
    self->exclude[place] = (uint8_t)(exclude != 0);
    self->kind[place] = (uint8_t)kind;
    Py_RETURN_NONE;
}

static inline int
visible(const unsigned char *bits, Py_ssize_t nbytes, uint32_t id)
{
    return (Py_ssize_t)(id >> 3) < nbytes && (bits[id >> 3] >> (id & 7)) & 1;
}

/* Whether any / how many of `n` needles are visible. */
static inline uint32_t
count_visible(const unsigned char *bits, Py_ssize_t nbytes, const uint32_t *ids, uint32_t n, int stop_at_first)
{
    uint32_t k, hits = 0;
    for (k = 0; k < n; k++) {
        if (visible(bits, nbytes, ids[k])) {
            hits++;
            if (stop_at_first)
                return hits;
        }
    }
    return hits;
}

/* The gate of one noted place: 1 passes, 0 does not (`excluding`: a recursion pass, where
 * entries excluded from recursion are out). */
static int
place_passes(PlaceGates *self, Py_ssize_t i, const unsigned char *bits, Py_ssize_t nbytes, int excluding)
{
    const uint32_t *ids = self->needles + self->start[i];
    uint32_t np = self->n_primary[i], ns, hits;
    uint8_t kind = self->kind[i];

    if (kind == NEVER || (excluding && self->exclude[i]))
        return 0;
    if (kind == CONSTANT)
        return 1;
    if (!count_visible(bits, nbytes, ids, np, 1))
        return 0;
    if (kind == PRIMARY)
        return 1;
    ns = self->n_secondary[i];
    switch (self->logic[i]) {
    case 0:   /* AND ANY */
        return count_visible(bits, nbytes, ids + np, ns, 1) > 0;
    case 2:   /* NOT ANY */
        return count_visible(bits, nbytes, ids + np, ns, 1) == 0;
    case 3:   /* AND ALL */
        hits = count_visible(bits, nbytes, ids + np, ns, 0);
        return hits == ns;
    case 1:   /* NOT ALL */
        hits = count_visible(bits, nbytes, ids + np, ns, 0);
        return hits != ns;
    default:
        return 0;
    }
}

/* Whether the set holds the int i: 1, 0, or -1 on error. */
static int
in_set(PyObject *set, Py_ssize_t i)
{
    PyObject *item = PyLong_FromSsize_t(i);
    int in;

    if (item == NULL)
        return -1;
    in = PySet_Contains(set, item);
    Py_DECREF(item);
    return in;
}

/* gate(order, j, bits, special, excluding, entries, now) -> int
 *
 * Gates order[j:] (places: a list of ints, or the bytes scan_order gives) while the places are
 * noted and not in `special` (a set of places, or None): appends entries[place] to `now` for each
 * one that passes, and returns the index in `order` of the first place it cannot gate
 * (len(order) when it gated them all). `excluding`: a recursion pass, where entries excluded from
 * recursion are out. */
static PyObject *
gates_gate(PlaceGates *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *order, *bitsobj, *special, *entries, *now;
    Py_ssize_t j, n, nbytes, i, n_entries;
    const unsigned char *bits;
    const int32_t *packed = NULL;
    int excluding, in;

    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "gate() takes 7 arguments");
        return NULL;
    }
    order = args[0];
    bitsobj = args[2];
    special = args[3];
    entries = args[5];
    now = args[6];
    excluding = PyObject_IsTrue(args[4]);
    if (excluding < 0)
        return NULL;
    if (!(PyList_Check(order) || PyBytes_Check(order)) || !PyBytes_Check(bitsobj) || !PyList_Check(entries)
        || !PyList_Check(now) || (special != Py_None && !PyAnySet_Check(special))) {
        PyErr_SetString(PyExc_TypeError, "gate(order: list | bytes, j: int, bits: bytes, special: set | None, "
                                         "excluding: bool, entries: list, now: list)");
        return NULL;
    }
    j = PyLong_AsSsize_t(args[1]);
    if (j == -1 && PyErr_Occurred())
        return NULL;
    if (j < 0)
        j = 0;
    if (special != Py_None && PySet_GET_SIZE(special) == 0)
        special = Py_None;
    bits = (const unsigned char *)PyBytes_AS_STRING(bitsobj);
    nbytes = PyBytes_GET_SIZE(bitsobj);
    if (PyBytes_Check(order)) {
        packed = (const int32_t *)PyBytes_AS_STRING(order);
        n = PyBytes_GET_SIZE(order) / (Py_ssize_t)sizeof(int32_t);
    } else {
        n = PyList_GET_SIZE(order);
    }
    n_entries = PyList_GET_SIZE(entries);
    for (; j < n; j++) {
        if (packed != NULL) {
            i = packed[j];
        } else {
            i = PyLong_AsSsize_t(PyList_GET_ITEM(order, j));
            if (i == -1 && PyErr_Occurred())
                return NULL;
        }
        if (i < 0 || i >= self->size || i >= n_entries || self->kind[i] == UNKNOWN)
            break;
        in = special == Py_None ? 0 : in_set(special, i);
        if (in < 0)
            return NULL;
        if (in)
            break;
        if (place_passes(self, i, bits, nbytes, excluding) && PyList_Append(now, PyList_GET_ITEM(entries, i)) < 0)
            return NULL;
    }
    return PyLong_FromSsize_t(j);
}

/* noted(place) -> bool: whether a place has been noted (for tests). */
static PyObject *
gates_noted(PlaceGates *self, PyObject *arg)
{
    Py_ssize_t place = PyLong_AsSsize_t(arg);
    if (place == -1 && PyErr_Occurred())
        return NULL;
    if (place < 0 || place >= self->size) {
        PyErr_SetString(PyExc_IndexError, "place out of range");
        return NULL;
    }
    return PyBool_FromLong(self->kind[place] != UNKNOWN);
}

static PyMethodDef gates_methods[] = {
    {"note", (PyCFunction)gates_note, METH_VARARGS,
     "note(place, kind, primary, secondary, logic, exclude): the record met at place."},
    {"gate", (PyCFunction)(void (*)(void))gates_gate, METH_FASTCALL,
     "gate(order, j, bits, special, excluding, entries, now) -> int: gate order[j:] while its places "
     "are noted and not special; the index of the first place left to the caller."},
    {"scan_order", (PyCFunction)(void (*)(void))ls_gates_scan_order, METH_FASTCALL,
     "scan_order(adds, hits, removes) -> bytes: the places (int32, ascending) of the entries in adds or "
     "listed under a needle in hits, less those in removes."},
    {"noted", (PyCFunction)gates_noted, METH_O, "noted(place) -> bool: whether place was noted."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject ls_PlaceGatesType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "lorescan._native.PlaceGates",
    .tp_basicsize = sizeof(PlaceGates),
    .tp_dealloc = (destructor)gates_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "PlaceGates(size, pos, lists): a plan's entry records by place, their gates, and the order of "
              "a pass's candidates (pos: gid -> place; lists: needle id -> gids).",
    .tp_methods = gates_methods,
    .tp_init = (initproc)gates_init,
    .tp_new = PyType_GenericNew,
};
