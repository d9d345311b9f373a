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

/* lines_hits(lines, memo, hits) -> (list, set)
 *
 * ScanBuffer.add_recursion's hits of a recursion text's lines (lorescan/_scan.py is the reference):
 * each line's remembered hits, memo[line] (a tuple or any collection of needle ids), else
 * hits(line), which finds and remembers them; and the set of every needle id among them. */
PyObject *
ls_lines_hits(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *lines, *memo, *hits, *got = NULL, *found = NULL, *line, *h, *it, *nid, *out;
    Py_ssize_t i, k, n;

    (void)self;
    if (nargs != 3 || !PyList_Check(args[0]) || !PyDict_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "lines_hits(lines: list, memo: dict, hits)");
        return NULL;
    }
    lines = args[0];
    memo = args[1];
    hits = args[2];
    n = PyList_GET_SIZE(lines);
    got = PyList_New(n);
    found = PySet_New(NULL);
    if (got == NULL || found == NULL)
        goto fail;
    for (i = 0; i < n && i < PyList_GET_SIZE(lines); i++) {
        line = PyList_GET_ITEM(lines, i);
        Py_INCREF(line);
        h = PyDict_GetItemWithError(memo, line);     /* borrowed */
        if (h != NULL && h != Py_None)
            Py_INCREF(h);
        else
            h = PyErr_Occurred() ? NULL : PyObject_CallOneArg(hits, line);
        Py_DECREF(line);
        if (h == NULL)
            goto fail;
        PyList_SET_ITEM(got, i, h);     /* steals h; `got` keeps it while its ids are added */
        if (PyTuple_CheckExact(h)) {
            for (k = 0; k < PyTuple_GET_SIZE(h); k++)
                if (PySet_Add(found, PyTuple_GET_ITEM(h, k)) < 0)
                    goto fail;
            continue;
        }
        it = PyObject_GetIter(h);
        if (it == NULL)
            goto fail;
        while ((nid = PyIter_Next(it)) != NULL) {
            k = PySet_Add(found, nid);
            Py_DECREF(nid);
            if (k < 0)
                break;
        }
        Py_DECREF(it);
        if (PyErr_Occurred())
            goto fail;
    }
    if (i < n) {    /* the list was shortened by a hits() call: the rest are its lines no more */
        if (PyList_SetSlice(got, i, n, NULL) < 0)
            goto fail;
    }
    out = PyTuple_Pack(2, got, found);
    Py_DECREF(got);
    Py_DECREF(found);
    return out;
fail:
    Py_XDECREF(got);
    Py_XDECREF(found);
    return NULL;
}
