/* Compiling a book's entries (compiled_entries): lorescan/_compile.py (CompiledEntry.__init__) is the
 * reference. */
#include "native.h"

/* the fields CompiledEntry.__init__ reads, by JSON name (_compile._COMPILE_FIELDS) */
enum { F_CONTENT, F_ORDER, F_CONSTANT, F_KEY, F_KEYSECONDARY, F_CASE, F_WORDS, F_SCAN_DEPTH, F_DELAY, F_DUR, N_FIELDS };
static const char *const field_names[N_FIELDS] = {
    "content", "order", "constant", "key", "keysecondary", "caseSensitive", "matchWholeWords", "scanDepth", "delay",
    "delayUntilRecursion",
};

/* the slots __init__ sets */
enum {
    S_GID, S_BOOK, S_ENTRY, S_RAW, S_CONTENT, S_DECORATORS, S_ORDER, S_ORDER_NUM, S_CONSTANT, S_KEYS, S_KEYS_SECONDARY,
    S_CASE, S_WORDS, S_SCAN_DEPTH, S_DELAY, S_DUR, S_DUR_LEVEL, N_SLOTS
};
static const char *const slot_names[N_SLOTS] = {
    "gid", "book", "entry", "raw_content", "content", "decorators", "order", "order_num", "constant", "keys",
    "keys_secondary", "case_sensitive", "match_whole_words", "scan_depth", "delay", "delay_until_recursion",
    "dur_level",
};

static PyObject *field_keys[N_FIELDS], *slot_keys[N_SLOTS], *zero_level;

/* the plan's per-entry facts (Plan.__init__'s loop in lorescan/_plan.py) */
enum { P_GID, P_CONSTANT, P_DECORATORS, P_DUR, P_DUR_LEVEL, P_DELAY, P_SCAN_DEPTH, P_ORDER_NUM, N_FACTS };
static const char *const fact_names[N_FACTS] = {
    "gid", "constant", "decorators", "delay_until_recursion", "dur_level", "delay", "scan_depth", "order_num",
};
static PyObject *fact_keys[N_FACTS], *activate_text;

/* The names and constants above, made once (module.c's init): 0, or -1. */
int
ls_compile_init(void)
{
    if (ls_intern_all(field_names, N_FIELDS, field_keys) < 0 || ls_intern_all(slot_names, N_SLOTS, slot_keys) < 0
        || ls_intern_all(fact_names, N_FACTS, fact_keys) < 0
        || (activate_text = PyUnicode_InternFromString("@@activate")) == NULL)
        return -1;
    zero_level = PyFloat_FromDouble(0.0);
    return zero_level == NULL ? -1 : 0;
}

/* Whether an exact int lies within +-2**53 (a number JavaScript holds exactly). */
static int
exact_int(PyObject *v)
{
    long long x;

    return PyLong_CheckExact(v) && ls_as_ll(v, &x) && x >= -(1LL << 53) && x <= (1LL << 53);
}

/* Whether `v` is the int 0 (not False). */
static int
int_zero(PyObject *v)
{
    long long x;

    return PyLong_CheckExact(v) && ls_as_ll(v, &x) && x == 0;
}

/* One entry made as __init__ makes it, when its values are the usual kinds: a new reference;
 * Py_None (borrowed, not to be released) when they are not, for the caller's `make`; NULL on error. */
static PyObject *
usual_entry(PyTypeObject *cls, const Py_ssize_t *offsets, Py_ssize_t gid, PyObject *book, PyObject *entry,
            PyObject *no_decorators)
{
    PyObject *d, *v[N_FIELDS], *set[N_SLOTS], *ce, *raw, *dur;
    int k;

    d = PyObject_GetAttr(entry, s_dict);
    if (d == NULL)
        return NULL;
    if (!PyDict_CheckExact(d)) {
        Py_DECREF(d);
        return Py_None;
    }
    for (k = 0; k < N_FIELDS; k++) {
        v[k] = PyDict_GetItemWithError(d, field_keys[k]);
        if (v[k] == NULL) {
            while (--k >= 0)
                Py_DECREF(v[k]);
            Py_DECREF(d);
            return PyErr_Occurred() ? NULL : Py_None;
        }
        Py_INCREF(v[k]);    /* held: allocating the object may run a collection, and finalizers */
    }
    Py_DECREF(d);
    raw = PyUnicode_CheckExact(v[F_CONTENT]) ? v[F_CONTENT] : NULL;
    dur = v[F_DUR];
    if ((raw != NULL && PyUnicode_GET_LENGTH(raw) >= 2 && PyUnicode_READ_CHAR(raw, 0) == '@'
         && PyUnicode_READ_CHAR(raw, 1) == '@')                                  /* decorators: parsed in Python */
        || !exact_int(v[F_ORDER])
        || (v[F_CONSTANT] != Py_True && v[F_CONSTANT] != Py_False && v[F_CONSTANT] != Py_None)
        || !(dur == Py_False || dur == Py_None || int_zero(dur))) {
        ce = Py_None;
        goto done;
    }
    raw = raw != NULL ? Py_NewRef(raw) : PyUnicode_New(0, 0);
    ce = raw == NULL ? NULL : cls->tp_alloc(cls, 0);
    set[S_GID] = ce == NULL ? NULL : PyLong_FromSsize_t(gid);
    if (set[S_GID] == NULL) {
        Py_XDECREF(ce);
        Py_XDECREF(raw);
        ce = NULL;
        goto done;
    }
    set[S_BOOK] = book;
    set[S_ENTRY] = entry;
    set[S_RAW] = raw;
    set[S_CONTENT] = raw;
    set[S_DECORATORS] = no_decorators;
    set[S_ORDER] = v[F_ORDER];
    set[S_ORDER_NUM] = v[F_ORDER];
    set[S_CONSTANT] = v[F_CONSTANT] == Py_True ? Py_True : Py_False;
    set[S_KEYS] = v[F_KEY];
    set[S_KEYS_SECONDARY] = v[F_KEYSECONDARY];
    set[S_CASE] = v[F_CASE];
    set[S_WORDS] = v[F_WORDS];
    set[S_SCAN_DEPTH] = v[F_SCAN_DEPTH];
    set[S_DELAY] = v[F_DELAY];
    set[S_DUR] = Py_False;
    set[S_DUR_LEVEL] = zero_level;
    for (k = 0; k < N_SLOTS; k++) {
        if (k != S_GID)
            Py_INCREF(set[k]);
        *(PyObject **)((char *)ce + offsets[k]) = set[k];
    }
    Py_DECREF(raw);
done:
    for (k = 0; k < N_FIELDS; k++)
        Py_DECREF(v[k]);
    return ce;
}

