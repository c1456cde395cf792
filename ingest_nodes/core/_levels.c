/* The ingest hot path compiled: the sorted price levels of one book side (``SortedLevels``, the
 * store under ingest_nodes/core/book.py's sides), and the reading of a frame's ``[price, qty]`` rows
 * into level pairs (``levels``, under ingest_nodes/venues/wire.py).
 *
 * Each has a pure-Python twin that stays the reference (``levels.PyLevels``, ``wire.levels``):
 * the same answers, the same journal entries and the same errors, which tests check on the same
 * inputs (tests/ingest_nodes/core/test_levels_native.py).
 *
 * A side keeps its levels in two arrays in one order: the level's rank (the negated sort key, an
 * exact 128-bit integer: price x 10**24, negated for asks) ascending, and the encoded level
 * ``["price","qty"]`` beside it. The best level is therefore last, where a venue's changes
 * cluster: inserting or deleting near the touch moves few entries, and finding a price is a binary
 * search over contiguous integers, not over pointers to Python ints scattered in memory. Indices
 * in the interface count from the best level, as the Python store's do.
 *
 * What venues send, exact str prices and quantities that are plain ASCII decimals with at most 14
 * digits before the point and 24 after it, is read here. Anything else goes to the ``slow``
 * callable the store was made with (``levels.slow_level``): it reads the level as the reference
 * does, refuses it with the venue error, or gives back its sort key and encoding.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define SCALE 24
#define MAX_WHOLE 14 /* digits before the point read here: every key then stays below 10**38 */
#define REPLACE 0
#define INSERT 1
#define DELETE 2

typedef __int128 rank_t;
typedef unsigned __int128 urank_t;

static urank_t powers[SCALE + 1]; /* 10**k */
static PyObject *kinds[DELETE + 1];
static PyObject *empty_bytes;
static PyObject *low_mask; /* 2**64 - 1 */
static PyObject *sixty_four;

/* -- ranks and Python ints ------------------------------------------------------------------- */

static PyObject *
int_of(rank_t value)
{
    if (value >= INT64_MIN && value <= INT64_MAX) {
        return PyLong_FromLongLong((long long)value);
    }
    PyObject *high = PyLong_FromLongLong((long long)(value >> 64));
    PyObject *low = PyLong_FromUnsignedLongLong((unsigned long long)(urank_t)value);
    PyObject *shifted = high && low ? PyNumber_Lshift(high, sixty_four) : NULL;
    PyObject *joined = shifted ? PyNumber_Or(shifted, low) : NULL;
    Py_XDECREF(high);
    Py_XDECREF(low);
    Py_XDECREF(shifted);
    return joined;
}

/* ``number`` as a rank; -1 with an error set when it is not an int that fits in 128 bits. */
static int
rank_of(PyObject *number, rank_t *out)
{
    int overflow;
    long long small = PyLong_AsLongLongAndOverflow(number, &overflow);
    if (small == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (!overflow) {
        *out = small;
        return 0;
    }
    PyObject *high = PyNumber_Rshift(number, sixty_four);
    PyObject *low = high ? PyNumber_And(number, low_mask) : NULL;
    long long h = high ? PyLong_AsLongLong(high) : -1;
    unsigned long long l = low ? PyLong_AsUnsignedLongLong(low) : 0;
    Py_XDECREF(high);
    Py_XDECREF(low);
    if (PyErr_Occurred()) {
        return -1;
    }
    *out = (rank_t)(((urank_t)(uint64_t)h << 64) | l);
    return 0;
}

/* -- reading a plain level ------------------------------------------------------------------- */

static const char *
ascii_of(PyObject *text, Py_ssize_t *size)
{
    if (!PyUnicode_CheckExact(text) || !PyUnicode_IS_ASCII(text)) {
        return NULL;
    }
    *size = PyUnicode_GET_LENGTH(text);
    return (const char *)PyUnicode_DATA(text);
}

/* Whether ``s`` is digits with at most one point among them, at least one digit; ``nonzero``:
 * whether a digit other than 0 is among them. */
static int
plain_quantity(const char *s, Py_ssize_t n, int *nonzero)
{
    int point = 0, digits = 0, any = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        char c = s[i];
        if (c >= '0' && c <= '9') {
            digits = 1;
            any |= c != '0';
        }
        else if (c == '.' && !point) {
            point = 1;
        }
        else {
            return 0;
        }
    }
    *nonzero = any;
    return digits;
}

