/* A string as a JSON string literal, everything beyond ASCII escaped (json_string); Python's
 * json.encoder.encode_basestring_ascii is the reference, and must give the same text.
 *
 * The service's replies and the proxy's forwarded bodies carry the activated entries' text,
 * tens of kB per generation, mostly in a few long strings with few characters to escape. This
 * copies the runs between escapes whole instead of one character at a time. */
#include "native.h"

#include <math.h>

/* 0: copied as it is; 'u': \u00XX; else the letter after the backslash */
static char escape_of[128];

static void
init_escapes(void)
{
    int c;
    for (c = 0; c < 0x20; c++)
        escape_of[c] = 'u';
    escape_of['"'] = '"';
    escape_of['\\'] = '\\';
    escape_of['\n'] = 'n';
    escape_of['\r'] = 'r';
    escape_of['\t'] = 't';
    escape_of['\b'] = 'b';
    escape_of['\f'] = 'f';
    escape_of[0x7f] = 'u';
}

static const char hexdigits[] = "0123456789abcdef";

/* how many output characters `ch` takes */
static inline Py_ssize_t
width(Py_UCS4 ch)
{
    if (ch < 128)
        return escape_of[ch] == 0 ? 1 : escape_of[ch] == 'u' ? 6 : 2;
    return ch >= 0x10000 ? 12 : 6;
}

static inline Py_UCS1 *
put_u(Py_UCS1 *out, Py_UCS4 ch)
{
    *out++ = '\\';
    *out++ = 'u';
    *out++ = hexdigits[(ch >> 12) & 0xf];
    *out++ = hexdigits[(ch >> 8) & 0xf];
    *out++ = hexdigits[(ch >> 4) & 0xf];
    *out++ = hexdigits[ch & 0xf];
    return out;
}

static inline Py_UCS1 *
put_escaped(Py_UCS1 *out, Py_UCS4 ch)
{
    if (ch < 128) {
        char e = escape_of[ch];
        if (e != 'u') {
            *out++ = '\\';
            *out++ = (Py_UCS1)e;
            return out;
        }
        return put_u(out, ch);
    }
    if (ch >= 0x10000) {        /* a surrogate pair */
        Py_UCS4 v = ch - 0x10000;
        out = put_u(out, 0xd800 | ((v >> 10) & 0x3ff));
        return put_u(out, 0xdc00 | (v & 0x3ff));
    }
    return put_u(out, ch);
}

/* Whether any byte of 8 ASCII bytes needs an escape: below 0x20, '"', '\\' or 0x7f. */
static inline int
word_needs_escape(uint64_t x)
{
    const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
    uint64_t below = (x - ones * 0x20) & ~x;
    uint64_t quote = x ^ (ones * '"'), slash = x ^ (ones * '\\'), del = x ^ (ones * 0x7f);
    uint64_t hit = below | ((quote - ones) & ~quote) | ((slash - ones) & ~slash) | ((del - ones) & ~del);
    return (hit & high) != 0;
}

/* The output width of an ASCII string's characters (escapes included). */
static Py_ssize_t
ascii_width(const Py_UCS1 *s, Py_ssize_t n)
{
    Py_ssize_t i = 0, size = n;
    uint64_t x;
    for (; i + 8 <= n; i += 8) {
        memcpy(&x, s + i, 8);
        if (word_needs_escape(x)) {
            Py_ssize_t k;
            for (k = i; k < i + 8; k++)
                if (escape_of[s[k]])
                    size += escape_of[s[k]] == 'u' ? 5 : 1;
        }
    }
    for (; i < n; i++)
        if (escape_of[s[i]])
            size += escape_of[s[i]] == 'u' ? 5 : 1;
    return size;
}

