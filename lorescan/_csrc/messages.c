/* Models made from plain dicts (plain_models): pydantic's validation of the class is the reference
 * (lorescan/_construct.py, plain_models, and tests/test_native.py compare the two).
 *
 * A frontend passes its chat as dicts, and each evaluation validated every message again: for a
 * small book that was a third of the evaluation. A message is a model of a few str and bool fields
 * that keeps extra values; when every value already has its field's exact type, validation returns
 * the values as they are, so this makes the instance directly. Anything else goes to the caller's
 * validator, which gives pydantic's result or error. */
#include "native.h"

#include <math.h>

/* 1 when the exact str `s` holds no lone surrogate (pydantic refuses such a dict key) */
static int
no_surrogate(PyObject *s)
{
    Py_ssize_t i, n = PyUnicode_GET_LENGTH(s);
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    Py_UCS4 c;

    if (kind == PyUnicode_1BYTE_KIND)
        return 1;
    for (i = 0; i < n; i++) {
        c = PyUnicode_READ(kind, data, i);
        if (c >= 0xD800 && c <= 0xDFFF)
            return 0;
    }
    return 1;
}

/* the index of field `key` in `names`, or -1 */
static Py_ssize_t
field_index(PyObject *names, PyObject *key)
{
    Py_ssize_t k, n = PyTuple_GET_SIZE(names);
    PyObject *name;

    for (k = 0; k < n; k++) {
        name = PyTuple_GET_ITEM(names, k);
        if (name == key || (PyUnicode_GET_LENGTH(name) == PyUnicode_GET_LENGTH(key)
                            && PyUnicode_Compare(name, key) == 0))
            return k;
    }
    return -1;
}

/* whether `value` has exactly the type of field kind `kind` ('s': str, 'b': bool) */
static int
exact(char kind, PyObject *value)
{
    if (kind == 's')
        return PyUnicode_CheckExact(value);
    return value == Py_True || value == Py_False;
}

/* Set the instance's attribute as object.__setattr__ does (the class's own __setattr__ is not run);
 * 0, or -1 on error. Steals the reference to `value`. */
static int
set_raw(PyObject *obj, PyObject *name, PyObject *value)
{
    int r;
    if (value == NULL)
        return -1;
    r = PyObject_GenericSetAttr(obj, name, value);
    Py_DECREF(value);
    return r;
}

/* An instance of `type` (type.__new__(type)) with its __dict__, fields set, extra and private
 * values set as object.__setattr__ sets them (each value borrowed); a new reference, or NULL on
 * error. */
static PyObject *
new_model(PyTypeObject *type, PyObject *fields, PyObject *fields_set, PyObject *extra, PyObject *private)
{
    PyObject *args = PyTuple_New(0), *obj;

    obj = args == NULL ? NULL : type->tp_new(type, args, NULL);
    Py_XDECREF(args);
    if (obj == NULL)
        return NULL;
    if (PyObject_GenericSetAttr(obj, s_dict, fields) < 0
        || PyObject_GenericSetAttr(obj, s_pydantic_fields_set, fields_set) < 0
        || PyObject_GenericSetAttr(obj, s_pydantic_extra, extra) < 0
        || PyObject_GenericSetAttr(obj, s_pydantic_private, private) < 0) {
        Py_DECREF(obj);
        return NULL;
    }
    return obj;
}

/* An instance of `type` holding `fields` as its __dict__ (the dict itself), `fields_set` as its
 * fields set, and no extra or private values: what lorescan/_model.py's `construct` makes. Steals
 * the references to `fields` and `fields_set` (either NULL: an error already set); a new
 * reference, or NULL on error. */
PyObject *
ls_bare_model(PyTypeObject *type, PyObject *fields, PyObject *fields_set)
{
    PyObject *obj = fields == NULL || fields_set == NULL ? NULL
                    : new_model(type, fields, fields_set, Py_None, Py_None);

    Py_XDECREF(fields);
    Py_XDECREF(fields_set);
    return obj;
}

/* bare_models(cls, dicts) -> list
 *
 * construct(cls, d) (lorescan/_model.py) for each dict: an instance whose __dict__ is the dict
 * itself and whose fields set is its keys; for trusted dicts holding every field of `cls` in
 * order, on a model with no extra fields or private attributes. */