/* The price x 10**24 of a plain price with at most MAX_WHOLE digits before the point and SCALE
 * after it; 0 when ``s`` is not such a price. */
static int
plain_price(const char *s, Py_ssize_t n, urank_t *scaled)
{
    Py_ssize_t point = -1, digits = 0;
    urank_t value = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        char c = s[i];
        if (c >= '0' && c <= '9') {
            value = value * 10 + (urank_t)(c - '0');
            digits++;
        }
        else if (c == '.' && point < 0) {
            point = i;
        }
        else {
            return 0;
        }
    }
    Py_ssize_t places = point < 0 ? 0 : n - point - 1;
    Py_ssize_t whole = point < 0 ? n : point;
    if (digits == 0 || whole > MAX_WHOLE || places > SCALE) {
        return 0;
    }
    *scaled = value * powers[SCALE - places];
    return 1;
}

/* -- the store ------------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    Py_ssize_t size, capacity;
    rank_t *ranks;     /* ascending: the best level last */
    PyObject **levels; /* the encoded level of each rank (owned references) */
    PyObject *slow;    /* slow(level, negate) -> (sort key, encoded level or None) */
} SortedLevels;

static int
reserve(SortedLevels *self, Py_ssize_t size)
{
    if (size <= self->capacity) {
        return 0;
    }
    Py_ssize_t capacity = self->capacity ? self->capacity : 16;
    while (capacity < size) {
        capacity *= 2;
    }
    rank_t *ranks = PyMem_Realloc(self->ranks, (size_t)capacity * sizeof(rank_t));
    if (ranks == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    self->ranks = ranks;
    PyObject **levels = PyMem_Realloc(self->levels, (size_t)capacity * sizeof(PyObject *));
    if (levels == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    self->levels = levels;
    self->capacity = capacity;
    return 0;
}

/* The first position whose rank is at least ``rank``. */
static Py_ssize_t
lower_bound(const SortedLevels *self, rank_t rank)
{
    Py_ssize_t lo = 0, hi = self->size;
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (self->ranks[mid] < rank) {
            lo = mid + 1;
        }
        else {
            hi = mid;
        }
    }
    return lo;
}

static void
drop_from(SortedLevels *self, Py_ssize_t count)
{
    /* the ``count`` lowest-ranked (worst) levels go */
    if (count <= 0) {
        return;
    }
    for (Py_ssize_t p = 0; p < count; p++) {
        Py_DECREF(self->levels[p]);
    }
    memmove(self->ranks, self->ranks + count, (size_t)(self->size - count) * sizeof(rank_t));
    memmove(self->levels, self->levels + count, (size_t)(self->size - count) * sizeof(PyObject *));
    self->size -= count;
}

static void
clear_levels(SortedLevels *self)
{
    drop_from(self, self->size);
}

static int
record(PyObject *journal, int kind, Py_ssize_t index, PyObject *level)
{
    PyObject *at = PyLong_FromSsize_t(index);
    if (at == NULL) {
        return -1;
    }
    PyObject *change = PyTuple_Pack(3, kinds[kind], at, level);
    Py_DECREF(at);
    if (change == NULL) {
        return -1;
    }
    int failed = PyList_Append(journal, change);
    Py_DECREF(change);
    return failed;
}

/* Set the level of ``rank`` to ``encoded`` (NULL: delete it), journaling changes among the first
 * ``cap`` levels; ``encoded`` is borrowed. */
static int
change_level(SortedLevels *self, rank_t rank, PyObject *encoded, PyObject *journal, Py_ssize_t cap)
{
    Py_ssize_t p = lower_bound(self, rank);
    int held = p < self->size && self->ranks[p] == rank;
    Py_ssize_t index = self->size - p - (held ? 1 : 0); /* counted from the best */
    int journaled = journal != Py_None && index < cap;
    if (encoded == NULL) {
        if (!held) {
            return 0;
        }
        Py_DECREF(self->levels[p]);
        memmove(self->ranks + p, self->ranks + p + 1, (size_t)(self->size - p - 1) * sizeof(rank_t));
        memmove(self->levels + p, self->levels + p + 1, (size_t)(self->size - p - 1) * sizeof(PyObject *));
        self->size--;
        return journaled ? record(journal, DELETE, index, empty_bytes) : 0;
    }
    if (held) {
        PyObject *old = self->levels[p];
        if (PyBytes_GET_SIZE(old) == PyBytes_GET_SIZE(encoded)
            && memcmp(PyBytes_AS_STRING(old), PyBytes_AS_STRING(encoded), (size_t)PyBytes_GET_SIZE(old)) == 0) {
            return 0; /* venues repeat levels as they are: nothing changed */
        }
        Py_INCREF(encoded);
        self->levels[p] = encoded;
        Py_DECREF(old);
        return journaled ? record(journal, REPLACE, index, encoded) : 0;
    }
    if (reserve(self, self->size + 1) < 0) {
        return -1;
    }
    memmove(self->ranks + p + 1, self->ranks + p, (size_t)(self->size - p) * sizeof(rank_t));
    memmove(self->levels + p + 1, self->levels + p, (size_t)(self->size - p) * sizeof(PyObject *));
    self->ranks[p] = rank;
    Py_INCREF(encoded);
    self->levels[p] = encoded;
    self->size++;
    return journaled ? record(journal, INSERT, index, encoded) : 0;
}

/* Read one level: its rank, and its encoding (a new reference) or NULL for a zero quantity.
 * -1 with an error set when the slow path refused it. */
static int
read_level(SortedLevels *self, PyObject *level, int negate, rank_t *rank, PyObject **encoded)
{
    if ((PyTuple_CheckExact(level) || PyList_CheckExact(level)) && PySequence_Fast_GET_SIZE(level) == 2) {
        Py_ssize_t price_size, quantity_size;
        const char *price = ascii_of(PySequence_Fast_GET_ITEM(level, 0), &price_size);
        const char *quantity = ascii_of(PySequence_Fast_GET_ITEM(level, 1), &quantity_size);
        urank_t scaled;
        int nonzero;
        if (price != NULL && quantity != NULL && plain_price(price, price_size, &scaled)
            && plain_quantity(quantity, quantity_size, &nonzero)) {
            *rank = negate ? (rank_t)scaled : -(rank_t)scaled;
            *encoded = NULL;
            if (nonzero) {
                *encoded = PyBytes_FromStringAndSize(NULL, price_size + quantity_size + 7);
                if (*encoded == NULL) {
                    return -1;
                }
                char *out = PyBytes_AS_STRING(*encoded);
                memcpy(out, "[\"", 2);
                memcpy(out + 2, price, (size_t)price_size);
                memcpy(out + 2 + price_size, "\",\"", 3);
                memcpy(out + 5 + price_size, quantity, (size_t)quantity_size);
                memcpy(out + 5 + price_size + quantity_size, "\"]", 2);
            }
            return 0;
        }
    }
    PyObject *read = PyObject_CallFunctionObjArgs(self->slow, level, negate ? Py_True : Py_False, NULL);
    if (read == NULL) {
        return -1;
    }
    if (!PyTuple_CheckExact(read) || PyTuple_GET_SIZE(read) != 2
        || !(PyTuple_GET_ITEM(read, 1) == Py_None || PyBytes_CheckExact(PyTuple_GET_ITEM(read, 1)))) {
        Py_DECREF(read);
        PyErr_SetString(PyExc_TypeError, "slow(level, negate) must return (int, bytes | None)");
        return -1;
    }
    rank_t key;
    if (rank_of(PyTuple_GET_ITEM(read, 0), &key) < 0) {
        Py_DECREF(read);
        return -1;
    }
    *rank = -key;
    *encoded = PyTuple_GET_ITEM(read, 1) == Py_None ? NULL : Py_NewRef(PyTuple_GET_ITEM(read, 1));
    Py_DECREF(read);
    return 0;
}

static int
SortedLevels_init(SortedLevels *self, PyObject *args, PyObject *kwargs)
{
    PyObject *slow;
    if (!PyArg_ParseTuple(args, "O:SortedLevels", &slow)) {
        return -1;
    }
    if (!PyCallable_Check(slow)) {
        PyErr_SetString(PyExc_TypeError, "SortedLevels(slow): slow must be callable");
        return -1;
    }
    Py_XSETREF(self->slow, Py_NewRef(slow));
    clear_levels(self);
    return 0;
}

static void
SortedLevels_dealloc(SortedLevels *self)
{
    clear_levels(self);
    PyMem_Free(self->ranks);
    PyMem_Free(self->levels);
    Py_XDECREF(self->slow);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static Py_ssize_t
SortedLevels_len(SortedLevels *self)
{
    return self->size;
}

static PyObject *
SortedLevels_apply(SortedLevels *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "apply(levels, negate, journal, cap)");
        return NULL;
    }
    int negate = PyObject_IsTrue(args[1]);
    PyObject *journal = args[2];
    Py_ssize_t cap = PyLong_AsSsize_t(args[3]);
    if (negate < 0 || (cap == -1 && PyErr_Occurred())) {
        return NULL;
    }
    if (!(journal == Py_None || PyList_CheckExact(journal))) {
        PyErr_SetString(PyExc_TypeError, "apply: journal must be a list or None");
        return NULL;
    }
    PyObject *levels = PySequence_Fast(args[0], "apply: levels must be iterable");
    if (levels == NULL) {
        return NULL;
    }
    for (Py_ssize_t n = 0; n < PySequence_Fast_GET_SIZE(levels); n++) {
        rank_t rank;
        PyObject *encoded, *level = Py_NewRef(PySequence_Fast_GET_ITEM(levels, n));
        int unread = read_level(self, level, negate, &rank, &encoded);
        Py_DECREF(level);
        if (unread < 0) {
            Py_DECREF(levels);
            return NULL;
        }
        int failed = change_level(self, rank, encoded, journal, cap);
        Py_XDECREF(encoded);
        if (failed) {
            Py_DECREF(levels);
            return NULL;
        }
    }
    Py_DECREF(levels);
    Py_RETURN_NONE;
}

