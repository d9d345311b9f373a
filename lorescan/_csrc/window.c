/* The scan window's messages and their hits (scan_window); lorescan/_scan.py (ScanBuffer.message,
 * ScanBuffer.ensure_scanned and ScanMessages._get) is the reference. */
#include "native.h"

/* Message k (0 = newest) as ScanMessages._get gives it: from the cache of this evaluation, else
 * "name: mes" found in the `named` memo (or mes alone without names); anything else (the first
 * message, which gets macros; a memo miss; an odd message) from `get(k)` itself. A new reference. */
static PyObject *
window_text(Py_ssize_t k, PyObject *const *args)
{
    PyObject *cache = args[0], *kept = args[1], *chat = args[3], *named = args[4], *get = args[6];
    Py_ssize_t length, j, name_len, mes_len;
    PyObject *key, *got, *jo, *msg = NULL, *fields = NULL, *mes, *name;
    int include_names;

    key = PyLong_FromSsize_t(k);
    if (key == NULL)
        return NULL;
    got = PyDict_GetItemWithError(cache, key);
    if (got != NULL) {
        Py_DECREF(key);
        Py_INCREF(got);
        return got;
    }
    if (PyErr_Occurred())
        goto fail;
    length = PyLong_AsSsize_t(args[2]);
    include_names = PyObject_IsTrue(args[5]);
    if ((length == -1 && PyErr_Occurred()) || include_names < 0)
        goto fail;
    jo = PySequence_GetItem(kept, length - 1 - k);
    if (jo == NULL)
        goto fail;
    j = PyLong_AsSsize_t(jo);
    Py_DECREF(jo);
    if (j == -1 && PyErr_Occurred())
        goto fail;
    if (j == 0 || (named == Py_None && include_names))
        goto slow;
    msg = PySequence_GetItem(chat, j);
    if (msg == NULL)
        goto fail;
    fields = PyObject_GetAttr(msg, s_dict);
    if (fields == NULL) {
        PyErr_Clear();
        goto slow;
    }
    if (!PyDict_CheckExact(fields))
        goto slow;
    mes = PyDict_GetItemWithError(fields, s_mes);
    name = mes == NULL ? NULL : PyDict_GetItemWithError(fields, s_name);
    if (mes == NULL || name == NULL || !PyUnicode_CheckExact(mes) || !PyUnicode_CheckExact(name))
        goto slow;
    if (named == Py_None) {     /* without names: the message text itself */
        got = mes;
    }
    else {                      /* _named's hit: a kept "name: mes" for this name */
        got = PyDict_GetItemWithError(named, mes);
        if (got == NULL) {
            if (PyErr_Occurred())
                goto fail;
            goto slow;
        }
        name_len = PyUnicode_GET_LENGTH(name);
        mes_len = PyUnicode_GET_LENGTH(mes);
        if (!PyUnicode_CheckExact(got) || PyUnicode_GET_LENGTH(got) != name_len + 2 + mes_len
            || PyUnicode_Tailmatch(got, name, 0, PY_SSIZE_T_MAX, -1) != 1)
            goto slow;
    }
    Py_INCREF(got);
    if (PyDict_SetItem(cache, key, got) < 0) {
        Py_DECREF(got);
        goto fail;
    }
    Py_DECREF(fields);
    Py_DECREF(msg);
    Py_DECREF(key);
    return got;
slow:
    if (PyErr_Occurred())
        goto fail;
    Py_XDECREF(fields);
    Py_XDECREF(msg);
    got = PyObject_CallOneArg(get, key);    /* ScanMessages._get keeps it in the cache itself */
    Py_DECREF(key);
    if (got != NULL && !PyUnicode_Check(got)) {
        Py_DECREF(got);
        PyErr_SetString(PyExc_TypeError, "scan_window: a message that is not a str");
        return NULL;
    }
    return got;
fail:
    Py_XDECREF(fields);
    Py_XDECREF(msg);
    Py_DECREF(key);
    return NULL;
}