PyObject *
ls_bare_models(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *dicts, *out, *d, *m;
    Py_ssize_t i, n;

    (void)self;
    if (nargs != 2 || !PyType_Check(args[0]) || !PyList_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "bare_models(cls: type, dicts: list)");
        return NULL;
    }
    dicts = args[1];
    n = PyList_GET_SIZE(dicts);
    out = PyList_New(n);
    if (out == NULL)
        return NULL;
    for (i = 0; i < n; i++) {
        d = PyList_GET_ITEM(dicts, i);
        if (!PyDict_CheckExact(d)) {
            Py_DECREF(out);
            PyErr_SetString(PyExc_TypeError, "bare_models: each item must be a dict");
            return NULL;
        }
        Py_INCREF(d);
        m = ls_bare_model((PyTypeObject *)args[0], d, PySet_New(d));
        if (m == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, m);
    }
    return out;
}

/* model_dicts(models) -> list
 *
 * _dumped (lorescan/_results.py) for each model of a result's example or at-depth entries: a new
 * dict of its __dict__'s items in order, an exact list copied, an exact float that is not finite
 * (JSON.stringify's null) as None, any other value as it is. */
PyObject *
ls_model_dicts(PyObject *self, PyObject *models)
{
    PyObject *out, *d, *copy, *key, *value, *v;
    Py_ssize_t i, n, pos;
    int rc;

    (void)self;
    if (!PyList_Check(models)) {
        PyErr_SetString(PyExc_TypeError, "model_dicts(models: list)");
        return NULL;
    }
    n = PyList_GET_SIZE(models);
    out = PyList_New(n);
    if (out == NULL)
        return NULL;
    for (i = 0; i < n && i < PyList_GET_SIZE(models); i++) {
        d = PyObject_GenericGetDict(PyList_GET_ITEM(models, i), NULL);
        if (d == NULL)
            goto error;
        copy = PyDict_New();
        if (copy == NULL || !PyDict_Check(d)) {
            if (copy != NULL)
                PyErr_SetString(PyExc_TypeError, "model_dicts: a model's __dict__ must be a dict");
            Py_XDECREF(copy);
            Py_DECREF(d);
            goto error;
        }
        pos = 0;
        while (PyDict_Next(d, &pos, &key, &value)) {
            if (PyList_CheckExact(value))
                v = PyList_GetSlice(value, 0, PyList_GET_SIZE(value));
            else if (PyFloat_CheckExact(value) && !isfinite(PyFloat_AS_DOUBLE(value)))
                v = Py_NewRef(Py_None);
            else
                v = Py_NewRef(value);
            Py_INCREF(key);
            rc = v == NULL ? -1 : PyDict_SetItem(copy, key, v);
            Py_DECREF(key);
            Py_XDECREF(v);
            if (rc < 0) {
                Py_DECREF(copy);
                Py_DECREF(d);
                goto error;
            }
        }
        Py_DECREF(d);
        PyList_SET_ITEM(out, i, copy);
    }
    if (i < n) {        /* the list shrank meanwhile: keep what was made */
        if (PyList_SetSlice(out, i, n, NULL) < 0)
            goto error;
    }
    return out;
error:
    Py_DECREF(out);
    return NULL;
}

/* The model for dict `d`: a new reference; NULL without an exception when a value is not of its
 * field's exact type (the caller validates it), NULL with one on error. */
static PyObject *
plain_model(PyObject *d, PyTypeObject *type, PyObject *names, const char *kinds, PyObject *defaults)
{
    Py_ssize_t pos = 0, k, n = PyTuple_GET_SIZE(names);
    PyObject *key, *value, *fields, *extra, *obj;
    PyObject *values[8] = {NULL};

    if (n > 8)
        return NULL;
    extra = PyDict_New();
    if (extra == NULL)
        return NULL;
    while (PyDict_Next(d, &pos, &key, &value)) {
        if (!PyUnicode_CheckExact(key))
            goto plain_not;
        k = field_index(names, key);
        if (k >= 0) {
            if (!exact(kinds[k], value))
                goto plain_not;
            values[k] = value;      /* borrowed: `d` holds it */
        }
        else if (!no_surrogate(key) || PyDict_SetItem(extra, key, value) < 0)
            goto plain_not_or_error;
    }
    fields = PyDict_New();
    if (fields == NULL)
        goto error;
    for (k = 0; k < n; k++)
        if (PyDict_SetItem(fields, PyTuple_GET_ITEM(names, k),
                           values[k] != NULL ? values[k] : PyTuple_GET_ITEM(defaults, k)) < 0) {
            Py_DECREF(fields);
            goto error;
        }
    obj = ls_bare_model(type, fields, PySet_New(d));
    if (obj == NULL)
        goto error;
    if (set_raw(obj, s_pydantic_extra, extra) < 0)      /* (set_raw releases it) */
        Py_CLEAR(obj);
    return obj;
plain_not_or_error:
    if (PyErr_Occurred())
        goto error;
plain_not:
    Py_DECREF(extra);
    return NULL;
error:
    Py_DECREF(extra);
    return NULL;
}