typedef struct {
    rank_t rank;
    PyObject *level;
    Py_ssize_t order;
} Loaded;

static void
release_loaded(Loaded *read, Py_ssize_t kept)
{
    for (Py_ssize_t k = 0; k < kept; k++) {
        Py_DECREF(read[k].level);
    }
    PyMem_Free(read);
}

static int
compare_loaded(const void *a, const void *b)
{
    const Loaded *x = a, *y = b;
    if (x->rank != y->rank) {
        return x->rank < y->rank ? -1 : 1;
    }
    return x->order < y->order ? -1 : (x->order > y->order ? 1 : 0);
}

static PyObject *
SortedLevels_load(SortedLevels *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "load(levels, negate)");
        return NULL;
    }
    int negate = PyObject_IsTrue(args[1]);
    if (negate < 0) {
        return NULL;
    }
    PyObject *levels = PySequence_Fast(args[0], "load: levels must be iterable");
    if (levels == NULL) {
        return NULL;
    }
    Py_ssize_t count = PySequence_Fast_GET_SIZE(levels), kept = 0;
    Loaded *read = PyMem_Malloc((size_t)(count ? count : 1) * sizeof(Loaded));
    if (read == NULL) {
        Py_DECREF(levels);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t n = 0; n < count && n < PySequence_Fast_GET_SIZE(levels); n++) {
        PyObject *level = Py_NewRef(PySequence_Fast_GET_ITEM(levels, n));
        int unread = read_level(self, level, negate, &read[kept].rank, &read[kept].level);
        Py_DECREF(level);
        if (unread < 0) {
            release_loaded(read, kept);
            Py_DECREF(levels);
            return NULL;
        }
        if (read[kept].level != NULL) { /* a zero quantity in a snapshot: no level */
            read[kept].order = n;
            kept++;
        }
    }
    Py_DECREF(levels);
    qsort(read, (size_t)kept, sizeof(Loaded), compare_loaded);
    clear_levels(self);
    if (reserve(self, kept) < 0) {
        release_loaded(read, kept);
        return NULL;
    }
    for (Py_ssize_t k = 0; k < kept; k++) {
        if (k + 1 < kept && read[k + 1].rank == read[k].rank) {
            Py_DECREF(read[k].level); /* a price written twice: the later one stands */
            continue;
        }
        self->ranks[self->size] = read[k].rank;
        self->levels[self->size] = read[k].level;
        self->size++;
    }
    PyMem_Free(read);
    Py_RETURN_NONE;
}

