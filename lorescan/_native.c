/* lorescan._native: the gates of a pass's simple entries over compact arrays (optional).
 *
 * The engine gates most candidates of a pass by set lookups alone: an entry with plain keys at the
 * global scan depth passes when one of its primary needles is visible (and its secondary needles
 * satisfy its selective logic). In Python each such test reads the entry's tuple of needle ids and
 * their int objects, scattered over the compiled book; here the same needle ids sit in one array
 * and the visible needles in a bitmap, so a pass gates its simple entries without touching them.
 *
 * The Python engine stays the reference: lorescan/_index.py (PlaceTables) and lorescan/_select.py
 * (pass_candidates) say what each function must give, and the tests compare the two. Built when a C
 * compiler is there (setup.py marks it optional); without it the engine runs the same steps in
 * Python.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

/* -- the visible needles as a bitmap -------------------------------------------------------- */

/* bitmap(ids) -> bytes: bit n set for every needle id n in the set (non-negative ints). */
static PyObject *
native_bitmap(PyObject *self, PyObject *ids)
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

/* -- PlaceGates: the simple entries' needles by place ------------------------------------- */

/* what a place holds: not noted yet; keyed, without or with secondary keys; constant; never a
 * candidate (disabled, or no keys) */
enum { UNKNOWN = 0, PRIMARY = 1, SECONDARY = 2, CONSTANT = 3, NEVER = 4 };

typedef struct {
    PyObject_HEAD
    Py_ssize_t size;       /* places in the plan */
    uint8_t *kind;         /* per place: one of the kinds above */
    uint8_t *exclude;      /* per place: excluded from recursion */
    uint8_t *has_depth;    /* per place: keyed with a scan depth of its own, `depth` */
    double *depth;
    int8_t *logic;         /* per place: the selective logic 0-3, or -1 */
    uint32_t *start;       /* per place: where its needles start in `needles` */
    uint32_t *n_primary;   /* per place: how many primary needles, then the secondary ones */
    uint32_t *n_secondary;
    uint32_t *needles;     /* every noted place's needle ids, one after another */
    size_t used, capacity;
    /* the candidates' order */
    Py_ssize_t n_gids;     /* entries in the books (gids) */
    int32_t *place_of;     /* per gid: its place, or -1 outside the plan */
    PyObject *lists;       /* per needle id: the gids listed under it (a list of sequences) */
    Py_ssize_t n_lists;
    uint32_t *list_start;  /* per needle id: where its places start in `list_places` */
    uint32_t *list_count;  /* per needle id: how many places, or UINT32_MAX: not read yet */
    int32_t *list_places;
    size_t lp_used, lp_capacity;
} PlaceGates;

