/* The ingest hot path's two level loops, compiled: reading a frame's ``[price, qty]`` rows into
 * level pairs (ingest_nodes/venues/wire.py: ``levels``), and applying level pairs to one side of a
 * book (ingest_nodes/core/book.py: ``_Side.apply``).
 *
 * Each is the fast path of a pure-Python loop that stays the reference: it handles what venues
 * send (exact ``str`` prices and quantities that are plain ASCII decimals) and hands anything
 * else back to the Python loop, which reads it or refuses it with the venue error it always has.
 * So this file decides nothing the Python code does not decide the same way; tests run both loops
 * on the same inputs and compare every dict entry, key and journal entry (tests/ingest/
 * test_levels_native.py).
 *
 * A price key is price x 10**24 as a Python int, exactly as ``book.price_key`` computes it: the
 * digits (at most 19 of them here, so they fit in 64 bits; longer ones go to Python) times a
 * power of ten, negated for bids. The level's value is its JSON array, ``["price","qty"]``.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define SCALE 24
#define MAX_FAST_DIGITS 19 /* 10**19 - 1 < 2**64 */
#define REPLACE 0
#define INSERT 1
#define DELETE 2

static PyObject *powers[SCALE + 1];          /* 10**k */
static PyObject *negated_powers[SCALE + 1];  /* -10**k: a bid's key in one multiplication */
static PyObject *kinds[DELETE + 1];          /* the journal's change kinds as ints */
static PyObject *empty_bytes;

/* The ASCII text of ``text`` if it is an exact str of ASCII characters, else NULL (no error). */
static const char *
ascii_of(PyObject *text, Py_ssize_t *size)
{
    if (!PyUnicode_CheckExact(text) || !PyUnicode_IS_ASCII(text)) {
        return NULL;
    }
    *size = PyUnicode_GET_LENGTH(text);
    return (const char *)PyUnicode_DATA(text);
}

/* Whether ``s`` is a plain decimal: digits with at most one point among them, at least one digit.
 * ``digits`` gets how many digits it has, ``places`` how many follow the point, ``value`` the
 * digits as a number when there are at most MAX_FAST_DIGITS of them, and ``nonzero`` whether any
 * digit is not 0. */
static int
read_plain(const char *s, Py_ssize_t n, Py_ssize_t *digits, Py_ssize_t *places, uint64_t *value,
           int *nonzero)
{
    Py_ssize_t point = -1, count = 0;
    uint64_t number = 0;
    int any = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        char c = s[i];
        if (c >= '0' && c <= '9') {
            if (count < MAX_FAST_DIGITS) {
                number = number * 10 + (uint64_t)(c - '0');
            }
            any |= c != '0';
            count++;
        }
        else if (c == '.' && point < 0) {
            point = i;
        }
        else {
            return 0;
        }
    }
    if (count == 0) {
        return 0;
    }
    *digits = count;
    *places = point < 0 ? 0 : n - point - 1;
    *value = number;
    *nonzero = any;
    return 1;
}

/* ``bisect.bisect_left(keys, key)``. */
static Py_ssize_t
bisect_left(PyObject *keys, PyObject *key)
{
    Py_ssize_t lo = 0, hi = PyList_GET_SIZE(keys);
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        int less = PyObject_RichCompareBool(PyList_GET_ITEM(keys, mid), key, Py_LT);
        if (less < 0) {
            return -1;
        }
        if (less) {
            lo = mid + 1;
        }
        else {
            hi = mid;
        }
    }
    return lo;
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

/* The side's change for one plain level; 0 when done, -1 on an error (set). */
static int
apply_level(PyObject *book, PyObject *keys, PyObject *journal, Py_ssize_t cap, PyObject *key,
            int nonzero, const char *price, Py_ssize_t price_size, const char *quantity,
            Py_ssize_t quantity_size)
{
    Py_ssize_t i;
    if (!nonzero) {
        PyObject *held = PyDict_GetItemWithError(book, key);
        if (held == NULL) {
            return PyErr_Occurred() ? -1 : 0;
        }
        if (PyDict_DelItem(book, key) < 0 || (i = bisect_left(keys, key)) < 0
            || PyList_SetSlice(keys, i, i + 1, NULL) < 0) {
            return -1;
        }
        return journal != Py_None && i < cap ? record(journal, DELETE, i, empty_bytes) : 0;
    }
    PyObject *encoded = PyBytes_FromStringAndSize(NULL, price_size + quantity_size + 7);
    if (encoded == NULL) {
        return -1;
    }
    char *out = PyBytes_AS_STRING(encoded);
    memcpy(out, "[\"", 2);
    memcpy(out + 2, price, (size_t)price_size);
    memcpy(out + 2 + price_size, "\",\"", 3);
    memcpy(out + 5 + price_size, quantity, (size_t)quantity_size);
    memcpy(out + 5 + price_size + quantity_size, "\"]", 2);
    int failed = -1;
    PyObject *held = PyDict_GetItemWithError(book, key);
    if (held != NULL) {
        if (PyBytes_CheckExact(held) && PyBytes_GET_SIZE(held) == PyBytes_GET_SIZE(encoded)
            && memcmp(PyBytes_AS_STRING(held), out, (size_t)PyBytes_GET_SIZE(encoded)) == 0) {
            failed = 0; /* venues repeat levels as they are: nothing changed */
            goto done;
        }
        if (PyDict_SetItem(book, key, encoded) < 0) {
            goto done;
        }
        if (journal != Py_None) {
            Py_ssize_t size = PyList_GET_SIZE(keys);
            int near = size <= cap;
            if (!near) {
                near = PyObject_RichCompareBool(key, PyList_GET_ITEM(keys, cap - 1), Py_LE);
                if (near < 0) {
                    goto done;
                }
            }
            if (near) {
                if ((i = bisect_left(keys, key)) < 0 || record(journal, REPLACE, i, encoded) < 0) {
                    goto done;
                }
            }
        }
        failed = 0;
    }
    else if (!PyErr_Occurred()) {
        if ((i = bisect_left(keys, key)) < 0 || PyList_Insert(keys, i, key) < 0
            || PyDict_SetItem(book, key, encoded) < 0) {
            goto done;
        }
        failed = journal != Py_None && i < cap ? record(journal, INSERT, i, encoded) : 0;
    }
done:
    Py_DECREF(encoded);
    return failed;
}

