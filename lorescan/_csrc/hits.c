/* The needles an automaton finds in one piece of scan text (collect_hits); lorescan/_keys.py
 * (Needles._collect) is the reference. */
#include "native.h"

/* SillyTavern's word character: ASCII \w (lorescan/_match.py, is_word_char). */
static inline int
is_word(Py_UCS4 ch)
{
    return ch < 128 && (ch == '_' || (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'));
}

/* One needle id found ending at `end`: added to `found` unless it is there already, or it is a
 * whole-word needle with a word character on either side. 0, or -1 on error. */
static int
found_one(PyObject *nid, Py_ssize_t end, PyObject *found, PyObject *word, PyObject *length, long long base,
          int kind, const void *data, Py_ssize_t n)
{
    long long id, len;
    Py_ssize_t k, start;
    PyObject *flag;
    int seen = PySet_Contains(found, nid);

    if (seen != 0)
        return seen < 0 ? -1 : 0;
    if (!ls_as_ll(nid, &id)) {
        PyErr_SetString(PyExc_TypeError, "collect_hits: a needle id that is not an int");
        return -1;
    }
    k = (Py_ssize_t)(id - base);
    if (k < 0 || k >= PyList_GET_SIZE(word) || k >= PyList_GET_SIZE(length)) {
        PyErr_SetString(PyExc_IndexError, "collect_hits: a needle id outside the needles");
        return -1;
    }
    flag = PyList_GET_ITEM(word, k);
    if (flag == Py_True || (flag != Py_False && PyObject_IsTrue(flag) == 1)) {
        if (!ls_as_ll(PyList_GET_ITEM(length, k), &len)) {
            PyErr_SetString(PyExc_TypeError, "collect_hits: a needle length that is not an int");
            return -1;
        }
        start = end - (Py_ssize_t)len + 1;
        if (start > 0 && start - 1 < n && is_word(PyUnicode_READ(kind, data, start - 1)))
            return 0;
        if (end + 1 < n && end + 1 >= 0 && is_word(PyUnicode_READ(kind, data, end + 1)))
            return 0;
    }
    return PySet_Add(found, nid);
}

/* collect_hits(matches, text, found, word, length, base) -> None
 *
 * Add to the set `found` the needle ids of `matches` (an automaton's iter(text): (end, value)
 * pairs, the value an id or a tuple of ids) that are new, leaving out a whole-word needle
 * (word[id - base] is True) with an ASCII word character just before its start or just after its
 * end (its start is end - length[id - base] + 1). */
PyObject *
ls_collect_hits(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *it, *text, *found, *word, *length, *item, *value;
    long long base, end;
    Py_ssize_t n, k;
    const void *data;
    int kind, bad;

    (void)self;
    if (nargs != 6 || !PyIter_Check(args[0]) || !PyUnicode_Check(args[1]) || !PySet_Check(args[2])
        || !PyList_Check(args[3]) || !PyList_Check(args[4]) || !ls_as_ll(args[5], &base)) {
        PyErr_SetString(PyExc_TypeError, "collect_hits(matches: iterator, text: str, found: set, word: list, "
                                         "length: list, base: int)");
        return NULL;
    }
    it = args[0];
    text = args[1];
    found = args[2];
    word = args[3];
    length = args[4];
    n = PyUnicode_GET_LENGTH(text);
    kind = PyUnicode_KIND(text);
    data = PyUnicode_DATA(text);
    while ((item = PyIter_Next(it)) != NULL) {
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2 || !ls_as_ll(PyTuple_GET_ITEM(item, 0), &end)) {
            Py_DECREF(item);
            PyErr_SetString(PyExc_TypeError, "collect_hits: a match that is not an (end, value) pair");
            return NULL;
        }
        value = PyTuple_GET_ITEM(item, 1);
        bad = 0;
        if (PyTuple_Check(value)) {
            for (k = 0; k < PyTuple_GET_SIZE(value) && !bad; k++)
                bad = found_one(PyTuple_GET_ITEM(value, k), (Py_ssize_t)end, found, word, length, base, kind, data,
                                n) < 0;
        }
        else {
            bad = found_one(value, (Py_ssize_t)end, found, word, length, base, kind, data, n) < 0;
        }
        Py_DECREF(item);
        if (bad)
            return NULL;
    }
    if (PyErr_Occurred())
        return NULL;
    Py_RETURN_NONE;
}