/* scan_window(cache, kept, length, chat, named, include_names, get, trimmed, strip, start, upto,
 *             message_hits, none, memo, hits) -> None
 *
 * ScanBuffer.ensure_scanned for messages start..upto-1 of a ScanMessages: the messages up to upto
 * trimmed into `trimmed` (a message's text stripped of the characters `strip`, None for an empty
 * one), then each one's hits appended to `message_hits`: `none` for an empty text, else the `memo`
 * entry, else hits(text). */
PyObject *
ls_scan_window(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *trimmed, *strip, *message_hits, *none, *memo, *hits, *raw, *text, *h;
    Py_ssize_t start, upto, k;
    int bad;

    (void)self;
    if (nargs != 15 || !PyDict_Check(args[0]) || !PyLong_Check(args[2]) || !(args[4] == Py_None || PyDict_Check(args[4]))
        || !PyCallable_Check(args[6]) || !PyList_Check(args[7]) || !PyUnicode_Check(args[8])
        || !PyList_Check(args[11]) || !PyDict_Check(args[13]) || !PyCallable_Check(args[14])) {
        PyErr_SetString(PyExc_TypeError, "scan_window(cache: dict, kept, length: int, chat, named: dict | None, "
                                         "include_names, get, trimmed: list, strip: str, start: int, upto: int, "
                                         "message_hits: list, none, memo: dict, hits)");
        return NULL;
    }
    trimmed = args[7];
    strip = args[8];
    message_hits = args[11];
    none = args[12];
    memo = args[13];
    hits = args[14];
    start = PyLong_AsSsize_t(args[9]);
    upto = PyLong_AsSsize_t(args[10]);
    if (PyErr_Occurred())
        return NULL;
    for (k = PyList_GET_SIZE(trimmed); k < upto; k++) {
        raw = window_text(k, args);
        if (raw == NULL)
            return NULL;
        if (PyUnicode_GET_LENGTH(raw) > 0) {
            text = PyObject_CallMethodOneArg(raw, s_strip, strip);
        }
        else {
            text = Py_None;
            Py_INCREF(text);
        }
        Py_DECREF(raw);
        if (text == NULL)
            return NULL;
        bad = PyList_Append(trimmed, text);
        Py_DECREF(text);
        if (bad < 0)
            return NULL;
    }
    if (start < 0 || upto > PyList_GET_SIZE(trimmed)) {
        PyErr_SetString(PyExc_IndexError, "scan_window: a range outside the trimmed messages");
        return NULL;
    }
    for (k = start; k < upto; k++) {
        text = PyList_GET_ITEM(trimmed, k);
        if (text == Py_None || !PyUnicode_Check(text) || PyUnicode_GET_LENGTH(text) == 0) {
            h = none;
            Py_INCREF(h);
        }
        else {
            h = PyDict_GetItemWithError(memo, text);
            if (h != NULL)
                Py_INCREF(h);
            else if (PyErr_Occurred())
                return NULL;
            else {
                Py_INCREF(text);    /* held across the call: the list could change meanwhile */
                h = PyObject_CallOneArg(hits, text);
                Py_DECREF(text);
            }
            if (h == NULL)
                return NULL;
        }
        bad = PyList_Append(message_hits, h);
        Py_DECREF(h);
        if (bad < 0)
            return NULL;
    }
    Py_RETURN_NONE;
}

/* Whether message `msg` of exactly `cls` is a system message, read from its instance dict without
 * running any Python code: 1 or 0; -2 when that cannot be told so (another type, no exact dict, a
 * value that is not a bool); -1 with an exception. */
static int
plain_is_system(PyObject *msg, PyObject *cls)
{
    PyObject *fields, *v;
    int r = -2;

    if ((PyObject *)Py_TYPE(msg) != cls)
        return -2;
    fields = PyObject_GenericGetDict(msg, NULL);
    if (fields == NULL) {
        PyErr_Clear();
        return -2;
    }
    if (PyDict_CheckExact(fields)) {
        v = PyDict_GetItemWithError(fields, s_is_system);     /* borrowed; str keys run no code */
        r = v == Py_True ? 1 : v == Py_False ? 0 : (v == NULL && PyErr_Occurred()) ? -1 : -2;
    }
    Py_DECREF(fields);
    return r;
}