/* An ASCII string's characters written at `w`, runs without escapes copied whole. */
static Py_UCS1 *
ascii_write(Py_UCS1 *w, const Py_UCS1 *s, Py_ssize_t n)
{
    Py_ssize_t i = 0, run = 0;
    uint64_t x;
    while (i < n) {
        while (run + 8 <= n) {
            memcpy(&x, s + run, 8);
            if (word_needs_escape(x))
                break;
            run += 8;
        }
        while (run < n && escape_of[s[run]] == 0)
            run++;
        memcpy(w, s + i, (size_t)(run - i));
        w += run - i;
        if (run < n)
            w = put_escaped(w, s[run++]);
        i = run;
    }
    return w;
}

/* A string's characters written at `w`, every character beyond ASCII escaped (the string may hold
 * any kind of character); `w` has room for 12 bytes a character. */
static Py_UCS1 *
any_write(Py_UCS1 *w, int kind, const void *data, Py_ssize_t n)
{
    Py_ssize_t i;
    for (i = 0; i < n; i++) {
        Py_UCS4 ch = PyUnicode_READ(kind, data, i);
        if (ch < 128 && escape_of[ch] == 0)
            *w++ = (Py_UCS1)ch;
        else
            w = put_escaped(w, ch);
    }
    return w;
}

PyObject *
ls_json_string(PyObject *self, PyObject *text)
{
    Py_ssize_t n, i, size;
    int kind;
    const void *data;
    PyObject *out;
    Py_UCS1 *w;

    if (!PyUnicode_Check(text)) {
        PyErr_Format(PyExc_TypeError, "json_string: a str, not %.100s", Py_TYPE(text)->tp_name);
        return NULL;
    }
    if (escape_of['"'] == 0)
        init_escapes();
    n = PyUnicode_GET_LENGTH(text);
    kind = PyUnicode_KIND(text);
    data = PyUnicode_DATA(text);
    if (PyUnicode_IS_ASCII(text)) {
        size = ascii_width((const Py_UCS1 *)data, n) + 2;
        out = PyUnicode_New(size, 127);
        if (out == NULL)
            return NULL;
        w = PyUnicode_1BYTE_DATA(out);
        *w++ = '"';
        w = ascii_write(w, (const Py_UCS1 *)data, n);
        *w = '"';
        return out;
    }
    size = 2;
    for (i = 0; i < n; i++)
        size += width(PyUnicode_READ(kind, data, i));
    out = PyUnicode_New(size, 127);
    if (out == NULL)
        return NULL;
    w = PyUnicode_1BYTE_DATA(out);
    *w++ = '"';
    w = any_write(w, kind, data, n);
    *w = '"';
    return out;
}

/* ---------------------------------------------------------------- json_layout
 *
 * Compact JSON text (json.dumps with separators=(",", ":"), ensure_ascii=False: the C encoder)
 * laid out as json.dumps(..., indent=N) lays it out with the pure-Python encoder it switches to:
 * a newline and N spaces per level after "{", "[" and ",", before "}" and "]"; ": " between a key
 * and its value; an empty "{}" or "[]" kept whole. With indent < 0 the layout stays compact.
 * Either way a lone surrogate inside a string is written as a lowercase \uXXXX escape, so the
 * text is valid JSON that encodes to UTF-8 (lorescan._formats.common.dump_json's rule).
 *
 * A book of 30,000 entries is 44 MB of such text; the pure-Python encoder took most of the time
 * of writing it back. One walk both counts (odata NULL) and writes, so the two cannot differ; it
 * is inlined once per pair of kinds (layout_count, layout_write), so each copy reads and writes
 * its characters without asking their width. */

#define LAYOUT_PUT(c) do { if (odata != NULL) PyUnicode_WRITE(okind, odata, pos, (c)); pos++; } while (0)

