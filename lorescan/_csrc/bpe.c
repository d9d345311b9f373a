/* cl100k token counts (bpe_table, count_bpe): the split and the byte-pair merge in C, over the
 * rank table lorescan caches (lorescan/_rank_cache.py), so a process that counts tokens need not
 * build tiktoken's tokenizer (about 20 MB and a fifth of a second).
 *
 * The split is cl100k's pattern, alternative by alternative and in its order:
 *   '(?i:[sdmt]|ll|ve|re) | [^\r\n\p{L}\p{N}]?+\p{L}++ | \p{N}{1,3}+ | ' '?[^\s\p{L}\p{N}]++[\r\n]*+
 *   | \s++$ | \s*[\r\n] | \s+(?!\S) | \s
 * with tiktoken's meanings: $ is the end of the text, \s the White_Space property, (?i) simple case
 * folding (so 's' also matches U+017F). The classes come from Unicode 14.0 (unicode14.h); a text
 * with a character unassigned there, or a surrogate, is left to tiktoken (count_bpe gives -1).
 * Each piece's UTF-8 bytes are one token when the table has them, else they are merged as
 * tiktoken's byte_pair_merge does (lorescan/_bpe.py, _merged_parts): the pair of lowest rank
 * first, the leftmost of equal ones, until no pair has a rank. tests/test_bpe.py compares the
 * counts with tiktoken's. */
#include "native.h"
#include "unicode14.h"

enum { C_OTHER = 0, C_LETTER = 1, C_NUMBER = 2, C_SPACE = 3, C_UNKNOWN = 4 };
#define NO_RANK UINT32_MAX
#define CAPSULE "lorescan.bpe_table"

typedef struct {
    PyObject *blob;            /* bytes: every token's bytes, in rank order */
    const unsigned char *bytes;
    uint32_t *starts;          /* where token r starts; starts[n] is the blob's length */
    uint32_t n, mask;
    uint32_t *slots;           /* open addressing by the bytes' hash: rank + 1, or 0 (empty) */
} BpeTable;

static uint8_t ascii_class[128];

static uint32_t hash_bytes(const unsigned char *p, Py_ssize_t len)
{
    uint32_t h = 2166136261u;
    for (Py_ssize_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 16777619u;
    }
    return h ^ (h >> 15);
}

static uint32_t rank_of(const BpeTable *t, const unsigned char *p, Py_ssize_t len)
{
    uint32_t at = hash_bytes(p, len) & t->mask;
    for (;;) {
        uint32_t s = t->slots[at];
        if (s == 0)
            return NO_RANK;
        uint32_t r = s - 1, a = t->starts[r];
        if ((Py_ssize_t)(t->starts[r + 1] - a) == len && memcmp(t->bytes + a, p, (size_t)len) == 0)
            return r;
        at = (at + 1) & t->mask;
    }
}

static void table_free(PyObject *capsule)
{
    BpeTable *t = PyCapsule_GetPointer(capsule, CAPSULE);
    if (t == NULL)
        return;
    Py_XDECREF(t->blob);
    PyMem_Free(t->starts);
    PyMem_Free(t->slots);
    PyMem_Free(t);
}