static void
gates_dealloc(PlaceGates *self)
{
    PyMem_Free(self->kind);
    PyMem_Free(self->exclude);
    PyMem_Free(self->has_depth);
    PyMem_Free(self->depth);
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
    self->has_depth = PyMem_Calloc((size_t)size + 1, 1);
    self->depth = PyMem_Calloc((size_t)size + 1, sizeof(double));
    self->logic = PyMem_Calloc((size_t)size + 1, 1);
    self->start = PyMem_Calloc((size_t)size + 1, sizeof(uint32_t));
    self->n_primary = PyMem_Calloc((size_t)size + 1, sizeof(uint32_t));
    self->n_secondary = PyMem_Calloc((size_t)size + 1, sizeof(uint32_t));
    self->n_gids = PyList_GET_SIZE(pos);
    self->place_of = PyMem_Malloc(((size_t)self->n_gids + 1) * sizeof(int32_t));
    self->n_lists = PyList_GET_SIZE(lists);
    self->list_start = PyMem_Calloc((size_t)self->n_lists + 1, sizeof(uint32_t));
    self->list_count = PyMem_Malloc(((size_t)self->n_lists + 1) * sizeof(uint32_t));
    if (!self->kind || !self->exclude || !self->has_depth || !self->depth || !self->logic || !self->start || !self->n_primary || !self->n_secondary
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

/* note(place, kind, primary, secondary, logic, exclude[, depth]): the record met at `place`: its
 * kind (PRIMARY, SECONDARY, CONSTANT or NEVER), its needle ids (secondary None for PRIMARY), its
 * selective logic, whether it is excluded from recursion, and its own scan depth (None: the
 * global one). A place is written once; later notes
 * of it are ignored, as they say the same. */
static PyObject *
gates_note(PlaceGates *self, PyObject *args)
{
    Py_ssize_t place;
    PyObject *primary, *secondary, *depth = Py_None;
    int kind, logic, exclude;
    size_t at;
    double d = 0.0;

    if (!PyArg_ParseTuple(args, "niO!Oip|O", &place, &kind, &PyTuple_Type, &primary, &secondary, &logic, &exclude,
                          &depth))
        return NULL;
    if (depth != Py_None) {
        d = PyFloat_AsDouble(depth);
        if (d == -1.0 && PyErr_Occurred())
            return NULL;
        if (kind != PRIMARY && kind != SECONDARY) {
            PyErr_SetString(PyExc_ValueError, "a scan depth of its own is for a keyed place (kind 1 or 2)");
            return NULL;
        }
    }
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
    self->has_depth[place] = depth != Py_None;
    self->depth[place] = d;
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

/* -- the candidates of a pass, in scan order ---------------------------------------------- */

static inline void
set_place(unsigned char *bits, int32_t p, int on)
{
    if (on)
        bits[p >> 3] |= (unsigned char)(1u << (p & 7));
    else
        bits[p >> 3] &= (unsigned char)~(1u << (p & 7));
}

/* The next int of an iterator, checked to be in [0, limit): 1, 0 at its end, -1 on error. */
static int
next_id(PyObject *it, Py_ssize_t limit, const char *what, Py_ssize_t *out)
{
    PyObject *item = PyIter_Next(it);
    if (item == NULL)
        return PyErr_Occurred() ? -1 : 0;
    *out = PyLong_AsSsize_t(item);
    Py_DECREF(item);
    if (*out == -1 && PyErr_Occurred())
        return -1;
    if (*out < 0 || *out >= limit) {
        PyErr_Format(PyExc_IndexError, "%s out of range", what);
        return -1;
    }
    return 1;
}

/* Set (or clear) the bits of the places of the gids in an iterable. */
static int
mark_gids(PlaceGates *self, PyObject *gids, unsigned char *bits, int on)
{
    PyObject *it;
    Py_ssize_t g;
    int r;

    it = PyObject_GetIter(gids);
    if (it == NULL)
        return -1;
    while ((r = next_id(it, self->n_gids, "entry id", &g)) == 1)
        if (self->place_of[g] >= 0)
            set_place(bits, self->place_of[g], on);
    Py_DECREF(it);
    return r;
}

/* The places of the gids listed under needle n, read once and kept; NULL on error. */
static const int32_t *
needle_places(PlaceGates *self, Py_ssize_t n, uint32_t *count)
{
    PyObject *seq, *item;
    Py_ssize_t k, len, g;
    size_t at = self->lp_used;

    if (self->list_count[n] != UINT32_MAX) {
        *count = self->list_count[n];
        return self->list_places + self->list_start[n];
    }
    seq = PySequence_Fast(PyList_GET_ITEM(self->lists, n), "the gids under a needle are a sequence");
    if (seq == NULL)
        return NULL;
    len = PySequence_Fast_GET_SIZE(seq);
    if (self->lp_used + (size_t)len > INT32_MAX) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_OverflowError, "too many listed entries");
        return NULL;
    }
    if (self->lp_used + (size_t)len + 1 > self->lp_capacity) {
        size_t cap = self->lp_capacity ? self->lp_capacity : 4096;
        int32_t *grown;
        while (cap < self->lp_used + (size_t)len + 1)
            cap *= 2;
        grown = PyMem_Realloc(self->list_places, cap * sizeof(int32_t));
        if (grown == NULL) {
            Py_DECREF(seq);
            PyErr_NoMemory();
            return NULL;
        }
        self->list_places = grown;
        self->lp_capacity = cap;
    }
    for (k = 0; k < len; k++) {
        item = PySequence_Fast_GET_ITEM(seq, k);
        g = PyLong_AsSsize_t(item);
        if (g == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return NULL;
        }
        if (g < 0 || g >= self->n_gids) {
            Py_DECREF(seq);
            PyErr_SetString(PyExc_IndexError, "entry id out of range");
            return NULL;
        }
        if (self->place_of[g] >= 0)
            self->list_places[self->lp_used++] = self->place_of[g];
    }
    Py_DECREF(seq);
    self->list_start[n] = (uint32_t)at;
    self->list_count[n] = (uint32_t)(self->lp_used - at);
    *count = self->list_count[n];
    return self->list_places + at;
}

/* scan_order(adds, hits, removes) -> bytes
 *
 * The places (ascending, as native-endian int32) of the entries in any iterable of gids in the
 * tuple `adds`, or listed under a needle id in the iterable `hits`, less those in any iterable of
 * gids in the tuple `removes`. (lorescan/_select.py, pass_order, is the reference.) */
static PyObject *
gates_scan_order(PlaceGates *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *adds, *removes, *it, *out = NULL;
    Py_ssize_t k, n, nbytes, found = 0;
    unsigned char *bits;
    const int32_t *places;
    uint32_t count, c;
    int32_t *dst;
    int r;

    if (nargs != 3 || !PyTuple_Check(args[0]) || !PyTuple_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "scan_order(adds: tuple, hits: iterable, removes: tuple)");
        return NULL;
    }
    adds = args[0];
    removes = args[2];
    nbytes = (self->size >> 3) + 1;
    bits = PyMem_Calloc((size_t)nbytes, 1);
    if (bits == NULL)
        return PyErr_NoMemory();
    for (k = 0; k < PyTuple_GET_SIZE(adds); k++)
        if (mark_gids(self, PyTuple_GET_ITEM(adds, k), bits, 1) < 0)
            goto done;
    it = PyObject_GetIter(args[1]);
    if (it == NULL)
        goto done;
    while ((r = next_id(it, self->n_lists, "needle id", &n)) == 1) {
        places = needle_places(self, n, &count);
        if (places == NULL) {
            r = -1;
            break;
        }
        for (c = 0; c < count; c++)
            set_place(bits, places[c], 1);
    }
    Py_DECREF(it);
    if (r < 0)
        goto done;
    for (k = 0; k < PyTuple_GET_SIZE(removes); k++)
        if (mark_gids(self, PyTuple_GET_ITEM(removes, k), bits, 0) < 0)
            goto done;
    for (k = 0; k < nbytes; k++) {
        unsigned char b = bits[k];
        for (; b; b &= (unsigned char)(b - 1))
            found++;
    }
    out = PyBytes_FromStringAndSize(NULL, found * (Py_ssize_t)sizeof(int32_t));
    if (out == NULL)
        goto done;
    dst = (int32_t *)PyBytes_AS_STRING(out);
    for (k = 0; k < nbytes; k++) {
        unsigned char b = bits[k];
        int low;
        for (low = 0; b; low++, b >>= 1)
            if (b & 1)
                *dst++ = (int32_t)((k << 3) + low);
    }
done:
    PyMem_Free(bits);
    return out;
}