static Py_ALWAYS_INLINE Py_ssize_t
layout_walk(int kind, const void *data, Py_ssize_t n, Py_ssize_t indent,
            int okind, void *odata, Py_UCS4 *maxchar)
{
    Py_ssize_t i, pos = 0, level = 0, k;
    int in_string = 0;
    Py_UCS4 ch, top = 0;

    for (i = 0; i < n; i++) {
        ch = PyUnicode_READ(kind, data, i);
        if (in_string) {
            if (ch == '\\' && i + 1 < n) {      /* an escape: its next character is ASCII */
                LAYOUT_PUT(ch);
                ch = PyUnicode_READ(kind, data, ++i);
            }
            else if (ch == '"')
                in_string = 0;
            else if (ch >= 0xd800 && ch <= 0xdfff) {
                LAYOUT_PUT('\\');
                LAYOUT_PUT('u');
                LAYOUT_PUT((Py_UCS4)hexdigits[(ch >> 12) & 0xf]);
                LAYOUT_PUT((Py_UCS4)hexdigits[(ch >> 8) & 0xf]);
                LAYOUT_PUT((Py_UCS4)hexdigits[(ch >> 4) & 0xf]);
                LAYOUT_PUT((Py_UCS4)hexdigits[ch & 0xf]);
                continue;
            }
            if (ch > top)
                top = ch;
            LAYOUT_PUT(ch);
            continue;
        }
        if (ch == '"')
            in_string = 1;
        else if (indent >= 0 && (ch == '{' || ch == '[')) {
            Py_UCS4 close = ch == '{' ? '}' : ']';
            LAYOUT_PUT(ch);
            if (i + 1 < n && PyUnicode_READ(kind, data, i + 1) == close) {
                LAYOUT_PUT(close);
                i++;
                continue;
            }
            level++;
            LAYOUT_PUT('\n');
            for (k = 0; k < level * indent; k++)
                LAYOUT_PUT(' ');
            continue;
        }
        else if (indent >= 0 && (ch == '}' || ch == ']')) {
            level--;
            LAYOUT_PUT('\n');
            for (k = 0; k < level * indent; k++)
                LAYOUT_PUT(' ');
        }
        else if (indent >= 0 && ch == ',') {
            LAYOUT_PUT(ch);
            LAYOUT_PUT('\n');
            for (k = 0; k < level * indent; k++)
                LAYOUT_PUT(' ');
            continue;
        }
        else if (indent >= 0 && ch == ':') {
            LAYOUT_PUT(ch);
            LAYOUT_PUT(' ');
            continue;
        }
        if (ch > top)
            top = ch;
        LAYOUT_PUT(ch);
    }
    *maxchar = top;
    return pos;
}

static Py_ssize_t
layout_count(int kind, const void *data, Py_ssize_t n, Py_ssize_t indent, Py_UCS4 *maxchar)
{
    switch (kind) {
    case PyUnicode_1BYTE_KIND:
        return layout_walk(PyUnicode_1BYTE_KIND, data, n, indent, 0, NULL, maxchar);
    case PyUnicode_2BYTE_KIND:
        return layout_walk(PyUnicode_2BYTE_KIND, data, n, indent, 0, NULL, maxchar);
    default:
        return layout_walk(PyUnicode_4BYTE_KIND, data, n, indent, 0, NULL, maxchar);
    }
}

/* the output is never of a wider kind than the input (a surrogate's escape is ASCII) */
static void
layout_write(int kind, const void *data, Py_ssize_t n, Py_ssize_t indent, int okind, void *odata)
{
    Py_UCS4 top;

#define LAYOUT_WRITE(K, OK) layout_walk((K), data, n, indent, (OK), odata, &top)
    if (kind == PyUnicode_1BYTE_KIND)
        LAYOUT_WRITE(PyUnicode_1BYTE_KIND, PyUnicode_1BYTE_KIND);
    else if (kind == PyUnicode_2BYTE_KIND && okind == PyUnicode_2BYTE_KIND)
        LAYOUT_WRITE(PyUnicode_2BYTE_KIND, PyUnicode_2BYTE_KIND);
    else if (kind == PyUnicode_2BYTE_KIND)
        LAYOUT_WRITE(PyUnicode_2BYTE_KIND, PyUnicode_1BYTE_KIND);
    else if (okind == PyUnicode_4BYTE_KIND)
        LAYOUT_WRITE(PyUnicode_4BYTE_KIND, PyUnicode_4BYTE_KIND);
    else if (okind == PyUnicode_2BYTE_KIND)
        LAYOUT_WRITE(PyUnicode_4BYTE_KIND, PyUnicode_2BYTE_KIND);
    else
        LAYOUT_WRITE(PyUnicode_4BYTE_KIND, PyUnicode_1BYTE_KIND);
#undef LAYOUT_WRITE
}

