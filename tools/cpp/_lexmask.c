/* Comment and literal masking for tools.cpp.source, in one C pass over the text.
 *
 * The same language as source.py's _LEXEME regex and its re.sub: scanning left to right, at each
 * position try `//...` (to the newline), a block comment (to the first star-slash, or to the end
 * when unclosed), a raw string R"d(...)d" (delimiter up to 16 characters), a "string" (no bare
 * newline) and a 'c' literal of 1 to 8 characters; a match is blanked to spaces with its newlines
 * kept and scanning resumes after it, otherwise it moves on by one character. The regex costs a
 * character-class test and a Python callback per lexeme; this is about ten times faster, which
 * matters because every scanned C++ file is masked.
 *
 * Built at install time as an optional extension (setup.py); without a C compiler source.py keeps
 * the regex, with identical output (tests/tools/cpp/test_source_mask.py holds both to that).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define MAX_DELIM 16
#define MAX_CHAR_ITEMS 8

#if defined(__GNUC__)
#define INLINE static inline __attribute__((always_inline))
#else
#define INLINE static inline
#endif

/* `kind` (the str's bytes per character) is a constant in each caller of scan_lexemes below, so the
 * compiler specialises every helper per width and `at` is a plain array read. */
typedef struct {
    int kind;
    const void *data;
    Py_ssize_t n;
} Text;

INLINE Py_UCS4 at(const Text *t, Py_ssize_t i) { return PyUnicode_READ(t->kind, t->data, i); }

INLINE Py_ssize_t find_char(const Text *t, Py_UCS4 ch, Py_ssize_t from) {
    if (from >= t->n) return -1;
    if (t->kind == PyUnicode_1BYTE_KIND) {
        const char *base = (const char *)t->data;
        const char *hit = memchr(base + from, (int)ch, (size_t)(t->n - from));
        return hit ? hit - base : -1;
    }
    for (Py_ssize_t i = from; i < t->n; i++)
        if (at(t, i) == ch) return i;
    return -1;
}

/* End of `//` at i: the newline (not blanked) or the end of the text. */
INLINE Py_ssize_t line_comment_end(const Text *t, Py_ssize_t i) {
    Py_ssize_t nl = find_char(t, '\n', i + 2);
    return nl < 0 ? t->n : nl;
}

/* End of a block comment opened at i: after the first star-slash from i + 2, else the end. */
INLINE Py_ssize_t block_comment_end(const Text *t, Py_ssize_t i) {
    Py_ssize_t j = i + 2;
    while ((j = find_char(t, '*', j)) >= 0) {
        if (j + 1 < t->n && at(t, j + 1) == '/') return j + 2;
        j++;
    }
    return t->n;
}

INLINE int delimiter_char(Py_UCS4 c) {
    return c != '(' && c != ')' && c != '\\' && c != '"' && !Py_UNICODE_ISSPACE(c);
}

/* End of the raw string R"d( ... )d" whose R is at i, or -1 when there is none. */
INLINE Py_ssize_t raw_string_end(const Text *t, Py_ssize_t i) {
    Py_ssize_t open = i + 2;
    while (open < t->n && open - (i + 2) < MAX_DELIM && delimiter_char(at(t, open))) open++;
    if (open >= t->n || at(t, open) != '(') return -1;
    Py_ssize_t d = open - (i + 2);
    for (Py_ssize_t k = find_char(t, ')', open + 1); k >= 0; k = find_char(t, ')', k + 1)) {
        if (k + d + 1 >= t->n) return -1;
        Py_ssize_t m = 0;
        while (m < d && at(t, k + 1 + m) == at(t, i + 2 + m)) m++;
        if (m == d && at(t, k + 1 + d) == '"') return k + d + 2;
    }
    return -1;
}

/* End of the "string" opened at i, or -1: a bare newline or the end of the text first. */
INLINE Py_ssize_t string_end(const Text *t, Py_ssize_t i) {
    for (Py_ssize_t j = i + 1; j < t->n; j++) {
        Py_UCS4 c = at(t, j);
        if (c == '"') return j + 1;
        if (c == '\n') return -1;
        if (c == '\\') {
            if (j + 1 >= t->n || at(t, j + 1) == '\n') return -1;
            j++;
        }
    }
    return -1;
}