/* compiled_entries(cls, start, book, entries, no_decorators, make) -> list
 *
 * Each entry (a model whose __dict__ holds its fields) as `cls` instance numbered start, start + 1,
 * ...: the slots CompiledEntry.__init__ sets, set as it sets them, for an entry whose content holds
 * no decorator, whose order is an int JavaScript holds exactly, whose constant is a bool or None and
 * whose delayUntilRecursion is false, None or 0; any other entry is make(gid, book, entry). */
PyObject *
ls_compiled_entries(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyTypeObject *cls;
    PyObject *entries, *out, *ce;
    Py_ssize_t offsets[N_SLOTS], start, i, n;

    (void)self;
    if (nargs != 6 || !PyType_Check(args[0]) || !PyLong_CheckExact(args[1]) || !PyUnicode_Check(args[2])
        || !PyList_Check(args[3]) || !PyList_CheckExact(args[4])) {
        PyErr_SetString(PyExc_TypeError, "compiled_entries(cls: type, start: int, book: str, entries: list, "
                                         "no_decorators: list, make)");
        return NULL;
    }
    cls = (PyTypeObject *)args[0];
    entries = args[3];
    start = PyLong_AsSsize_t(args[1]);
    if ((start == -1 && PyErr_Occurred())
        || ls_slot_offsets(cls, slot_keys, N_SLOTS, offsets, "compiled_entries") < 0)
        return NULL;
    n = PyList_GET_SIZE(entries);
    out = PyList_New(n);
    if (out == NULL)
        return NULL;
    for (i = 0; i < n; i++) {
        PyObject *entry;
        if (i >= PyList_GET_SIZE(entries)) {    /* `make` shortened the list */
            PyErr_SetString(PyExc_RuntimeError, "compiled_entries: the entries changed while they were compiled");
            Py_DECREF(out);
            return NULL;
        }
        entry = PyList_GET_ITEM(entries, i);
        Py_INCREF(entry);
        ce = usual_entry(cls, offsets, start + i, args[2], entry, args[4]);
        if (ce == Py_None)
            ce = PyObject_CallFunction(args[5], "nOO", start + i, args[2], entry);
        Py_DECREF(entry);
        if (ce == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, ce);
    }
    return out;
}

/* An entry's fact k (see ls_slot_or_attr). */
#define fact(ce, cls, offsets, k) ls_slot_or_attr((ce), (cls), (offsets)[k], fact_keys[k])

/* JavaScript truthiness (_js.truthy): -1 on error. */
static int
js_truthy(PyObject *v, PyObject *truthy)
{
    PyObject *r;
    int b;

    if (v == Py_None || v == Py_False)
        return 0;
    if (v == Py_True)
        return 1;
    if (PyLong_CheckExact(v))
        return int_zero(v) ? 0 : 1;
    r = PyObject_CallOneArg(truthy, v);
    if (r == NULL)
        return -1;
    b = PyObject_IsTrue(r);
    Py_DECREF(r);
    return b;
}

/* Number(value) (_js.to_number): 0 with *out set, -1 on error. */
static int
js_number(PyObject *v, PyObject *to_number, double *out)
{
    PyObject *r;

    if (PyFloat_CheckExact(v)) {
        *out = PyFloat_AS_DOUBLE(v);
        return 0;
    }
    if (exact_int(v)) {
        *out = (double)PyLong_AsLongLong(v);
        return 0;
    }
    r = PyObject_CallOneArg(to_number, v);
    if (r == NULL)
        return -1;
    *out = PyFloat_AsDouble(r);
    Py_DECREF(r);
    return *out == -1.0 && PyErr_Occurred() ? -1 : 0;
}