#define DEPTHS 8     /* scan depths of their own met in one call of gate(), at most */

/* gate(order, j, bits, special, excluding, entries, now, depth_bits) -> int
 *
 * Gates order[j:] (places: a list of ints, or the bytes scan_order gives) while the places are
 * noted and not in `special` (a set of places, or None): appends entries[place] to `now` for each
 * one that passes, and returns the index in `order` of the first place it cannot gate
 * (len(order) when it gated them all). `excluding`: a recursion pass, where entries excluded from
 * recursion are out. A place with a scan depth of its own reads depth_bits(depth) instead of
 * `bits` (None: such places are left to the caller). */
static PyObject *
gates_gate(PlaceGates *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *order, *bitsobj, *special, *entries, *now, *item, *depth_bits, *found[DEPTHS], *result = NULL;
    Py_ssize_t j, n, nbytes, i, n_entries, n_here;
    const unsigned char *bits, *here;
    const int32_t *packed = NULL;
    double depths[DEPTHS];
    int excluding, in, k, n_found = 0;

    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "gate() takes 8 arguments");
        return NULL;
    }
    depth_bits = args[7];
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
                                         "excluding: bool, entries: list, now: list, depth_bits)");
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
                goto done;
        }
        if (i < 0 || i >= self->size || i >= n_entries || self->kind[i] == UNKNOWN)
            break;
        if (special != Py_None) {
            item = PyLong_FromSsize_t(i);
            if (item == NULL)
                goto done;
            in = PySet_Contains(special, item);
            Py_DECREF(item);
            if (in < 0)
                goto done;
            if (in)
                break;
        }
        here = bits;
        n_here = nbytes;
        if (self->has_depth[i]) {      /* the needles visible at its own depth: depth_bits(depth), once per depth */
            double d = self->depth[i];
            for (k = 0; k < n_found && memcmp(&depths[k], &d, sizeof d) != 0; k++)
                ;
            if (k == n_found) {
                if (depth_bits == Py_None || n_found == DEPTHS)
                    break;
                item = PyFloat_FromDouble(d);
                found[k] = item == NULL ? NULL : PyObject_CallOneArg(depth_bits, item);
                Py_XDECREF(item);
                if (found[k] == NULL)
                    goto done;
                if (!PyBytes_Check(found[k])) {
                    Py_DECREF(found[k]);
                    PyErr_SetString(PyExc_TypeError, "depth_bits() returns bytes");
                    goto done;
                }
                depths[k] = d;
                n_found++;
            }
            here = (const unsigned char *)PyBytes_AS_STRING(found[k]);
            n_here = PyBytes_GET_SIZE(found[k]);
        }
        if (place_passes(self, i, here, n_here, excluding) && PyList_Append(now, PyList_GET_ITEM(entries, i)) < 0)
            goto done;
    }
    result = PyLong_FromSsize_t(j);