PyObject *
ls_json_layout(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t n, size, indent;
    Py_UCS4 maxchar;
    PyObject *text, *out;
    int kind;
    const void *data;

    (void)self;
    if (nargs != 2 || !PyUnicode_Check(args[0]) || !PyLong_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "json_layout(text: str, indent: int)");
        return NULL;
    }
    text = args[0];
    indent = PyLong_AsSsize_t(args[1]);
    if (indent == -1 && PyErr_Occurred())
        return NULL;
    if (indent > 1000) {
        PyErr_SetString(PyExc_ValueError, "json_layout: indent over 1000");
        return NULL;
    }
    n = PyUnicode_GET_LENGTH(text);
    kind = PyUnicode_KIND(text);
    data = PyUnicode_DATA(text);
    if (indent < 0 && kind == PyUnicode_1BYTE_KIND)   /* compact, and no surrogate can be there */
        return Py_NewRef(text);
    size = layout_count(kind, data, n, indent, &maxchar);
    out = PyUnicode_New(size, maxchar);
    if (out == NULL)
        return NULL;
    layout_write(kind, data, n, indent, PyUnicode_KIND(out), PyUnicode_DATA(out));
    return out;
}

/* ---------------------------------------------------------------- json_dump
 *
 * json_dump(value) -> bytes | None: json.dumps(value, separators=(",", ":"), allow_nan=False)
 * encoded as ASCII, for values made only of exact dicts with str keys, lists, tuples, strs, ints,
 * finite floats, bools and None, nested at most JSON_DEPTH deep. Anything else (a subclass, a
 * non-str key, NaN or an infinity, an int too long to write) gives None, and the caller encodes
 * the value with json's own encoder, which gives its own result or error.
 *
 * An activation's reply holds a few long texts and a few hundred short strings (the activated
 * keys, the example and at-depth entries); json's C encoder calls back into Python for each
 * string escaped by the extension. This writes the whole reply into one buffer. */

#define JSON_DEPTH 200

typedef struct {
    char *buf;
    Py_ssize_t len, cap;
} DumpOut;

/* room for `need` more bytes; -1 with MemoryError set */
static int
dump_room(DumpOut *o, Py_ssize_t need)
{
    Py_ssize_t cap;
    char *buf;
    if (o->len + need <= o->cap)
        return 0;
    cap = o->cap * 2;
    if (cap < o->len + need)
        cap = o->len + need;
    buf = PyMem_Realloc(o->buf, (size_t)cap);
    if (buf == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    o->buf = buf;
    o->cap = cap;
    return 0;
}

static int
dump_raw(DumpOut *o, const char *s, Py_ssize_t n)
{
    if (dump_room(o, n) < 0)
        return -1;
    memcpy(o->buf + o->len, s, (size_t)n);
    o->len += n;
    return 0;
}

/* a string written in one walk, after room for its widest escape (6 or 12 bytes a character) */
static int
dump_str(DumpOut *o, PyObject *text)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_UCS1 *w;

    if (n > (PY_SSIZE_T_MAX - o->cap) / 16) {
        PyErr_NoMemory();
        return -1;
    }
    if (dump_room(o, (PyUnicode_IS_ASCII(text) ? 6 : 12) * n + 2) < 0)
        return -1;
    w = (Py_UCS1 *)o->buf + o->len;
    *w++ = '"';
    if (PyUnicode_IS_ASCII(text))
        w = ascii_write(w, (const Py_UCS1 *)data, n);
    else
        w = any_write(w, kind, data, n);
    *w++ = '"';
    o->len = (Py_ssize_t)(w - (Py_UCS1 *)o->buf);
    return 0;
}