/* Append start..stop-1 to `out`: 0, or -1 on error. */
static int
append_run(PyObject *out, Py_ssize_t start, Py_ssize_t stop)
{
    PyObject *index;
    int bad;

    for (; start < stop; start++) {
        index = PyLong_FromSsize_t(start);
        if (index == NULL)
            return -1;
        bad = PyList_Append(out, index);
        Py_DECREF(index);
        if (bad < 0)
            return -1;
    }
    return 0;
}

/* kept_indexes(chat, start, stop, message_type, only_messages=False) -> Sequence[int] | None
 *
 * lorescan/_scan.py kept_indexes for a list: the indexes i in start..stop-1 of the messages that are
 * not system messages (`is_system` false), as range(start, stop) when none is one (the common case:
 * no int is made), else as a list. A message of exactly `message_type` whose `is_system` is a bool
 * is read from its instance dict, which runs no Python code, so the list cannot change meanwhile;
 * from the first other object on, the rest of the slice is read from a copy through getattr, as
 * the Python code reads it. With `only_messages`, None when an object is not exactly of
 * `message_type` (the caller validates the chat then). */
PyObject *
ls_kept_indexes(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *chat, *cls, *out = NULL, *part = NULL, *msg;
    Py_ssize_t start, stop, i, n, base;
    int system, only, odd;

    (void)self;
    if ((nargs != 4 && nargs != 5) || !PyList_Check(args[0]) || !PyLong_Check(args[1]) || !PyLong_Check(args[2])
        || !PyType_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "kept_indexes(chat: list, start: int, stop: int, message_type: type, "
                                         "only_messages: bool = False)");
        return NULL;
    }
    chat = args[0];
    cls = args[3];
    only = nargs == 5 ? PyObject_IsTrue(args[4]) : 0;
    start = PyLong_AsSsize_t(args[1]);
    stop = PyLong_AsSsize_t(args[2]);
    if (only < 0 || PyErr_Occurred())
        return NULL;
    if (start < 0) {
        PyErr_SetString(PyExc_ValueError, "kept_indexes: a negative start");
        return NULL;
    }
    n = PyList_GET_SIZE(chat);
    if (stop > n)
        stop = n;
    if (stop < start)
        stop = start;
    /* the list itself, while reading it runs no code of the messages (an allocation may still run
     * the collector, whose finalizers could change the list: the message is held, the size read) */
    for (i = start; i < stop && i < PyList_GET_SIZE(chat); i++) {
        msg = PyList_GET_ITEM(chat, i);
        Py_INCREF(msg);
        system = plain_is_system(msg, cls);
        odd = (PyObject *)Py_TYPE(msg) != cls;
        Py_DECREF(msg);
        if (system == -1)
            goto fail;
        if (system == -2) {
            if (only && odd) {
                Py_XDECREF(out);
                Py_RETURN_NONE;
            }
            break;
        }
        if (system) {       /* the first system message: the indexes before it, listed */
            if (out == NULL && ((out = PyList_New(0)) == NULL || append_run(out, start, i) < 0))
                goto fail;
        }
        else if (out != NULL && append_run(out, i, i + 1) < 0)
            goto fail;
    }
    if (i < stop) {     /* from message i on, a copy of the rest, read through getattr where need be */
        if (out == NULL && ((out = PyList_New(0)) == NULL || append_run(out, start, i) < 0))
            goto fail;
        part = PyList_GetSlice(chat, i, stop);
        if (part == NULL)
            goto fail;
        base = i;
        n = PyList_GET_SIZE(part);
        for (i = 0; i < n; i++) {
            msg = PyList_GET_ITEM(part, i);
            if (only && (PyObject *)Py_TYPE(msg) != cls) {
                Py_DECREF(part);
                Py_DECREF(out);
                Py_RETURN_NONE;
            }
            system = plain_is_system(msg, cls);
            if (system == -2)
                system = ls_attr_true(msg, s_is_system);     /* Python's truth of the attribute */
            if (system < 0 || (!system && append_run(out, base + i, base + i + 1) < 0))
                goto fail;
        }
        Py_DECREF(part);
    }
    if (out != NULL)
        return out;
    return PyObject_CallFunction((PyObject *)&PyRange_Type, "nn", start, stop);
fail:
    Py_XDECREF(part);
    Py_XDECREF(out);
    return NULL;
}