done:
    for (k = 0; k < n_found; k++)
        Py_DECREF(found[k]);
    return result;
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
     "gate(order, j, bits, special, excluding, entries, now, depth_bits) -> int: gate order[j:] while its places "
     "are noted and not special; the index of the first place left to the caller."},
    {"scan_order", (PyCFunction)(void (*)(void))gates_scan_order, METH_FASTCALL,
     "scan_order(adds, hits, removes) -> bytes: the places (int32, ascending) of the entries in adds or "
     "listed under a needle in hits, less those in removes."},
    {"noted", (PyCFunction)gates_noted, METH_O, "noted(place) -> bool: whether place was noted."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject PlaceGatesType = {
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

/* -- the budget of a pass ------------------------------------------------------------------ */

/* An int attribute or item as a long long; 0 and an exception if it is not an int that fits. */
static int
as_ll(PyObject *v, long long *out)
{
    int overflow;
    if (!PyLong_Check(v))
        return 0;
    *out = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow || (*out == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 0;
    }
    return 1;
}

static PyObject *s_ignore_budget, *s_rolls, *s_macros, *s_content, *s_gid, *s_key, *s_group_names, *s_group,
    *s_update;

/* Whether attribute `name` of `ce` is true: 1, 0, or -1 on error. */
static int
attr_true(PyObject *ce, PyObject *name)
{
    PyObject *v = PyObject_GetAttr(ce, name);
    int r;
    if (v == NULL)
        return -1;
    r = PyObject_IsTrue(v);
    Py_DECREF(v);
    return r;
}

/* Record one activation: contents[g], activated[key or g], done, pass_of, and the group names and
 * group field the later groups check; 0, or -1 on error. */
static int
record_activation(PyObject *ce, PyObject *content, PyObject *const *args)
{
    PyObject *contents = args[9], *activated = args[10], *done = args[11], *pass_of = args[12];
    PyObject *names = args[13], *fields = args[14], *g, *k, *v;
    int by_key, ok = -1;

    by_key = PyObject_IsTrue(args[7]);
    g = PyObject_GetAttr(ce, s_gid);
    if (g == NULL || by_key < 0)
        goto out_g;
    if (PyDict_SetItem(contents, g, content) < 0)
        goto out_g;
    k = by_key ? PyObject_GetAttr(ce, s_key) : (Py_INCREF(g), g);
    if (k == NULL)
        goto out_g;
    if (PyDict_SetItem(activated, k, ce) < 0 || PySet_Add(done, g) < 0 || PyDict_SetItem(pass_of, g, args[8]) < 0) {
        Py_DECREF(k);
        goto out_g;
    }
    Py_DECREF(k);
    v = PyObject_GetAttr(ce, s_group_names);
    if (v == NULL)
        goto out_g;
    if (PyObject_IsTrue(v) == 1) {
        PyObject *r = PyObject_CallMethodOneArg(names, s_update, v);
        if (r == NULL) {
            Py_DECREF(v);
            goto out_g;
        }
        Py_DECREF(r);
    }
    Py_DECREF(v);
    v = PyObject_GetAttr(ce, s_group);
    if (v == NULL)
        goto out_g;
    if (PyUnicode_Check(v) && PySet_Add(fields, v) < 0) {
        Py_DECREF(v);
        goto out_g;
    }
    Py_DECREF(v);
    ok = 0;
out_g:
    Py_XDECREF(g);
    return ok;
}

/* spend_lines(now, j, memo, state, budget, base, skip, by_key, count, contents, activated, done,
 *             pass_of, group_names, group_fields, roll, substitute, failed) -> int
 *
 * The budget step of a pass (lorescan/_engine.py, _Evaluation._spend, is the reference) for a
 * token counter whose counts add up at line starts, from now[j] on, while each entry's content
 * (substitute(entry) for one with macros) starts a new line piece whose count `memo` remembers,
 * and fits. It records each such activation (after roll(entry), for one that rolls: a failed roll
 * goes into `failed`), skips (after an overflow, with `skip`) entries that do not ignore the
 * budget, and returns the index of the first entry left to the caller, before any roll of it.
 * `state` is a list [overflowed, safe, tail_tokens, used, last, tokens]: the meter's and the line
 * tally's state, read and written back here (`last`: the content that is now the tally's one-line
 * tail, or None if none was added). */
static PyObject *
native_spend_lines(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *now, *memo, *state, *ce, *content, *count_obj, *last = NULL, *g;
    Py_ssize_t j, n;
    long long safe, tail, used, budget, base, cnt, total, tokens = 0;
    int overflowed, skip, ignore, rolls, macros, r;

    (void)self;
    if (nargs != 18 || !PyList_Check(args[0]) || !PyDict_Check(args[2]) || !PyList_Check(args[3])
        || PyList_GET_SIZE(args[3]) != 6 || !PyDict_Check(args[9]) || !PyDict_Check(args[10])
        || !PySet_Check(args[11]) || !PyDict_Check(args[12]) || !PySet_Check(args[14]) || !PySet_Check(args[17])) {
        PyErr_SetString(PyExc_TypeError, "spend_lines(now: list, j: int, memo: dict, state: list (6), budget, base, "
                                         "skip, by_key, count, contents: dict, activated: dict, done: set, "
                                         "pass_of: dict, group_names, group_fields: set, roll, substitute, "
                                         "failed: set)");
        return NULL;
    }
    now = args[0];
    memo = args[2];
    state = args[3];
    j = PyLong_AsSsize_t(args[1]);
    if (j == -1 && PyErr_Occurred())
        return NULL;
    n = PyList_GET_SIZE(now);
    overflowed = PyObject_IsTrue(PyList_GET_ITEM(state, 0));
    skip = PyObject_IsTrue(args[6]);
    if (overflowed < 0 || skip < 0)
        return NULL;
    if (!as_ll(PyList_GET_ITEM(state, 1), &safe) || !as_ll(PyList_GET_ITEM(state, 2), &tail)
        || !as_ll(PyList_GET_ITEM(state, 3), &used) || !as_ll(args[4], &budget) || !as_ll(args[5], &base)
        || !as_ll(PyList_GET_ITEM(state, 5), &tokens)
        || safe < 0 || tail < 0 || base < 0 || safe > LLONG_MAX / 4 || tail > LLONG_MAX / 4 || base > LLONG_MAX / 4)
        return PyLong_FromSsize_t(j);     /* numbers this does not handle: all to the caller */
    for (; j < n; j++) {
        ce = PyList_GET_ITEM(now, j);
        ignore = attr_true(ce, s_ignore_budget);
        if (ignore < 0)
            goto error;
        if (overflowed && skip && !ignore)
            continue;
        rolls = attr_true(ce, s_rolls);
        macros = attr_true(ce, s_macros);
        if (rolls < 0 || macros < 0)
            goto error;
        content = macros ? PyObject_CallOneArg(args[16], ce) : PyObject_GetAttr(ce, s_content);
        if (content == NULL)
            goto error;
        if (!PyUnicode_CheckExact(content) || PyUnicode_GET_LENGTH(content) == 0
            || Py_UNICODE_ISSPACE(PyUnicode_READ_CHAR(content, 0))) {
            Py_DECREF(content);
            break;
        }
        count_obj = PyDict_GetItemWithError(memo, content);     /* borrowed */
        if (count_obj == NULL || !as_ll(count_obj, &cnt) || cnt < 0 || cnt > LLONG_MAX / 4) {
            Py_DECREF(content);
            if (PyErr_Occurred())
                goto error;
            break;
        }
        total = safe + tail + cnt + base;
        if (!(skip && ignore) && total >= budget) {
            Py_DECREF(content);
            break;      /* an overflow: the caller's */
        }
        if (rolls) {    /* the roll, as the caller would make it before the budget (which draws nothing) */
            PyObject *ok = PyObject_CallOneArg(args[15], ce);
            r = ok == NULL ? -1 : PyObject_IsTrue(ok);
            Py_XDECREF(ok);
            if (r < 0) {
                Py_DECREF(content);
                goto error;
            }
            if (!r) {
                Py_DECREF(content);
                g = PyObject_GetAttr(ce, s_gid);
                if (g == NULL || PySet_Add(args[17], g) < 0) {
                    Py_XDECREF(g);
                    goto error;
                }
                Py_DECREF(g);
                continue;
            }
        }
        if (record_activation(ce, content, args) < 0) {
            Py_DECREF(content);
            goto error;
        }
        safe += tail;
        tail = cnt;
        tokens = safe + tail;
        if (total > used)
            used = total;
        Py_XDECREF(last);
        last = content;     /* owned */
    }
    /* write back: [overflowed, safe, tail_tokens, used, last, tokens] */
    {
        PyObject *vals[5];
        int k;
        vals[0] = PyLong_FromLongLong(safe);
        vals[1] = PyLong_FromLongLong(tail);
        vals[2] = PyLong_FromLongLong(used);
        vals[3] = PyLong_FromLongLong(tokens);
        if (!vals[0] || !vals[1] || !vals[2] || !vals[3]) {
            for (k = 0; k < 4; k++)
                Py_XDECREF(vals[k]);
            goto error;
        }
        PyList_SetItem(state, 1, vals[0]);      /* steals */
        PyList_SetItem(state, 2, vals[1]);
        PyList_SetItem(state, 3, vals[2]);
        PyList_SetItem(state, 5, vals[3]);
        if (last != NULL)
            PyList_SetItem(state, 4, last);     /* steals */
    }
    return PyLong_FromSsize_t(j);
error:
    Py_XDECREF(last);
    return NULL;
}

/* -- activation records ---------------------------------------------------------------------- */

static PyObject *s_pass_index;

/* activation_records(activated, contents, pass_of, shared, forced_type, make) -> list
 *
 * The activation record of each activated entry, in order (lorescan/_emit.py, _records, is the
 * reference): the one `shared` keeps under (gid << 3 | pass & 7) while its content is the same
 * object and its pass the same, else make(entry, text, pass) (kept in `shared` unless the entry's
 * type is `forced_type`, a caller's object). */
static PyObject *
native_activation_records(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *activated, *contents, *pass_of, *shared, *forced_type, *make, *out, *ce, *g = NULL, *text = NULL,
        *pass = NULL, *slot = NULL, *a = NULL, *v;
    Py_ssize_t k, n;
    long long gid, p;
    int own, same;

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
        g = PyObject_GetAttr(ce, s_gid);
        if (g == NULL || !as_ll(g, &gid) || gid < 0 || gid > (LLONG_MAX >> 4))
            goto error;
        text = PyDict_GetItemWithError(contents, g);
        if (text != NULL)
            Py_INCREF(text);
        else if (PyErr_Occurred() || (text = PyObject_GetAttr(ce, s_content)) == NULL)
            goto error;
        pass = PyDict_GetItemWithError(pass_of, g);
        if (pass != NULL)
            Py_INCREF(pass);
        else if (PyErr_Occurred() || (pass = PyLong_FromLong(0)) == NULL)
            goto error;
        if (!as_ll(pass, &p))
            goto error;
        own = (PyObject *)Py_TYPE(ce) != forced_type;
        slot = PyLong_FromLongLong(gid << 3 | (p & 7));
        if (slot == NULL)
            goto error;
        a = own ? PyDict_GetItemWithError(shared, slot) : NULL;      /* borrowed */
        same = 0;
        if (a != NULL) {
            Py_INCREF(a);
            v = PyObject_GetAttr(a, s_content);
            if (v == NULL)
                goto error;
            same = v == text;
            Py_DECREF(v);
            if (same) {
                v = PyObject_GetAttr(a, s_pass_index);
                if (v == NULL)
                    goto error;
                same = PyObject_RichCompareBool(v, pass, Py_EQ);
                Py_DECREF(v);
                if (same < 0)
                    goto error;
            }
        } else if (PyErr_Occurred()) {
            goto error;
        }
        if (!same) {
            Py_XDECREF(a);
            a = PyObject_CallFunctionObjArgs(make, ce, text, pass, NULL);
            if (a == NULL || (own && PyDict_SetItem(shared, slot, a) < 0))
                goto error;
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

static PyMethodDef module_methods[] = {
    {"activation_records", (PyCFunction)(void (*)(void))native_activation_records, METH_FASTCALL,
     "activation_records(activated, contents, pass_of, shared, forced_type, make) -> list: each activated "
     "entry's record, shared while its content and pass are unchanged."},
    {"spend_lines", (PyCFunction)(void (*)(void))native_spend_lines, METH_FASTCALL,
     "spend_lines(now, j, memo, state, budget, base, skip, by_key, count, contents, activated, done, pass_of, "
     "group_names, group_fields, roll, substitute, failed) -> int: the budget step of a pass for its common "
     "entries, from now[j]; "
     "the index of the first entry left to the caller."},
    {"bitmap", (PyCFunction)native_bitmap, METH_O,
     "bitmap(ids) -> bytes: bit n set for each needle id n in the set."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT, "lorescan._native",
    "The gates of a pass's simple entries over compact arrays (optional; lorescan/_select.py is the "
    "reference).", -1, module_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__native(void)
{
    PyObject *m;
    if (PyType_Ready(&PlaceGatesType) < 0)
        return NULL;
#define INTERN(var, text) if ((var = PyUnicode_InternFromString(text)) == NULL) return NULL
    INTERN(s_ignore_budget, "ignore_budget");
    INTERN(s_rolls, "rolls");
    INTERN(s_macros, "macros");
    INTERN(s_content, "content");
    INTERN(s_gid, "gid");
    INTERN(s_key, "key");
    INTERN(s_group_names, "group_names");
    INTERN(s_group, "group");
    INTERN(s_update, "update");
    INTERN(s_pass_index, "pass_index");
#undef INTERN
    m = PyModule_Create(&native_module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&PlaceGatesType);
    if (PyModule_AddObject(m, "PlaceGates", (PyObject *)&PlaceGatesType) < 0) {
        Py_DECREF(&PlaceGatesType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