/* bpe_table(blob, starts): the table of the tokens blob[starts[r]:starts[r + 1]], of rank r. */
PyObject *ls_bpe_table(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyBytes_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "bpe_table(blob: bytes, starts)");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[1], &view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    Py_ssize_t blob_len = PyBytes_GET_SIZE(args[0]);
    Py_ssize_t count = view.len / 4;
    if (view.itemsize != 4 || view.format == NULL || (strcmp(view.format, "I") && strcmp(view.format, "=I")
                                                      && strcmp(view.format, "<I"))
        || count < 2 || count > (Py_ssize_t)(UINT32_MAX / 4)) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "bpe_table: starts must be an array('I') of at least two offsets");
        return NULL;
    }
    BpeTable *t = PyMem_Calloc(1, sizeof(BpeTable));
    uint32_t *starts = PyMem_Malloc((size_t)count * sizeof(uint32_t));
    if (t == NULL || starts == NULL) {
        PyBuffer_Release(&view);
        PyMem_Free(t);
        PyMem_Free(starts);
        return PyErr_NoMemory();
    }
    memcpy(starts, view.buf, (size_t)count * sizeof(uint32_t));
    PyBuffer_Release(&view);
    t->starts = starts;
    t->n = (uint32_t)(count - 1);
    for (uint32_t r = 0; r < t->n; r++) {
        if (starts[r] > starts[r + 1] || starts[r + 1] > (uint64_t)blob_len) {
            PyMem_Free(starts);
            PyMem_Free(t);
            PyErr_SetString(PyExc_ValueError, "bpe_table: the offsets do not fit the blob");
            return NULL;
        }
    }
    uint32_t size = 1;
    while (size < t->n * 2u + 2u)
        size <<= 1;
    t->mask = size - 1;
    t->slots = PyMem_Calloc(size, sizeof(uint32_t));
    if (t->slots == NULL) {
        PyMem_Free(starts);
        PyMem_Free(t);
        return PyErr_NoMemory();
    }
    t->blob = Py_NewRef(args[0]);
    t->bytes = (const unsigned char *)PyBytes_AS_STRING(args[0]);
    for (uint32_t r = 0; r < t->n; r++) {
        const unsigned char *p = t->bytes + starts[r];
        Py_ssize_t len = starts[r + 1] - starts[r];
        uint32_t at = hash_bytes(p, len) & t->mask;
        while (t->slots[at] != 0)
            at = (at + 1) & t->mask;
        t->slots[at] = r + 1;
    }
    if (ascii_class['a'] == 0) {
        for (int c = 0; c < 128; c++)
            ascii_class[c] = ((c | 32) >= 'a' && (c | 32) <= 'z') ? C_LETTER : (c >= '0' && c <= '9') ? C_NUMBER
                             : ((c >= 9 && c <= 13) || c == ' ') ? C_SPACE : C_OTHER;
    }
    PyObject *capsule = PyCapsule_New(t, CAPSULE, table_free);
    if (capsule == NULL) {
        Py_DECREF(t->blob);
        PyMem_Free(t->slots);
        PyMem_Free(starts);
        PyMem_Free(t);
    }
    return capsule;
}

static uint8_t class_of(Py_UCS4 c)
{
    if (c < 128)
        return ascii_class[c];
    Py_ssize_t lo = 0, hi = LS_U14_RUNS;
    while (lo < hi) {            /* the first run starting after c */
        Py_ssize_t mid = (lo + hi) >> 1;
        if (ls_u14_first[mid] <= c)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (lo > 0 && c <= ls_u14_last[lo - 1]) ? ls_u14_class[lo - 1] : C_OTHER;
}

static void heap_push(uint64_t *heap, Py_ssize_t *size, uint64_t key)
{
    Py_ssize_t i = (*size)++;
    while (i > 0) {
        Py_ssize_t up = (i - 1) >> 1;
        if (heap[up] <= key)
            break;
        heap[i] = heap[up];
        i = up;
    }
    heap[i] = key;
}

static uint64_t heap_pop(uint64_t *heap, Py_ssize_t *size)
{
    uint64_t top = heap[0], last = heap[--(*size)];
    Py_ssize_t i = 0, n = *size;
    for (;;) {
        Py_ssize_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && heap[c + 1] < heap[c])
            c++;
        if (heap[c] >= last)
            break;
        heap[i] = heap[c];
        i = c;
    }
    if (n > 0)
        heap[i] = last;
    return top;
}

/* merged_parts for a long piece: the same merges in the same order, the next one taken from a heap
 * of (rank, start) over the parts linked in a list, so a long run of letters or spaces costs
 * n log n, not n squared (as tiktoken's own counts do). A part is named by the offset it starts at;
 * rank[k] is the rank of part k joined with the part after it. */