/* an int or a float as its repr writes it; 1 when the repr fails (an int past the digits limit) */
static int
dump_repr(DumpOut *o, PyObject *value)
{
    PyObject *text = Py_TYPE(value)->tp_repr(value);
    int rc;
    if (text == NULL) {
        PyErr_Clear();
        return 1;
    }
    rc = dump_raw(o, (const char *)PyUnicode_1BYTE_DATA(text), PyUnicode_GET_LENGTH(text));
    Py_DECREF(text);
    return rc;
}

/* 0: written; 1: a value json_dump leaves to json's encoder; -1: an error (set) */
static int
dump_value(DumpOut *o, PyObject *v, int depth)
{
    Py_ssize_t i, n;
    int rc;

    if (PyUnicode_CheckExact(v))
        return dump_str(o, v);
    if (v == Py_None)
        return dump_raw(o, "null", 4);
    if (v == Py_True)
        return dump_raw(o, "true", 4);
    if (v == Py_False)
        return dump_raw(o, "false", 5);
    if (PyLong_CheckExact(v)) {
        int overflow;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        char digits[24];
        if (overflow)
            return dump_repr(o, v);
        if (x == -1 && PyErr_Occurred())
            return -1;
        n = (Py_ssize_t)snprintf(digits, sizeof digits, "%lld", x);
        return dump_raw(o, digits, n);
    }
    if (PyFloat_CheckExact(v)) {
        double x = PyFloat_AS_DOUBLE(v);
        if (!isfinite(x))
            return 1;
        return dump_repr(o, v);
    }
    if (depth >= JSON_DEPTH)
        return 1;
    if (PyList_CheckExact(v) || PyTuple_CheckExact(v)) {
        int list = PyList_CheckExact(v);
        if (dump_raw(o, "[", 1) < 0)
            return -1;
        for (i = 0; i < (list ? PyList_GET_SIZE(v) : PyTuple_GET_SIZE(v)); i++) {
            if (i > 0 && dump_raw(o, ",", 1) < 0)
                return -1;
            rc = dump_value(o, list ? PyList_GET_ITEM(v, i) : PyTuple_GET_ITEM(v, i), depth + 1);
            if (rc != 0)
                return rc;
        }
        return dump_raw(o, "]", 1);
    }
    if (PyDict_CheckExact(v)) {
        PyObject *key, *item;
        Py_ssize_t pos = 0;
        int first = 1;
        if (dump_raw(o, "{", 1) < 0)
            return -1;
        while (PyDict_Next(v, &pos, &key, &item)) {
            if (!PyUnicode_CheckExact(key))
                return 1;
            if ((!first && dump_raw(o, ",", 1) < 0) || dump_str(o, key) < 0 || dump_raw(o, ":", 1) < 0)
                return -1;
            first = 0;
            rc = dump_value(o, item, depth + 1);
            if (rc != 0)
                return rc;
        }
        return dump_raw(o, "}", 1);
    }
    return 1;
}

PyObject *
ls_json_dump(PyObject *self, PyObject *value)
{
    DumpOut o = {NULL, 0, 0};
    PyObject *out = NULL;
    int rc;

    (void)self;
    if (escape_of['"'] == 0)
        init_escapes();
    if (dump_room(&o, 4096) < 0)
        return NULL;
    rc = dump_value(&o, value, 0);
    if (rc == 0)
        out = PyBytes_FromStringAndSize(o.buf, o.len);
    else if (rc == 1)
        out = Py_NewRef(Py_None);
    PyMem_Free(o.buf);
    return out;
}