static int
index_arg(PyObject *arg, Py_ssize_t *out)
{
    *out = PyLong_AsSsize_t(arg);
    return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

/* The levels from ``start`` to ``stop`` counted from the best, clipped to what there is. */
static PyObject *
slice(SortedLevels *self, Py_ssize_t start, Py_ssize_t stop)
{
    start = start < 0 ? 0 : start;
    stop = stop > self->size ? self->size : stop;
    PyObject *found = PyList_New(stop > start ? stop - start : 0);
    if (found == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = start; i < stop; i++) {
        PyList_SET_ITEM(found, i - start, Py_NewRef(self->levels[self->size - 1 - i]));
    }
    return found;
}

static PyObject *
SortedLevels_first(SortedLevels *self, PyObject *arg)
{
    Py_ssize_t n;
    return index_arg(arg, &n) < 0 ? NULL : slice(self, 0, n);
}

static PyObject *
SortedLevels_between(SortedLevels *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t start, stop;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "between(start, stop)");
        return NULL;
    }
    if (index_arg(args[0], &start) < 0 || index_arg(args[1], &stop) < 0) {
        return NULL;
    }
    return slice(self, start, stop);
}

static PyObject *
SortedLevels_count_through(SortedLevels *self, PyObject *arg)
{
    rank_t key;
    if (rank_of(arg, &key) < 0) {
        return NULL;
    }
    return PyLong_FromSsize_t(self->size - lower_bound(self, -key));
}

