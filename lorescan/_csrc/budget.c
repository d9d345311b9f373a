/* The budget step of a pass for its common entries (spend_lines); lorescan/_engine.py
 * (_Evaluation._spend) and lorescan/_budget.py (_LinesPass.add) are the reference. */
#include "native.h"

/* -- the budget of a pass ------------------------------------------------------------------ */

/* An int attribute or item as a long long; 0 and an exception if it is not an int that fits. */
int
ls_as_ll(PyObject *v, long long *out)
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


/* Whether attribute `name` of `ce` is true: 1, 0, or -1 on error. */
int
ls_attr_true(PyObject *ce, PyObject *name)
{
    PyObject *v = ls_getattr(ce, name);
    int r;
    if (v == NULL)
        return -1;
    r = PyObject_IsTrue(v);
    Py_DECREF(v);
    return r;
}

/* Record one activation: activated[key or g], done, contents[g] (only when `macros` substituted the
 * content, or g has a content already: readers take the entry's own content otherwise), pass_of[g]
 * (only past the first pass, `first` false: readers take 1 otherwise), and the group names and
 * group field the later groups check; 0, or -1 on error. */
static int
record_activation(PyObject *ce, PyObject *content, int macros, int first, PyObject *const *args)
{
    PyObject *contents = args[9], *activated = args[10], *done = args[11], *pass_of = args[12];
    PyObject *names = args[13], *fields = args[14], *g, *k, *v;
    int by_key, known, ok = -1;

    by_key = PyObject_IsTrue(args[7]);
    g = ls_getattr(ce, s_gid);
    if (g == NULL || by_key < 0)
        goto out_g;
    known = macros ? 1 : PyDict_Contains(contents, g);
    if (known < 0 || (known && PyDict_SetItem(contents, g, content) < 0))
        goto out_g;
    k = by_key ? ls_getattr(ce, s_key) : (Py_INCREF(g), g);
    if (k == NULL)
        goto out_g;
    if (PyDict_SetItem(activated, k, ce) < 0 || PySet_Add(done, g) < 0
        || (!first && PyDict_SetItem(pass_of, g, args[8]) < 0)) {
        Py_DECREF(k);
        goto out_g;
    }
    Py_DECREF(k);
    v = ls_getattr(ce, s_group_names);
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
    v = ls_getattr(ce, s_group);
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

/* Add the entry's key to the set `cut` (a tally's budget set); 0, or -1 on error. */
static int
add_key(PyObject *cut, PyObject *ce)
{
    PyObject *k = ls_getattr(ce, s_key);
    int r;

    if (k == NULL)
        return -1;
    r = PySet_Add(cut, k);
    Py_DECREF(k);
    return r;
}

/* The probability roll of an entry that rolls, made here (lorescan/_engine.py, _Evaluation._roll, is
 * the reference) from `how` = (roll, sticky, random, draws): a sticky entry passes without a draw;
 * else roll = float(random()) * 100 passes when roll <= its probability (None: 0; an int too large
 * for a double: an infinity), and draws[0] counts the draw. 1 passed, 0 failed, -1 error, -2 for a
 * probability of another type (roll(entry) decides then). */
static int
roll_here(PyObject *ce, PyObject *how)
{
    PyObject *g, *p, *v, *f, *draws = PyTuple_GET_ITEM(how, 3), *n;
    double chance, drawn;
    Py_ssize_t count;
    int r, overflow;

    g = ls_getattr(ce, s_gid);
    if (g == NULL)
        return -1;
    r = PySet_Contains(PyTuple_GET_ITEM(how, 1), g);
    Py_DECREF(g);
    if (r != 0)
        return r;       /* sticky: 1; or -1 */
    p = ls_getattr(ce, s_probability);
    if (p == NULL)
        return -1;
    if (p == Py_None)
        chance = 0.0;
    else if (PyFloat_CheckExact(p))
        chance = PyFloat_AS_DOUBLE(p);
    else if (PyLong_CheckExact(p)) {
        chance = PyLong_AsDouble(p);
        if (chance == -1.0 && PyErr_Occurred()) {
            if (!PyErr_ExceptionMatches(PyExc_OverflowError)) {
                Py_DECREF(p);
                return -1;
            }
            PyErr_Clear();
            (void)PyLong_AsLongLongAndOverflow(p, &overflow);      /* the sign: 1 or -1 here */
            chance = overflow > 0 ? Py_HUGE_VAL : -Py_HUGE_VAL;
        }
    }
    else {
        Py_DECREF(p);
        return -2;
    }
    Py_DECREF(p);
    v = PyObject_CallNoArgs(PyTuple_GET_ITEM(how, 2));
    f = v == NULL ? NULL : PyNumber_Float(v);
    Py_XDECREF(v);
    if (f == NULL)
        return -1;
    drawn = PyFloat_AS_DOUBLE(f) * 100;
    Py_DECREF(f);
    count = PyLong_AsSsize_t(PyList_GET_ITEM(draws, 0));
    n = count == -1 && PyErr_Occurred() ? NULL : PyLong_FromSsize_t(count + 1);
    if (n == NULL)
        return -1;
    PyList_SetItem(draws, 0, n);       /* steals */
    return drawn <= chance;
}

/* roll(entry) for an entry that rolls: 1 passed; 0 failed (its gid added to `failed`); -1 error.
 * `roll_fn` is the roll (a callable), or (roll, sticky, random, draws) for roll_here to make it. */
static int
roll(PyObject *ce, PyObject *roll_fn, PyObject *failed)
{
    PyObject *ok, *g;
    int r = -2;

    if (PyTuple_CheckExact(roll_fn) && PyTuple_GET_SIZE(roll_fn) == 4 && PyList_CheckExact(PyTuple_GET_ITEM(roll_fn, 3))
        && PyList_GET_SIZE(PyTuple_GET_ITEM(roll_fn, 3)) == 1) {
        r = roll_here(ce, roll_fn);
        roll_fn = PyTuple_GET_ITEM(roll_fn, 0);
    }
    if (r == -2) {
        ok = PyObject_CallOneArg(roll_fn, ce);
        r = ok == NULL ? -1 : PyObject_IsTrue(ok);
        Py_XDECREF(ok);
    }
    if (r != 0)
        return r;
    g = ls_getattr(ce, s_gid);
    if (g == NULL || PySet_Add(failed, g) < 0) {
        Py_XDECREF(g);
        return -1;
    }
    Py_DECREF(g);
    return 0;
}

/* Write the running state back into `state` ([overflowed, safe, tail_tokens, used, last, tokens]);
 * takes over the reference to `last` (NULL: none added). 0, or -1 on error. */
static int
write_back(PyObject *state, long long safe, long long tail, long long used, long long tokens, PyObject *last)
{
    PyObject *vals[4];
    int k;

    vals[0] = PyLong_FromLongLong(safe);
    vals[1] = PyLong_FromLongLong(tail);
    vals[2] = PyLong_FromLongLong(used);
    vals[3] = PyLong_FromLongLong(tokens);
    if (!vals[0] || !vals[1] || !vals[2] || !vals[3]) {
        for (k = 0; k < 4; k++)
            Py_XDECREF(vals[k]);
        Py_XDECREF(last);
        return -1;
    }
    PyList_SetItem(state, 1, vals[0]);      /* each steals its value */
    PyList_SetItem(state, 2, vals[1]);
    PyList_SetItem(state, 3, vals[2]);
    PyList_SetItem(state, 5, vals[3]);
    if (last != NULL)
        PyList_SetItem(state, 4, last);
    return 0;
}

/* The running numbers from `state` and the budget and base: 1, or 0 for numbers this does not
 * handle (not ints, or too large for sums in a long long). */
static int
read_numbers(PyObject *state, PyObject *budget_obj, PyObject *base_obj, long long *safe, long long *tail,
             long long *used, long long *tokens, long long *budget, long long *base)
{
    return ls_as_ll(PyList_GET_ITEM(state, 1), safe) && ls_as_ll(PyList_GET_ITEM(state, 2), tail)
        && ls_as_ll(PyList_GET_ITEM(state, 3), used) && ls_as_ll(budget_obj, budget) && ls_as_ll(base_obj, base)
        && ls_as_ll(PyList_GET_ITEM(state, 5), tokens) && *safe >= 0 && *tail >= 0 && *base >= 0
        && *safe <= LLONG_MAX / 4 && *tail <= LLONG_MAX / 4 && *base <= LLONG_MAX / 4;
}

/* An entry's content (substitute(entry) for one with macros) and, in `cnt`, the count `memo` keeps
 * for it as a line: a new reference; NULL without an error when it does not start a new line piece
 * or its count is not remembered (the caller's), NULL with one on error. */
static PyObject *
counted_content(PyObject *ce, int macros, PyObject *substitute, PyObject *memo, long long *cnt)
{
    PyObject *content = macros ? PyObject_CallOneArg(substitute, ce) : ls_getattr(ce, s_content), *count;

    if (content == NULL)
        return NULL;
    if (!PyUnicode_CheckExact(content) || PyUnicode_GET_LENGTH(content) == 0
        || Py_UNICODE_ISSPACE(PyUnicode_READ_CHAR(content, 0))) {
        Py_DECREF(content);
        return NULL;
    }
    count = PyDict_GetItemWithError(memo, content);     /* borrowed */
    if (count == NULL || !ls_as_ll(count, cnt) || *cnt < 0 || *cnt > LLONG_MAX / 4) {
        Py_DECREF(content);
        return NULL;
    }
    return content;
}

/* spend_lines(now, j, memo, state, budget, base, skip, by_key, count, contents, activated, done,
 *             pass_of, group_names, group_fields, roll, substitute, failed, cut) -> int
 *
 * The budget step of a pass (lorescan/_engine.py, _Evaluation._spend, is the reference) for a
 * token counter whose counts add up at line starts, from now[j] on, while each entry's content
 * (substitute(entry) for one with macros) starts a new line piece whose count `memo` remembers,
 * and fits. It records each such activation (after roll(entry), for one that rolls, or the roll made
 * here when `roll` is (roll, sticky, random, draws): see roll_here; a failed roll goes into
 * `failed`), skips (after an overflow, with `skip`) entries that do not ignore the
 * budget (their keys go into the set `cut`, a tally's, unless it is None), and returns the index of
 * the first entry left to the caller, before any roll of it.
 * `state` is a list [overflowed, safe, tail_tokens, used, last, tokens]: the meter's and the line
 * tally's state, read and written back here (`last`: the content that is now the tally's one-line
 * tail, or None if none was added). */
PyObject *
ls_spend_lines(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *now, *memo, *state, *cut, *ce, *content, *last = NULL;
    Py_ssize_t j, n;
    long long safe, tail, used, budget, base, cnt, total, tokens = 0;
    int overflowed, skip, ignore, rolls, macros, first, past, r;

    (void)self;
    if (nargs != 19 || !PyList_Check(args[0]) || !PyDict_Check(args[2]) || !PyList_Check(args[3])
        || PyList_GET_SIZE(args[3]) != 6 || !PyDict_Check(args[9]) || !PyDict_Check(args[10])
        || !PySet_Check(args[11]) || !PyDict_Check(args[12]) || !PySet_Check(args[14]) || !PySet_Check(args[17])
        || (args[18] != Py_None && !PySet_Check(args[18]))) {
        PyErr_SetString(PyExc_TypeError, "spend_lines(now: list, j: int, memo: dict, state: list (6), budget, base, "
                                         "skip, by_key, count, contents: dict, activated: dict, done: set, "
                                         "pass_of: dict, group_names, group_fields: set, roll, substitute, "
                                         "failed: set, cut: set | None)");
        return NULL;
    }
    now = args[0];
    cut = args[18] == Py_None ? NULL : args[18];
    memo = args[2];
    state = args[3];
    j = PyLong_AsSsize_t(args[1]);
    if (j == -1 && PyErr_Occurred())
        return NULL;
    n = PyList_GET_SIZE(now);
    overflowed = PyObject_IsTrue(PyList_GET_ITEM(state, 0));
    skip = PyObject_IsTrue(args[6]);
    first = PyLong_CheckExact(args[8]) && PyLong_AsLongAndOverflow(args[8], &past) == 1 && !past;  /* pass 1 */
    if (overflowed < 0 || skip < 0)
        return NULL;
    if (!read_numbers(state, args[4], args[5], &safe, &tail, &used, &tokens, &budget, &base))
        return PyLong_FromSsize_t(j);     /* numbers this does not handle: all to the caller */
    for (; j < n; j++) {
        ce = PyList_GET_ITEM(now, j);
        ignore = ls_attr_true(ce, s_ignore_budget);
        if (ignore < 0)
            goto error;
        if (overflowed && skip && !ignore) {
            if (cut != NULL && add_key(cut, ce) < 0)
                goto error;
            continue;
        }
        rolls = ls_attr_true(ce, s_rolls);
        macros = ls_attr_true(ce, s_macros);
        if (rolls < 0 || macros < 0)
            goto error;
        content = counted_content(ce, macros, args[16], memo, &cnt);
        if (content == NULL) {
            if (PyErr_Occurred())
                goto error;
            break;      /* not a line piece whose count is remembered: the caller's */
        }
        total = safe + tail + cnt + base;
        if (!(skip && ignore) && total >= budget) {
            Py_DECREF(content);
            break;      /* an overflow: the caller's */
        }
        if (rolls) {    /* the roll, as the caller would make it before the budget (which draws nothing) */
            r = roll(ce, args[15], args[17]);
            if (r <= 0) {
                Py_DECREF(content);
                if (r < 0)
                    goto error;
                continue;
            }
        }
        if (record_activation(ce, content, macros, first, args) < 0) {
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
    if (write_back(state, safe, tail, used, tokens, last) < 0)
        return NULL;    /* `last` is released there */
    return PyLong_FromSsize_t(j);
error:
    Py_XDECREF(last);
    return NULL;
}

/* sum_line_counts(lines, memo) -> int | None
 *
 * count_lines' sum (lorescan/_budget.py is the reference): the sum of memo[line] over `lines` when
 * every line's count is remembered (an int) and each line after the first starts with a character
 * that is not whitespace; None otherwise (the caller counts the text then). */
PyObject *
ls_sum_line_counts(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *lines, *memo, *line, *count;
    Py_ssize_t i;
    long long total = 0, cnt;

    (void)self;
    if (nargs != 2 || !PyList_Check(args[0]) || !PyDict_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "sum_line_counts(lines: list, memo: dict)");
        return NULL;
    }
    lines = args[0];
    memo = args[1];
    for (i = 0; i < PyList_GET_SIZE(lines); i++) {
        line = PyList_GET_ITEM(lines, i);
        if (!PyUnicode_CheckExact(line))
            Py_RETURN_NONE;
        if (i > 0 && (PyUnicode_GET_LENGTH(line) == 0 || Py_UNICODE_ISSPACE(PyUnicode_READ_CHAR(line, 0))))
            Py_RETURN_NONE;
        count = PyDict_GetItemWithError(memo, line);     /* borrowed; a str key runs no code */
        if (count == NULL) {
            if (PyErr_Occurred())
                return NULL;
            Py_RETURN_NONE;
        }
        if (!ls_as_ll(count, &cnt) || cnt < 0 || cnt > LLONG_MAX / 4 || total > LLONG_MAX / 4)
            Py_RETURN_NONE;
        total += cnt;
    }
    return PyLong_FromLongLong(total);
}