static Py_ssize_t merged_parts_long(const BpeTable *t, const unsigned char *p, Py_ssize_t len)
{
    uint32_t *next = PyMem_Malloc((size_t)len * sizeof(uint32_t));
    uint32_t *prev = PyMem_Malloc((size_t)len * sizeof(uint32_t));
    uint32_t *rank = PyMem_Malloc((size_t)len * sizeof(uint32_t));
    uint64_t *heap = PyMem_Malloc((size_t)len * 3 * sizeof(uint64_t));
    Py_ssize_t parts = len, size = 0;
    if (next == NULL || prev == NULL || rank == NULL || heap == NULL) {
        PyErr_NoMemory();
        parts = -1;
        goto done;
    }
    for (Py_ssize_t k = 0; k < len; k++) {
        next[k] = (uint32_t)(k + 1);
        prev[k] = (uint32_t)(k - 1);       /* UINT32_MAX for the first */
        rank[k] = k + 1 < len ? rank_of(t, p + k, 2) : NO_RANK;
        if (rank[k] != NO_RANK)
            heap_push(heap, &size, ((uint64_t)rank[k] << 32) | (uint64_t)k);
    }
    while (size > 0) {
        uint64_t key = heap_pop(heap, &size);
        uint32_t k = (uint32_t)(key & 0xFFFFFFFFu), r = (uint32_t)(key >> 32);
        if (rank[k] != r)                  /* a stale entry (merged away parts have NO_RANK) */
            continue;
        uint32_t gone = next[k], after = next[gone];
        rank[gone] = NO_RANK;
        next[k] = after;
        if (after < len)
            prev[after] = k;
        parts--;
        rank[k] = after < len ? rank_of(t, p + k, (Py_ssize_t)next[after] - k) : NO_RANK;
        if (rank[k] != NO_RANK)
            heap_push(heap, &size, ((uint64_t)rank[k] << 32) | (uint64_t)k);
        if (prev[k] != UINT32_MAX) {
            uint32_t h = prev[k];
            rank[h] = rank_of(t, p + h, (Py_ssize_t)after - h);
            if (rank[h] != NO_RANK)
                heap_push(heap, &size, ((uint64_t)rank[h] << 32) | (uint64_t)h);
        }
    }
done:
    PyMem_Free(next);
    PyMem_Free(prev);
    PyMem_Free(rank);
    PyMem_Free(heap);
    return parts;
}

/* How many tokens byte_pair_merge leaves of a piece of two or more bytes not in the table. */
static Py_ssize_t merged_parts(const BpeTable *t, const unsigned char *p, Py_ssize_t len)
{
    Py_ssize_t bounds[65];
    uint32_t pair[64];
    if (len > 64)
        return merged_parts_long(t, p, len);
    Py_ssize_t parts = len;      /* parts; bounds[0..parts], pair[0..parts-2] */
    for (Py_ssize_t i = 0; i <= len; i++)
        bounds[i] = i;
    for (Py_ssize_t i = 0; i + 1 < len; i++)
        pair[i] = rank_of(t, p + i, 2);
    while (parts > 1) {
        Py_ssize_t at = -1;
        uint32_t low = NO_RANK;
        for (Py_ssize_t i = 0; i + 1 < parts; i++) {
            if (pair[i] < low) {
                low = pair[i];
                at = i;
            }
        }
        if (at < 0)
            break;
        /* parts at and at + 1 become one */
        memmove(bounds + at + 1, bounds + at + 2, (size_t)(parts - at - 1) * sizeof(Py_ssize_t));
        memmove(pair + at, pair + at + 1, (size_t)(parts - at - 2) * sizeof(uint32_t));
        parts--;
        if (at > 0)
            pair[at - 1] = rank_of(t, p + bounds[at - 1], bounds[at + 1] - bounds[at - 1]);
        if (at + 1 < parts)
            pair[at] = rank_of(t, p + bounds[at], bounds[at + 2] - bounds[at]);
    }
    return parts;
}

/* The end of the piece starting at i (cls: each character's class; the text's characters). */
static Py_ssize_t piece_end(const uint8_t *cls, int kind, const void *data, Py_ssize_t n, Py_ssize_t i)
{
#define CH(k) PyUnicode_READ(kind, data, (k))
    Py_UCS4 c = CH(i);
    uint8_t k = cls[i];
    if (c == '\'' && i + 1 < n) {                               /* '(?i:[sdmt]|ll|ve|re) */
        Py_UCS4 d = CH(i + 1) | 32;
        if (d == 's' || d == 'd' || d == 'm' || d == 't' || CH(i + 1) == 0x17F)
            return i + 2;
        if (i + 2 < n) {         /* c | 32 is an ASCII letter only for that letter in either case */
            Py_UCS4 e = CH(i + 2) | 32;
            if ((d == 'l' && e == 'l') || (d == 'v' && e == 'e') || (d == 'r' && e == 'e'))
                return i + 3;
        }
    }
    Py_ssize_t j;
    if (k == C_LETTER || (c != '\r' && c != '\n' && k != C_NUMBER && i + 1 < n && cls[i + 1] == C_LETTER)) {
        j = k == C_LETTER ? i + 1 : i + 2;                      /* [^\r\n\p{L}\p{N}]?+\p{L}++ */
        while (j < n && cls[j] == C_LETTER)
            j++;
        return j;
    }
    if (k == C_NUMBER) {                                        /* \p{N}{1,3}+ */
        j = i + 1;
        while (j < n && j < i + 3 && cls[j] == C_NUMBER)
            j++;
        return j;
    }
    if (k == C_OTHER || (c == ' ' && i + 1 < n && cls[i + 1] == C_OTHER)) {   /* ' '?[^\s\p{L}\p{N}]++[\r\n]*+ */
        j = k == C_OTHER ? i + 1 : i + 2;
        while (j < n && cls[j] == C_OTHER)
            j++;
        while (j < n && (CH(j) == '\r' || CH(j) == '\n'))
            j++;
        return j;
    }
    j = i + 1;                                                  /* white space from here on */
    while (j < n && cls[j] == C_SPACE)
        j++;
    if (j == n)                                                 /* \s++$ */
        return n;
    for (Py_ssize_t m = j - 1; m >= i; m--)                     /* \s*[\r\n] */
        if (CH(m) == '\r' || CH(m) == '\n')
            return m + 1;
    return j - i >= 2 ? j - 1 : i + 1;                          /* \s+(?!\S), else \s */
#undef CH
}