static PyObject *
SortedLevels_sort_key(SortedLevels *self, PyObject *arg)
{
    Py_ssize_t i;
    if (index_arg(arg, &i) < 0) {
        return NULL;
    }
    if (i < 0 || i >= self->size) {
        PyErr_SetString(PyExc_IndexError, "sort_key: no level there");
        return NULL;
    }
    return int_of(-self->ranks[self->size - 1 - i]);
}

static PyObject *
SortedLevels_sort_keys(SortedLevels *self, PyObject *unused)
{
    PyObject *found = PyList_New(self->size);
    if (found == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < self->size; i++) {
        PyObject *key = int_of(-self->ranks[self->size - 1 - i]);
        if (key == NULL) {
            Py_DECREF(found);
            return NULL;
        }
        PyList_SET_ITEM(found, i, key);
    }
    return found;
}

static PyObject *
SortedLevels_truncate(SortedLevels *self, PyObject *arg)
{
    Py_ssize_t depth;
    if (index_arg(arg, &depth) < 0) {
        return NULL;
    }
    if (depth < 0) {
        depth = 0;
    }
    if (self->size > depth) {
        drop_from(self, self->size - depth);
    }
    Py_RETURN_NONE;
}

static PyMethodDef SortedLevels_methods[] = {
    {"apply", (PyCFunction)(void (*)(void))SortedLevels_apply, METH_FASTCALL,
     "apply(levels, negate, journal, cap): set or delete each level, journaling changes among the "
     "first cap (journal None: none)."},
    {"load", (PyCFunction)(void (*)(void))SortedLevels_load, METH_FASTCALL,
     "load(levels, negate): replace every level (zero quantities skipped, a repeated price's last "
     "level kept)."},
    {"first", (PyCFunction)SortedLevels_first, METH_O, "first(n): the best n encoded levels."},
    {"between", (PyCFunction)(void (*)(void))SortedLevels_between, METH_FASTCALL,
     "between(start, stop): encoded levels start to stop (exclusive), best first."},
    {"count_through", (PyCFunction)SortedLevels_count_through, METH_O,
     "count_through(key): how many levels sort at or before the sort key."},
    {"sort_key", (PyCFunction)SortedLevels_sort_key, METH_O, "sort_key(i): the i-th best level's sort key."},
    {"sort_keys", (PyCFunction)SortedLevels_sort_keys, METH_NOARGS, "sort_keys(): every sort key, best first."},
    {"truncate", (PyCFunction)SortedLevels_truncate, METH_O, "truncate(depth): keep the best depth levels."},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods SortedLevels_sequence = {
    .sq_length = (lenfunc)SortedLevels_len,
};

static PyTypeObject SortedLevelsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ingest_nodes.core._levels.SortedLevels",
    .tp_doc = "SortedLevels(slow): one book side's levels, best first (see _levels.c).",
    .tp_basicsize = sizeof(SortedLevels),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)SortedLevels_init,
    .tp_dealloc = (destructor)SortedLevels_dealloc,
    .tp_methods = SortedLevels_methods,
    .tp_as_sequence = &SortedLevels_sequence,
};