PyDoc_STRVAR(apply_plain_doc,
"apply_plain(levels, start, book, keys, negate, journal, cap) -> int\n\n"
"Apply ``levels[start:]`` to one side of a book as ``_Side.apply`` does, stopping at the first\n"
"level that is not a pair of exact str plain decimals; returns its index (``len(levels)``: all\n"
"applied). ``book`` maps price keys to encoded levels, ``keys`` is its sorted key list, and\n"
"``journal`` (None: closed) records changes among the first ``cap`` levels.");

static PyObject *
apply_plain(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "apply_plain takes 7 arguments");
        return NULL;
    }
    PyObject *levels = args[0], *book = args[2], *keys = args[3], *journal = args[5];
    Py_ssize_t start = PyLong_AsSsize_t(args[1]);
    int negate = PyObject_IsTrue(args[4]);
    Py_ssize_t cap = PyLong_AsSsize_t(args[6]);
    if ((start == -1 || cap == -1 || negate < 0) && PyErr_Occurred()) {
        return NULL;
    }
    if (!(PyTuple_CheckExact(levels) || PyList_CheckExact(levels)) || !PyDict_CheckExact(book)
        || !PyList_CheckExact(keys) || !(journal == Py_None || PyList_CheckExact(journal))) {
        PyErr_SetString(PyExc_TypeError, "apply_plain: levels must be a tuple or list, book a dict, "
                        "keys a list, journal a list or None");
        return NULL;
    }
    if (journal != Py_None && cap < 1) {
        PyErr_SetString(PyExc_ValueError, "apply_plain: a journal's cap is at least 1");
        return NULL;
    }
    PyObject **items = PySequence_Fast_ITEMS(levels);
    Py_ssize_t count = PySequence_Fast_GET_SIZE(levels);
    Py_ssize_t n = start < 0 ? 0 : start;
    for (; n < count; n++) {
        PyObject *level = items[n];
        if (!(PyTuple_CheckExact(level) || PyList_CheckExact(level))
            || PySequence_Fast_GET_SIZE(level) != 2) {
            break;
        }
        Py_ssize_t price_size, quantity_size, digits, places, quantity_digits, quantity_places;
        uint64_t value, unused;
        int price_nonzero, nonzero;
        const char *price = ascii_of(PySequence_Fast_GET_ITEM(level, 0), &price_size);
        const char *quantity = ascii_of(PySequence_Fast_GET_ITEM(level, 1), &quantity_size);
        if (price == NULL || quantity == NULL
            || !read_plain(price, price_size, &digits, &places, &value, &price_nonzero)
            || digits > MAX_FAST_DIGITS || places > SCALE
            || !read_plain(quantity, quantity_size, &quantity_digits, &quantity_places, &unused,
                           &nonzero)) {
            break;
        }
        PyObject *number = PyLong_FromUnsignedLongLong(value);
        if (number == NULL) {
            return NULL;
        }
        PyObject *key = PyNumber_Multiply(
            number, (negate ? negated_powers : powers)[SCALE - places]);
        Py_DECREF(number);
        if (key == NULL) {
            return NULL;
        }
        int failed = apply_level(book, keys, journal, cap, key, nonzero, price, price_size,
                                 quantity, quantity_size);
        Py_DECREF(key);
        if (failed) {
            return NULL;
        }
    }
    return PyLong_FromSsize_t(n);
}

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
    {"apply_plain", (PyCFunction)(void (*)(void))apply_plain, METH_FASTCALL, apply_plain_doc},
    {"levels", levels, METH_O, levels_doc},
    {NULL, NULL, 0, NULL},
};

static int
exec_module(PyObject *module)
{
    for (int k = 0; k <= SCALE; k++) {
        PyObject *ten = PyLong_FromLong(10), *exponent = PyLong_FromLong(k);
        if (ten == NULL || exponent == NULL) {
            Py_XDECREF(ten);
            Py_XDECREF(exponent);
            return -1;
        }
        powers[k] = PyNumber_Power(ten, exponent, Py_None);
        Py_DECREF(ten);
        Py_DECREF(exponent);
        if (powers[k] == NULL || (negated_powers[k] = PyNumber_Negative(powers[k])) == NULL) {
            return -1;
        }
    }
    for (int kind = REPLACE; kind <= DELETE; kind++) {
        if ((kinds[kind] = PyLong_FromLong(kind)) == NULL) {
            return -1;
        }
    }
    empty_bytes = PyBytes_FromStringAndSize("", 0);
    if (empty_bytes == NULL) {
        return -1;
    }
    return PyModule_AddIntConstant(module, "SCALE", SCALE);
}

static PyModuleDef_Slot slots[] = {
    {Py_mod_exec, exec_module},
    {0, NULL},
};

static struct PyModuleDef definition = {
    PyModuleDef_HEAD_INIT,
    .m_name = "ingest_nodes.core._levels",
    .m_doc = "The ingest hot path's level loops, compiled (see _levels.c).",
    .m_size = 0,
    .m_methods = methods,
    .m_slots = slots,
};

PyMODINIT_FUNC
PyInit__levels(void)
{
    return PyModuleDef_Init(&definition);
}