static int utf8_put(unsigned char *out, Py_UCS4 c)
{
    if (c < 0x80) {
        out[0] = (unsigned char)c;
        return 1;
    }
    if (c < 0x800) {
        out[0] = (unsigned char)(0xC0 | (c >> 6));
        out[1] = (unsigned char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        out[0] = (unsigned char)(0xE0 | (c >> 12));
        out[1] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
        out[2] = (unsigned char)(0x80 | (c & 0x3F));
        return 3;
    }
    out[0] = (unsigned char)(0xF0 | (c >> 18));
    out[1] = (unsigned char)(0x80 | ((c >> 12) & 0x3F));
    out[2] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
    out[3] = (unsigned char)(0x80 | (c & 0x3F));
    return 4;
}

/* count_bpe(table, text) -> int: the cl100k tokens of text, or -1 for a text with a character the
 * classes do not know (tiktoken counts those). */
PyObject *ls_count_bpe(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyUnicode_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "count_bpe(table, text: str)");
        return NULL;
    }
    const BpeTable *t = PyCapsule_GetPointer(args[0], CAPSULE);
    if (t == NULL)
        return NULL;
    PyObject *text = args[1];
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    if (n == 0)
        return PyLong_FromLong(0);
    if (n > (Py_ssize_t)(UINT32_MAX / 4))    /* offsets are 32-bit: a text of a billion characters and more */
        return PyLong_FromLong(-1);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    int ascii = PyUnicode_IS_ASCII(text);
    uint8_t *cls = PyMem_Malloc((size_t)n);
    unsigned char *utf8 = NULL;
    uint32_t *off = NULL;                    /* each character's first byte (non-ASCII texts) */
    Py_ssize_t total = -1;
    if (cls == NULL)
        return PyErr_NoMemory();
    if (ascii) {
        const unsigned char *s = PyUnicode_1BYTE_DATA(text);
        for (Py_ssize_t i = 0; i < n; i++)
            cls[i] = ascii_class[s[i]];
    } else {
        utf8 = PyMem_Malloc((size_t)n * 4);
        off = PyMem_Malloc((size_t)(n + 1) * sizeof(uint32_t));
        if (utf8 == NULL || off == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        uint32_t b = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_UCS4 c = PyUnicode_READ(kind, data, i);
            cls[i] = class_of(c);
            if (cls[i] == C_UNKNOWN) {
                total = -2;              /* -1 below */
                goto done;
            }
            off[i] = b;
            b += (uint32_t)utf8_put(utf8 + b, c);
        }
        off[n] = b;
    }
    const unsigned char *bytes = ascii ? PyUnicode_1BYTE_DATA(text) : utf8;
    total = 0;
    for (Py_ssize_t i = 0; i < n;) {
        Py_ssize_t j = piece_end(cls, kind, data, n, i);
        Py_ssize_t a = ascii ? i : off[i], len = (ascii ? j : off[j]) - a;
        if (len == 1 || rank_of(t, bytes + a, len) != NO_RANK)
            total += 1;
        else {
            Py_ssize_t parts = merged_parts(t, bytes + a, len);
            if (parts < 0) {
                total = -1;
                goto done;
            }
            total += parts;
        }
        i = j;
    }
done:
    PyMem_Free(cls);
    PyMem_Free(utf8);
    PyMem_Free(off);
    if (total == -1)
        return NULL;
    return PyLong_FromSsize_t(total == -2 ? -1 : total);
}