/* -- reading rows ------------------------------------------------------------------------------ */

PyDoc_STRVAR(levels_doc,
"levels(rows) -> tuple[tuple[str, str], ...] | None\n\n"
"``[[price, qty, ...], ...]`` as a tuple of string pairs, as ``wire.levels`` reads it, or None\n"
"when ``rows`` is not a list of lists each starting with two exact str (``wire.levels`` then\n"
"says what is wrong).");

static PyObject *
levels(PyObject *module, PyObject *rows)
{
    if (!PyList_CheckExact(rows)) {
        Py_RETURN_NONE;
    }
    Py_ssize_t count = PyList_GET_SIZE(rows);
    PyObject *found = PyTuple_New(count);
    if (found == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *row = PyList_GET_ITEM(rows, i);
        if (!PyList_CheckExact(row) || PyList_GET_SIZE(row) < 2
            || !PyUnicode_CheckExact(PyList_GET_ITEM(row, 0))
            || !PyUnicode_CheckExact(PyList_GET_ITEM(row, 1))) {
            Py_DECREF(found);
            Py_RETURN_NONE;
        }
        PyObject *pair = PyTuple_Pack(2, PyList_GET_ITEM(row, 0), PyList_GET_ITEM(row, 1));
        if (pair == NULL) {
            Py_DECREF(found);
            return NULL;
        }
        PyTuple_SET_ITEM(found, i, pair);
    }
    return found;
}

static PyMethodDef methods[] = {
    {"levels", levels, METH_O, levels_doc},
    {NULL, NULL, 0, NULL},
};

static int
exec_module(PyObject *module)
{
    powers[0] = 1;
    for (int k = 1; k <= SCALE; k++) {
        powers[k] = powers[k - 1] * 10;
    }
    for (int kind = REPLACE; kind <= DELETE; kind++) {
        if ((kinds[kind] = PyLong_FromLong(kind)) == NULL) {
            return -1;
        }
    }
    if ((empty_bytes = PyBytes_FromStringAndSize("", 0)) == NULL
        || (low_mask = PyLong_FromUnsignedLongLong(UINT64_MAX)) == NULL
        || (sixty_four = PyLong_FromLong(64)) == NULL) {
        return -1;
    }
    if (PyType_Ready(&SortedLevelsType) < 0) {
        return -1;
    }
    Py_INCREF(&SortedLevelsType);
    if (PyModule_AddObject(module, "SortedLevels", (PyObject *)&SortedLevelsType) < 0) {
        Py_DECREF(&SortedLevelsType);
        return -1;
    }
    return PyModule_AddIntConstant(module, "MAX_WHOLE", MAX_WHOLE);
}

static PyModuleDef_Slot slots[] = {
    {Py_mod_exec, exec_module},
    {0, NULL},
};

static struct PyModuleDef definition = {
    PyModuleDef_HEAD_INIT,
    .m_name = "ingest_nodes.core._levels",
    .m_doc = "The ingest hot path compiled: one book side's sorted levels, and a frame's level rows.",
    .m_size = 0,
    .m_methods = methods,
    .m_slots = slots,
};

PyMODINIT_FUNC
PyInit__levels(void)
{
    return PyModuleDef_Init(&definition);
}