/* End of the 'c' literal opened at i (1 to 8 characters or escapes), or -1. */
INLINE Py_ssize_t char_end(const Text *t, Py_ssize_t i) {
    Py_ssize_t j = i + 1;
    int items = 0;
    while (items < MAX_CHAR_ITEMS && j < t->n) {
        Py_UCS4 c = at(t, j);
        if (c == '\'' || c == '\n') break;
        if (c == '\\') {
            if (j + 1 >= t->n || at(t, j + 1) == '\n') break;
            j += 2;
        } else {
            j++;
        }
        items++;
    }
    return (items > 0 && j < t->n && at(t, j) == '\'') ? j + 1 : -1;
}

INLINE Py_ssize_t lexeme_end(const Text *t, Py_ssize_t i) {
    Py_UCS4 c = at(t, i);
    Py_UCS4 next = i + 1 < t->n ? at(t, i + 1) : 0;
    if (c == '/' && next == '/') return line_comment_end(t, i);
    if (c == '/' && next == '*') return block_comment_end(t, i);
    if (c == 'R' && next == '"') return raw_string_end(t, i);
    if (c == '"') return string_end(t, i);
    if (c == '\'') return char_end(t, i);
    return -1;
}

/* Blank every lexeme of `t` in `dst` (a copy of it, made on the first lexeme: *out stays NULL for a
 * text without one). Returns -1 when the copy cannot be allocated. */
INLINE int scan_lexemes(const Text *t, PyObject *src, PyObject **out) {
    void *dst = NULL;
    for (Py_ssize_t i = 0; i < t->n;) {
        Py_UCS4 c = at(t, i);
        Py_ssize_t end = (c == '/' || c == 'R' || c == '"' || c == '\'') ? lexeme_end(t, i) : -1;
        if (end < 0) {
            i++;
            continue;
        }
        if (*out == NULL) {
            *out = PyUnicode_New(t->n, PyUnicode_MAX_CHAR_VALUE(src));
            if (*out == NULL) return -1;
            dst = PyUnicode_DATA(*out);
            memcpy(dst, t->data, (size_t)t->n * (size_t)t->kind);
        }
        for (; i < end; i++)
            if (at(t, i) != '\n') PyUnicode_WRITE(t->kind, dst, i, ' ');
    }
    return 0;
}

static int scan_ucs1(const Text *t, PyObject *src, PyObject **out) {
    Text fixed = {PyUnicode_1BYTE_KIND, t->data, t->n};
    return scan_lexemes(&fixed, src, out);
}

static int scan_ucs2(const Text *t, PyObject *src, PyObject **out) {
    Text fixed = {PyUnicode_2BYTE_KIND, t->data, t->n};
    return scan_lexemes(&fixed, src, out);
}

static int scan_ucs4(const Text *t, PyObject *src, PyObject **out) {
    Text fixed = {PyUnicode_4BYTE_KIND, t->data, t->n};
    return scan_lexemes(&fixed, src, out);
}

static PyObject *mask(PyObject *self, PyObject *arg) {
    if (!PyUnicode_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "mask() takes a str");
        return NULL;
    }
    Text t = {PyUnicode_KIND(arg), PyUnicode_DATA(arg), PyUnicode_GET_LENGTH(arg)};
    PyObject *out = NULL;
    int failed = t.kind == PyUnicode_1BYTE_KIND   ? scan_ucs1(&t, arg, &out)
                 : t.kind == PyUnicode_2BYTE_KIND ? scan_ucs2(&t, arg, &out)
                                                  : scan_ucs4(&t, arg, &out);
    if (failed) return NULL;
    if (out == NULL) {  /* nothing to blank */
        Py_INCREF(arg);
        return arg;
    }
    if (PyUnicode_MAX_CHAR_VALUE(arg) > 127) {
        /* Blanking may have removed every wide character: rebuild so the str has its narrowest
         * form, as Python requires of every str (equality compares forms first). */
        PyObject *narrow = PyUnicode_FromKindAndData(t.kind, PyUnicode_DATA(out), t.n);
        Py_DECREF(out);
        return narrow;
    }
    return out;
}

static PyMethodDef methods[] = {
    {"mask", mask, METH_O, "The text with comments and literals blanked to spaces, newlines kept."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_lexmask", "Comment and literal masking in C (see tools.cpp.source).", -1,
    methods,
};

PyMODINIT_FUNC PyInit__lexmask(void) { return PyModule_Create(&module); }
