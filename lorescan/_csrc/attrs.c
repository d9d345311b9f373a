/* Attribute reads of the engine's slots objects (ls_getattr), as PyObject_GetAttr gives them. */
#include "native.h"

/* A class whose attribute `name` is one of its __slots__, read with the generic attribute lookup:
 * the slot's offset, found once per (class, name) and kept in a small hash table probed over WAYS
 * neighbouring places (so the dozen or so pairs the engine reads in one loop never evict each
 * other, wherever the allocator put the classes and names); the class is referenced while it is
 * kept there, so its address is never another class's. */
typedef struct {
    PyTypeObject *type;
    PyObject *name;
    Py_ssize_t offset;      /* the slot's offset, or -1: read it with PyObject_GetAttr */
} SlotPlace;

#define PLACES 256
#define WAYS 4
static SlotPlace places[PLACES + WAYS];     /* a probe never wraps around */
static unsigned int evict;                  /* which of a full run's places the next new pair takes */

static Py_ssize_t
slot_offset(PyTypeObject *type, PyObject *name)
{
    PyObject *descr;
    Py_ssize_t offset = -1;

    if (type->tp_getattro != PyObject_GenericGetAttr)
        return -1;          /* a class with __getattr__ or __getattribute__ of its own */
    descr = PyObject_GetAttr((PyObject *)type, name);
    if (descr == NULL) {
        PyErr_Clear();
        return -1;
    }
    if (Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
        PyMemberDef *m = ((PyMemberDescrObject *)descr)->d_member;
        if (m->type == T_OBJECT_EX && m->offset > 0)
            offset = m->offset;
    }
    Py_DECREF(descr);
    return offset;
}

/* The place of (type, name): the one that holds it, else a new one (an empty place of its run, or
 * one of the run in turn). */
static SlotPlace *
slot_place(PyTypeObject *type, PyObject *name)
{
    uintptr_t h = ((uintptr_t)type >> 4) * 0x9E3779B1u ^ ((uintptr_t)name >> 4) * 0x85EBCA77u;
    SlotPlace *run = &places[(h ^ (h >> 16)) % PLACES], *p;
    PyTypeObject *old;
    Py_ssize_t offset;
    int k;

    for (k = 0; k < WAYS; k++)
        if (run[k].type == type && run[k].name == name)
            return &run[k];
    offset = slot_offset(type, name);   /* first: it may run code that reads this table */
    for (k = 0; k < WAYS && run[k].type != NULL && (run[k].type != type || run[k].name != name); k++)
        ;
    p = &run[k < WAYS ? k : (int)(evict++ % WAYS)];
    old = p->type;
    Py_INCREF(type);
    p->type = type;
    p->name = name;
    p->offset = offset;
    Py_XDECREF(old);    /* last: freeing the old class may run code that reads this table */
    return p;
}

/* getattr(obj, name), a new reference (NULL with an exception, as PyObject_GetAttr); a slot of a
 * plain slots class is read at its offset. `name` must be an interned name that lives for ever. */
PyObject *
ls_getattr(PyObject *obj, PyObject *name)
{
    SlotPlace *p = slot_place(Py_TYPE(obj), name);
    PyObject *v;

    if (p->offset > 0) {
        v = *(PyObject **)((char *)obj + p->offset);
        if (v != NULL) {
            Py_INCREF(v);
            return v;
        }
    }
    return PyObject_GetAttr(obj, name);
}


/* An entry's text in this evaluation: contents[gid] (its content with macros substituted), else its
 * own content; a new reference, or NULL with an exception. */
PyObject *
ls_entry_text(PyObject *ce, PyObject *gid, PyObject *contents)
{
    PyObject *text = PyDict_GetItemWithError(contents, gid);     /* borrowed */

    if (text != NULL) {
        Py_INCREF(text);
        return text;
    }
    return PyErr_Occurred() ? NULL : ls_getattr(ce, s_content);
}

/* The offsets of the slots `names` (n interned names) in instances of `cls`: 0, or -1 with a
 * TypeError naming `who` when one of them is not a plain slot of `cls` or of a class it derives from. */
int
ls_slot_offsets(PyTypeObject *cls, PyObject *const *names, int n, Py_ssize_t *offsets, const char *who)
{
    int k;

    for (k = 0; k < n; k++) {
        PyObject *descr = PyObject_GetAttr((PyObject *)cls, names[k]);
        offsets[k] = -1;
        if (descr == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_AttributeError))
                return -1;
            PyErr_Clear();
        }
        else if (Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
            PyMemberDef *m = ((PyMemberDescrObject *)descr)->d_member;
            if (m->type == T_OBJECT_EX && m->offset > 0 && PyType_IsSubtype(cls, PyDescr_TYPE(descr)))
                offsets[k] = m->offset;
        }
        Py_XDECREF(descr);
        if (offsets[k] < 0) {
            PyErr_Format(PyExc_TypeError, "%s: %U is not a slot of the class", who, names[k]);
            return -1;
        }
    }
    return 0;
}

/* obj's slot at `offset` (a new reference) when obj is an instance of `cls` (the class the offset
 * is of) and the slot is set; else getattr(obj, name), which fills a lazily read entry. */
PyObject *
ls_slot_or_attr(PyObject *obj, PyTypeObject *cls, Py_ssize_t offset, PyObject *name)
{
    if (PyObject_TypeCheck(obj, cls)) {
        PyObject *v = *(PyObject **)((char *)obj + offset);
        if (v != NULL) {
            Py_INCREF(v);
            return v;
        }
    }
    return PyObject_GetAttr(obj, name);
}

/* Each of `texts` interned into out[k] (names that live for ever, as module.c's): 0, or -1. */
int
ls_intern_all(const char *const *texts, int n, PyObject **out)
{
    int k;

    for (k = 0; k < n; k++)
        if ((out[k] = PyUnicode_InternFromString(texts[k])) == NULL)
            return -1;
    return 0;
}