/* plain_models(items, cls, names, kinds, defaults, validate) -> list
 *
 * Each item as an instance of `cls`: an instance as it is; a dict (exactly) whose values of the
 * fields `names` have exactly their kinds (`kinds`, bytes: b's' str, b'b' bool), made directly, with
 * `defaults` for fields it leaves out, its other values as extras, and its keys as the fields set
 * (for a class whose validation keeps such values as they are, and extra values); anything else
 * validate(item). */
PyObject *
ls_plain_models(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *items, *cls, *names, *kinds, *defaults, *validate, *out, *item, *m;
    Py_ssize_t i, n;

    (void)self;
    if (nargs != 6 || !PyList_Check(args[0]) || !PyType_Check(args[1]) || !PyTuple_Check(args[2])
        || !PyBytes_Check(args[3]) || !PyTuple_Check(args[4])
        || PyBytes_GET_SIZE(args[3]) != PyTuple_GET_SIZE(args[2])
        || PyTuple_GET_SIZE(args[4]) != PyTuple_GET_SIZE(args[2])) {
        PyErr_SetString(PyExc_TypeError, "plain_models(items: list, cls: type, names: tuple, kinds: bytes, "
                                         "defaults: tuple, validate)");
        return NULL;
    }
    items = args[0];
    cls = args[1];
    names = args[2];
    kinds = args[3];
    defaults = args[4];
    validate = args[5];
    for (i = 0; i < PyTuple_GET_SIZE(names); i++)
        if (!PyUnicode_CheckExact(PyTuple_GET_ITEM(names, i))) {
            PyErr_SetString(PyExc_TypeError, "plain_models: names must be str");
            return NULL;
        }
    n = PyList_GET_SIZE(items);
    out = PyList_New(n);
    if (out == NULL)
        return NULL;
    for (i = 0; i < n && i < PyList_GET_SIZE(items); i++) {
        item = PyList_GET_ITEM(items, i);
        Py_INCREF(item);
        if (PyObject_TypeCheck(item, (PyTypeObject *)cls))
            m = (Py_INCREF(item), item);
        else {
            m = PyDict_CheckExact(item) ? plain_model(item, (PyTypeObject *)cls, names, PyBytes_AS_STRING(kinds),
                                                      defaults) : NULL;
            if (m == NULL && !PyErr_Occurred())
                m = PyObject_CallOneArg(validate, item);
        }
        Py_DECREF(item);
        if (m == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, m);
    }
    if (i < n) {    /* the list shrank while a validator ran */
        Py_DECREF(out);
        PyErr_SetString(PyExc_RuntimeError, "plain_models: the list changed size");
        return NULL;
    }
    return out;
}

/* ---------------------------------------------------------------- models of a known shape
 *
 * lorescan/_construct.py (build_directly) is the reference: for a dict of a shape it has worked out
 * (its keys in order and their values' types), the model's __dict__ is a copy of every field's
 * default with the given values in place, and its extra values a dict of the extra keys; the
 * instance then gets them as object.__setattr__ sets them. A world-info file's entries are all of
 * a few shapes, and these two steps were most of reading one entry. */

/* shaped_fields(base, layout, given) -> (fields, extra_values)
 *
 * For a dict `given` of a shape build_directly has worked out: a copy of `base` (every field in
 * order with its default) with given's values in place, and a new dict of given's extra values.
 * `layout` has an item per key of `given`, in order: the field's name as `base` holds it (the very
 * object, so each value finds its place at once), or None for an extra key. The values are read in
 * one pass over `given`, not looked up. */
PyObject *
ls_shaped_fields(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *layout, *given, *fields, *extra, *key, *value, *name, *out;
    Py_ssize_t pos = 0, k = 0, n;

    (void)self;
    if (nargs != 3 || !PyDict_CheckExact(args[0]) || !PyTuple_CheckExact(args[1]) || !PyDict_Check(args[2])
        || PyTuple_GET_SIZE(args[1]) != PyDict_GET_SIZE(args[2])) {
        PyErr_SetString(PyExc_TypeError, "shaped_fields(base: dict, layout: tuple, given: dict), "
                                         "an item of layout per key of given");
        return NULL;
    }
    layout = args[1];
    given = args[2];
    n = PyTuple_GET_SIZE(layout);
    fields = PyDict_Copy(args[0]);
    extra = fields == NULL ? NULL : PyDict_New();
    if (extra == NULL)
        goto error;
    while (k < n && PyDict_Next(given, &pos, &key, &value)) {
        name = PyTuple_GET_ITEM(layout, k++);
        if (PyDict_SetItem(name == Py_None ? extra : fields, name == Py_None ? key : name, value) < 0)
            goto error;
    }
    out = PyTuple_Pack(2, fields, extra);
    Py_DECREF(fields);
    Py_DECREF(extra);
    return out;
error:
    Py_XDECREF(fields);
    Py_XDECREF(extra);
    return NULL;
}

