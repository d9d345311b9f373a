/* The candidates of a pass in scan order (PlaceGates.scan_order); lorescan/_select.py (pass_order)
 * is the reference. */
#include "native.h"

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
PyObject *
ls_gates_scan_order(PlaceGates *self, PyObject *const *args, Py_ssize_t nargs)
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