/* One entry's facts at place i; 0, or -1 on error. */
static int
plan_entry(PyObject *ce, PyTypeObject *cls, const Py_ssize_t *offsets, Py_ssize_t i, PyObject *const *args, double *depth,
           int *nan)
{
    PyObject *pos = args[2], *gid, *v, *place;
    Py_ssize_t g;
    int b;

    if ((gid = fact(ce, cls, offsets, P_GID)) == NULL)
        return -1;
    g = PyLong_AsSsize_t(gid);
    if (g < 0 || g >= PyList_GET_SIZE(pos)) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_IndexError, "plan_facts: a gid outside the positions");
        Py_DECREF(gid);
        return -1;
    }
    if ((place = PyLong_FromSsize_t(i)) == NULL) {
        Py_DECREF(gid);
        return -1;
    }
    Py_SETREF(PyList_GET_ITEM(pos, g), place);    /* pos[gid] = i */
    b = 0;
    if ((v = fact(ce, cls, offsets, P_CONSTANT)) != NULL) {
        b = PyObject_IsTrue(v);
        Py_DECREF(v);
    }
    if (v != NULL && b == 0 && (v = fact(ce, cls, offsets, P_DECORATORS)) != NULL) {  /* or "@@activate" in them */
        b = PyObject_IsTrue(v);
        if (b > 0)
            b = PySequence_Contains(v, activate_text);
        Py_DECREF(v);
    }
    if (v == NULL || b < 0 || (b > 0 && PyList_Append(args[3], gid) < 0)) {
        Py_DECREF(gid);
        return -1;
    }
    Py_DECREF(gid);
    if ((v = fact(ce, cls, offsets, P_DUR)) == NULL)
        return -1;
    b = PyObject_IsTrue(v);
    Py_DECREF(v);
    if (b > 0) {
        if ((v = fact(ce, cls, offsets, P_DUR_LEVEL)) == NULL)
            return -1;
        b = PyDict_SetItem(args[4], v, Py_None);
        Py_DECREF(v);
    }
    if (b < 0 || (v = fact(ce, cls, offsets, P_DELAY)) == NULL)
        return -1;
    b = v == Py_None ? 0 : js_truthy(v, args[6]);
    Py_DECREF(v);
    if (b < 0 || (b > 0 && PyList_Append(args[5], ce) < 0))
        return -1;
    if ((v = fact(ce, cls, offsets, P_SCAN_DEPTH)) == NULL)
        return -1;
    if (v != Py_None) {
        double d;
        b = js_number(v, args[7], &d);
        if (b == 0 && d == d && d > *depth)
            *depth = d;
    }
    Py_DECREF(v);
    if (b < 0 || (v = fact(ce, cls, offsets, P_ORDER_NUM)) == NULL)
        return -1;
    if (!PyLong_CheckExact(v)) {        /* a float (an int is never NaN) */
        double d = PyFloat_AsDouble(v);
        b = d == -1.0 && PyErr_Occurred() ? -1 : 0;
        if (d != d)
            *nan = 1;
    }
    Py_DECREF(v);
    return b < 0 ? -1 : 0;
}

/* plan_facts(cls, entries, pos, constants, levels, delayed, truthy, to_number) -> (float, bool)
 *
 * Plan.__init__'s loop over `entries` (compiled entries in scan order; `cls` the class whose slots
 * hold their facts): pos[gid] = place; the gids of constant entries and of those with an
 * "@@activate" decorator appended to `constants`; each delay-until-recursion level set in `levels`
 * (a dict, first-seen order); entries with a truthy delay appended to `delayed`. Returns the
 * greatest scan depth (0.0 for none), and whether an entry's order_num is NaN. */
PyObject *
ls_plan_facts(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyTypeObject *cls;
    Py_ssize_t offsets[N_FACTS], i;
    double depth = 0.0;
    int nan = 0;

    (void)self;
    if (nargs != 8 || !PyType_Check(args[0]) || !PyList_Check(args[1]) || !PyList_Check(args[2])
        || !PyList_Check(args[3]) || !PyDict_Check(args[4]) || !PyList_Check(args[5])) {
        PyErr_SetString(PyExc_TypeError, "plan_facts(cls: type, entries: list, pos: list, constants: list, "
                                         "levels: dict, delayed: list, truthy, to_number)");
        return NULL;
    }
    cls = (PyTypeObject *)args[0];
    if (ls_slot_offsets(cls, fact_keys, N_FACTS, offsets, "plan_facts") < 0)
        return NULL;
    for (i = 0; i < PyList_GET_SIZE(args[1]); i++) {
        PyObject *ce = PyList_GET_ITEM(args[1], i);
        int r;
        Py_INCREF(ce);
        r = plan_entry(ce, cls, offsets, i, args, &depth, &nan);
        Py_DECREF(ce);
        if (r < 0)
            return NULL;
    }
    return Py_BuildValue("(dO)", depth, nan ? Py_True : Py_False);
}