/* shaped_model(cls, fields, fields_set, extra, private) -> instance
 *
 * cls.__new__(cls) with __dict__, __pydantic_fields_set__, __pydantic_extra__ and
 * __pydantic_private__ set to the values given, as object.__setattr__ sets them. */
PyObject *
ls_shaped_model(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 5 || !PyType_Check(args[0]) || !PyDict_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "shaped_model(cls: type, fields: dict, fields_set, extra, private)");
        return NULL;
    }
    return new_model((PyTypeObject *)args[0], args[1], args[2], args[3], args[4]);
}

/* shape_key(d) -> (keys, types): (tuple(d), tuple(map(type, d.values()))), the key under which
 * build_directly keeps how dicts of this shape are made */
PyObject *
ls_shape_key(PyObject *self, PyObject *d)
{
    Py_ssize_t pos = 0, k = 0, n;
    PyObject *keys, *types, *key, *value, *out;

    (void)self;
    if (!PyDict_Check(d)) {
        PyErr_SetString(PyExc_TypeError, "shape_key(d: dict)");
        return NULL;
    }
    n = PyDict_GET_SIZE(d);
    keys = PyTuple_New(n);
    types = keys == NULL ? NULL : PyTuple_New(n);
    if (types == NULL) {
        Py_XDECREF(keys);
        return NULL;
    }
    while (k < n && PyDict_Next(d, &pos, &key, &value)) {
        Py_INCREF(key);
        PyTuple_SET_ITEM(keys, k, key);
        Py_INCREF(Py_TYPE(value));
        PyTuple_SET_ITEM(types, k, (PyObject *)Py_TYPE(value));
        k++;
    }
    out = PyTuple_Pack(2, keys, types);
    Py_DECREF(keys);
    Py_DECREF(types);
    return out;
}

/* -- OpenAI-style messages read before ------------------------------------------------------- */

/* role_messages(items, start, memo, user_name, char_name, out) -> int
 *
 * The service's loop over a chat's OpenAI-style messages (lorescan/_service/activation.py,
 * _messages, is the reference), for the messages it has read before: from items[start] on, while
 * an item is a dict with a "role" of "user" or "assistant" and no "mes", a str "content" and a
 * "name" that is missing, null or a str, and memo holds (role, content, name, user_name,
 * char_name), that message is appended to `out`. Returns the index of the first item it leaves to
 * the caller (len(items) when none). */
PyObject *
ls_role_messages(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *items, *memo, *out, *item, *role, *content, *name, *key, *got;
    Py_ssize_t i, n;

    (void)self;
    if (nargs != 6 || !PyList_Check(args[0]) || !PyDict_Check(args[2]) || !PyList_Check(args[5])) {
        PyErr_SetString(PyExc_TypeError, "role_messages(items: list, start: int, memo: dict, user_name, char_name, "
                                         "out: list)");
        return NULL;
    }
    items = args[0];
    memo = args[2];
    out = args[5];
    i = PyLong_AsSsize_t(args[1]);
    if (i == -1 && PyErr_Occurred())
        return NULL;
    n = PyList_GET_SIZE(items);
    for (; i < n; i++) {
        item = PyList_GET_ITEM(items, i);
        if (!PyDict_CheckExact(item))
            break;
        role = PyDict_GetItemWithError(item, s_role);       /* borrowed; str keys run no code */
        if (role == NULL || PyDict_GetItemWithError(item, s_mes) != NULL || PyErr_Occurred())
            break;
        if (!PyUnicode_CheckExact(role)
            || (PyUnicode_Compare(role, s_user) != 0 && PyUnicode_Compare(role, s_assistant) != 0))
            break;
        content = PyDict_GetItemWithError(item, s_content);
        if (content == NULL || !PyUnicode_CheckExact(content))
            break;
        name = PyDict_GetItemWithError(item, s_name);
        if (name == NULL && PyErr_Occurred())
            break;
        if (name == NULL)
            name = Py_None;
        else if (name != Py_None && !PyUnicode_CheckExact(name))
            break;
        key = PyTuple_Pack(5, role, content, name, args[3], args[4]);
        if (key == NULL)
            return NULL;
        got = PyDict_GetItemWithError(memo, key);       /* borrowed */
        Py_DECREF(key);
        if (got == NULL)
            break;
        if (PyList_Append(out, got) < 0)
            return NULL;
    }
    if (PyErr_Occurred())
        return NULL;
    return PyLong_FromSsize_t(i);
}
