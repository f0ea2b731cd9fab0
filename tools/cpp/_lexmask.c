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
 * `words(text, prefixes)` is the scanner's candidate search: every word (a maximal run of characters
 * that are alphanumeric or '_', regex \w) beginning with one of the prefixes, mapped to the offsets
 * where it starts, in one pass. The detectors' own regex passes (five identifier families, four
 * lane-arithmetic operators, warp-size literals) each walked the whole text; they now look up the
 * few words they need. Its Python twin is tools.cpp.source.words_with_regex.
 *
 * On x86-64 (SSE2), 1- and 2-byte texts are searched 16 characters at a time for the few positions
 * where the per-character step can do anything (see scan_lexemes_words_blocks); same results.
 *
 * Built at install time as an optional extension (setup.py); without a C compiler source.py keeps
 * the regexes, with identical output (tests/tools/cpp/test_source_mask.py holds both to that).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#define HAVE_BLOCKS 1 /* x86-64 always has SSE2; elsewhere the per-character loop runs alone */
#endif

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

/* Characters a lexeme can start with: '/', 'R', '"' and the single quote. */
static unsigned char lexeme_head[128];

/* Blank text[i:end] (newlines kept) in *out, a copy of the text made on the first call. Returns -1
 * when the copy cannot be allocated. */
INLINE int blank_span(const Text *t, PyObject *src, PyObject **out, Py_ssize_t i, Py_ssize_t end) {
    if (*out == NULL) {
        *out = PyUnicode_New(t->n, PyUnicode_MAX_CHAR_VALUE(src));
        if (*out == NULL) return -1;
        memcpy(PyUnicode_DATA(*out), t->data, (size_t)t->n * (size_t)t->kind);
    }
    void *dst = PyUnicode_DATA(*out);
    if (t->kind == PyUnicode_1BYTE_KIND) { /* spaces up to each newline, a memset per line */
        const char *src_chars = (const char *)t->data;
        char *dst_chars = (char *)dst;
        while (i < end) {
            const char *nl = memchr(src_chars + i, '\n', (size_t)(end - i));
            Py_ssize_t stop = nl ? nl - src_chars : end;
            memset(dst_chars + i, ' ', (size_t)(stop - i));
            i = stop < end ? stop + 1 : end;
        }
    } else {
        for (; i < end; i++)
            if (at(t, i) != '\n') PyUnicode_WRITE(t->kind, dst, i, ' ');
    }
    return 0;
}

/* Blank every lexeme of `t` (*out stays NULL for a text without one). */
INLINE int scan_lexemes(const Text *t, PyObject *src, PyObject **out) {
    for (Py_ssize_t i = 0; i < t->n;) {
        Py_UCS4 c = at(t, i);
        Py_ssize_t end = (c < 128 && lexeme_head[c]) ? lexeme_end(t, i) : -1;
        if (end < 0) {
            i++;
            continue;
        }
        if (blank_span(t, src, out, i, end) < 0) return -1;
        i = end;
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

/* The masked str from scan_lexemes' copy (NULL: the text itself, nothing was blanked). */
static PyObject *masked_result(PyObject *arg, PyObject *out) {
    if (out == NULL) { /* nothing to blank */
        Py_INCREF(arg);
        return arg;
    }
    if (PyUnicode_MAX_CHAR_VALUE(arg) > 127) {
        /* Blanking may have removed every wide character: rebuild so the str has its narrowest
         * form, as Python requires of every str (equality compares forms first). */
        PyObject *narrow = PyUnicode_FromKindAndData(PyUnicode_KIND(out), PyUnicode_DATA(out), PyUnicode_GET_LENGTH(out));
        Py_DECREF(out);
        return narrow;
    }
    return out;
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
    return masked_result(arg, out);
}

/* Word characters as Python's regex \w and str.isalnum() see them (plus '_'), for code points below
 * 256; above that Py_UNICODE_ISALNUM is asked. */
static unsigned char word_table[256];

INLINE int is_word(Py_UCS4 c) { return c < 256 ? word_table[c] : (c == '_' || Py_UNICODE_ISALNUM(c)); }

/* The prefixes as code points, sorted, with every prefix that extends another dropped (a word that
 * starts with the longer one starts with the shorter): then a word starts with some prefix exactly
 * when it starts with the greatest prefix not above it, which a binary search finds. */
#define HEAD_BITS 4096

typedef struct {
    Py_ssize_t count;
    Py_UCS4 **chars;
    Py_ssize_t *lengths;
    unsigned char first[256]; /* 1 where some prefix starts with that character (below 256) */
    int wide_first;           /* some prefix starts with a character >= 256 */
    unsigned char first_chars[16]; /* the distinct first characters, when all are ASCII and at most 16 */
    int n_first_chars;             /* -1: too many or not ASCII (no block search) */
    unsigned char heads[3][HEAD_BITS / 8];
    /* heads[L - 1]: hashed first L characters of the prefixes (all of a shorter one): a word whose
     * first one, two and three characters all miss cannot start with a prefix. Most words that
     * pass the first-character test (`const` for `cooperative_groups`, `__device__` for `__shfl`)
     * stop here instead of in the binary search. */
} Prefixes;

INLINE unsigned head_hash(Py_UCS4 a, Py_UCS4 b, Py_UCS4 c, int length) {
    unsigned h = (unsigned)a;
    if (length > 1) h = h * 131u + (unsigned)b;
    if (length > 2) h = h * 131u + (unsigned)c;
    return h % HEAD_BITS;
}

INLINE void set_head(Prefixes *p, int length, unsigned h) { p->heads[length - 1][h / 8] |= (unsigned char)(1u << (h % 8)); }

INLINE int has_head(const Prefixes *p, int length, unsigned h) { return (p->heads[length - 1][h / 8] >> (h % 8)) & 1; }

static int compare_codes(const Py_UCS4 *a, Py_ssize_t na, const Py_UCS4 *b, Py_ssize_t nb) {
    for (Py_ssize_t k = 0; k < na && k < nb; k++)
        if (a[k] != b[k]) return a[k] < b[k] ? -1 : 1;
    return na < nb ? -1 : na > nb;
}

typedef struct {
    Py_UCS4 *chars;
    Py_ssize_t length;
} Code;

static int compare_code(const void *a, const void *b) {
    const Code *x = a, *y = b;
    return compare_codes(x->chars, x->length, y->chars, y->length);
}

static void free_prefixes(Prefixes *p, Code *codes, Py_ssize_t n) {
    for (Py_ssize_t k = 0; k < n; k++) PyMem_Free(codes[k].chars);
    PyMem_Free(codes);
    PyMem_Free(p->chars);
    PyMem_Free(p->lengths);
}

/* Fill `p` from a tuple of str; returns the code arrays to free, or NULL with an exception set. */
static Code *load_prefixes(PyObject *tuple, Prefixes *p, Py_ssize_t *n_codes) {
    Py_ssize_t n = PyTuple_GET_SIZE(tuple), used = 0;
    Code *codes = PyMem_Calloc(n ? n : 1, sizeof(Code));
    p->chars = PyMem_Calloc(n ? n : 1, sizeof(Py_UCS4 *));
    p->lengths = PyMem_Calloc(n ? n : 1, sizeof(Py_ssize_t));
    *n_codes = 0;
    if (codes == NULL || p->chars == NULL || p->lengths == NULL) {
        free_prefixes(p, codes, 0);
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *prefix = PyTuple_GET_ITEM(tuple, k);
        if (!PyUnicode_Check(prefix)) {
            free_prefixes(p, codes, used);
            PyErr_SetString(PyExc_TypeError, "words() prefixes must be str");
            return NULL;
        }
        if (PyUnicode_GET_LENGTH(prefix) == 0) continue;
        codes[used].chars = PyUnicode_AsUCS4Copy(prefix);
        if (codes[used].chars == NULL) {
            free_prefixes(p, codes, used);
            return NULL;
        }
        codes[used].length = PyUnicode_GET_LENGTH(prefix);
        for (Py_ssize_t c = 0; c < codes[used].length; c++) {
            if (!is_word(codes[used].chars[c])) {
                free_prefixes(p, codes, used + 1);
                PyErr_SetString(PyExc_ValueError, "words() prefixes must be made of word characters");
                return NULL;
            }
        }
        used++;
    }
    *n_codes = used;
    qsort(codes, (size_t)used, sizeof(Code), compare_code);
    p->count = 0;
    for (Py_ssize_t k = 0; k < used; k++) {
        if (p->count) {
            Py_ssize_t last = p->count - 1;
            if (p->lengths[last] <= codes[k].length &&
                compare_codes(p->chars[last], p->lengths[last], codes[k].chars, p->lengths[last]) == 0)
                continue; /* extends the last kept prefix */
        }
        p->chars[p->count] = codes[k].chars;
        p->lengths[p->count++] = codes[k].length;
        if (codes[k].chars[0] < 256)
            p->first[codes[k].chars[0]] = 1;
        else
            p->wide_first = 1;
        const Py_UCS4 *c = codes[k].chars;
        int length = codes[k].length < 3 ? (int)codes[k].length : 3;
        set_head(p, length, head_hash(c[0], length > 1 ? c[1] : 0, length > 2 ? c[2] : 0, length));
    }
    p->n_first_chars = p->wide_first ? -1 : 0;
    for (int c = 0; c < 256 && p->n_first_chars >= 0; c++) {
        if (!p->first[c]) continue;
        if (c >= 128 || p->n_first_chars == 16)
            p->n_first_chars = -1;
        else
            p->first_chars[p->n_first_chars++] = (unsigned char)c;
    }
    return codes;
}

/* -1, 0 or 1 as text[start:end] sorts before, equal to or after the prefix (code point order). */
INLINE int compare_word(const Text *t, Py_ssize_t start, Py_ssize_t end, const Py_UCS4 *prefix, Py_ssize_t n) {
    for (Py_ssize_t k = 0; k < n && start + k < end; k++) {
        Py_UCS4 c = at(t, start + k);
        if (c != prefix[k]) return c < prefix[k] ? -1 : 1;
    }
    return end - start < n ? -1 : (end - start > n);
}

/* Whether text[start:end] begins with one of the prefixes. */
INLINE int has_prefix(const Text *t, Py_ssize_t start, Py_ssize_t end, const Prefixes *p) {
    Py_ssize_t lo = 0, hi = p->count; /* the greatest prefix <= the word is at lo - 1 */
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (compare_word(t, start, end, p->chars[mid], p->lengths[mid]) >= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0) return 0;
    Py_ssize_t n = p->lengths[lo - 1];
    if (n > end - start) return 0;
    for (Py_ssize_t k = 0; k < n; k++)
        if (at(t, start + k) != p->chars[lo - 1][k]) return 0;
    return 1;
}

/* Add `start` under the word text[start:end] in `found`. Returns -1 on a Python error. */
static int record(PyObject *text, PyObject *found, Py_ssize_t start, Py_ssize_t end) {
    PyObject *word = PyUnicode_Substring(text, start, end);
    if (word == NULL) return -1;
    PyObject *starts = PyDict_GetItemWithError(found, word);
    if (starts == NULL) {
        if (PyErr_Occurred() || (starts = PyList_New(0)) == NULL || PyDict_SetItem(found, word, starts) < 0) {
            Py_XDECREF(starts);
            Py_DECREF(word);
            return -1;
        }
        Py_DECREF(starts); /* the dict holds it */
    }
    Py_DECREF(word);
    PyObject *offset = PyLong_FromSsize_t(start);
    if (offset == NULL) return -1;
    int failed = PyList_Append(starts, offset);
    Py_DECREF(offset);
    return failed;
}

/* A wanted word starts where a prefix's first character follows a non-word character: that is
 * tested per character with one rarely taken branch, where a word-by-word walk would mispredict
 * at every word boundary (about one character in three in source code). */
/* Whether a word of the first characters test at `i` can start with a prefix: its first one, two
 * or three characters hit a hashed head. */
INLINE int head_may_match(const Text *t, const Prefixes *p, Py_ssize_t i, Py_UCS4 c) {
    Py_UCS4 b = i + 1 < t->n ? at(t, i + 1) : 0, d = i + 2 < t->n ? at(t, i + 2) : 0;
    return has_head(p, 1, head_hash(c, 0, 0, 1)) || (i + 1 < t->n && has_head(p, 2, head_hash(c, b, 0, 2))) ||
           (i + 2 < t->n && has_head(p, 3, head_hash(c, b, d, 3)));
}

/* A wanted word starts where a prefix's first character follows a non-word character: that is
 * tested per character with one rarely taken branch, where a word-by-word walk would mispredict
 * at every word boundary (about one character in three in source code). */
INLINE int scan_words(const Text *t, PyObject *text, const Prefixes *p, PyObject *found) {
    int after_word = 0;
    for (Py_ssize_t i = 0; i < t->n; i++) {
        Py_UCS4 c = at(t, i);
        int word = is_word(c); /* prefixes are made of word characters: first[c] implies it */
        int first = c < 256 ? p->first[c] : p->wide_first & word;
        if (first & !after_word) {
            after_word = 1;
            if (!head_may_match(t, p, i, c)) continue; /* the characters after it are word interiors */
            Py_ssize_t end = i + 1;
            while (end < t->n && is_word(at(t, end))) end++;
            if (has_prefix(t, i, end, p) && record(text, found, i, end) < 0) return -1;
            i = end - 1; /* its last character is a word character */
            continue;
        }
        after_word = word;
    }
    return 0;
}

/* R"( at `i`: a raw string, which masking blanks from its R (so a word in the masked text ends before it). */
INLINE int raw_string_at(const Text *t, Py_ssize_t i) {
    return at(t, i) == 'R' && i + 1 < t->n && at(t, i + 1) == '"' && raw_string_end(t, i) >= 0;
}

/* One step of scan_lexemes and scan_words over its result in one pass, at `i`: outside lexemes the
 * masked text is the text, so words are read from the text, ending before a raw string's R as they
 * do once it is blanked; a lexeme is a boundary. Returns the next position (-2 on a Python error)
 * and sets *after_word (whether that position follows a word character). */
INLINE Py_ssize_t lexeme_word_step(const Text *t, PyObject *src, PyObject **out, const Prefixes *p, PyObject *found,
                                   Py_ssize_t i, int *after_word) {
    Py_UCS4 c = at(t, i);
    if (c < 128 && lexeme_head[c]) {
        Py_ssize_t end = lexeme_end(t, i);
        if (end >= 0) {
            if (blank_span(t, src, out, i, end) < 0) return -2;
            *after_word = 0;
            return end;
        }
    }
    int word = is_word(c);
    int first = c < 256 ? p->first[c] : p->wide_first & word;
    if ((first & !*after_word) && head_may_match(t, p, i, c)) {
        Py_ssize_t end = i + 1;
        while (end < t->n && is_word(at(t, end)) && !raw_string_at(t, end)) end++;
        if (has_prefix(t, i, end, p) && record(src, found, i, end) < 0) return -2;
        *after_word = 1; /* the character before `end` is a word character */
        return end;
    }
    *after_word = word;
    return i + 1;
}

/* Steps from `i` while before `stop`; the position reached, or -2 on a Python error. Whether `i`
 * follows a word is read from the character before it: a lexeme ends with a non-word character
 * (a line comment stops before its newline, which is no word's start either). */
INLINE Py_ssize_t lexeme_word_steps(const Text *t, PyObject *src, PyObject **out, const Prefixes *p, PyObject *found,
                                    Py_ssize_t i, Py_ssize_t stop) {
    int after_word = i > 0 && is_word(at(t, i - 1));
    while (i < stop && i >= 0) i = lexeme_word_step(t, src, out, p, found, i, &after_word);
    return i;
}

INLINE int scan_lexemes_words(const Text *t, PyObject *src, PyObject **out, const Prefixes *p, PyObject *found) {
    return lexeme_word_steps(t, src, out, p, found, 0, t->n) == -2 ? -1 : 0;
}

#ifdef HAVE_BLOCKS
/* ASCII word characters ([0-9A-Za-z_]) of a 16-byte block, one bit per byte. */
INLINE unsigned ascii_word_bits(__m128i v) {
    __m128i letter = _mm_sub_epi8(_mm_or_si128(v, _mm_set1_epi8(0x20)), _mm_set1_epi8('a'));
    __m128i digit = _mm_sub_epi8(v, _mm_set1_epi8('0'));
    __m128i word = _mm_or_si128(_mm_cmpeq_epi8(_mm_min_epu8(letter, _mm_set1_epi8(25)), letter),
                                _mm_cmpeq_epi8(_mm_min_epu8(digit, _mm_set1_epi8(9)), digit));
    return (unsigned)_mm_movemask_epi8(_mm_or_si128(word, _mm_cmpeq_epi8(v, _mm_set1_epi8('_'))));
}

/* The 16 characters from `i` as bytes in *v; 0 when one of them is not ASCII. A 2-byte text is
 * narrowed (its ASCII characters are their own bytes), so one block search serves both kinds. */
INLINE int ascii_block(const Text *t, Py_ssize_t i, __m128i *v) {
    if (t->kind == PyUnicode_1BYTE_KIND) {
        *v = _mm_loadu_si128((const __m128i *)((const unsigned char *)t->data + i));
        return _mm_movemask_epi8(*v) == 0;
    }
    const Py_UCS2 *d = (const Py_UCS2 *)t->data + i;
    __m128i a = _mm_loadu_si128((const __m128i *)d), b = _mm_loadu_si128((const __m128i *)(d + 8));
    __m128i wide = _mm_set1_epi16((short)0xFF80), zero = _mm_setzero_si128();
    __m128i ascii = _mm_and_si128(_mm_cmpeq_epi16(_mm_and_si128(a, wide), zero), _mm_cmpeq_epi16(_mm_and_si128(b, wide), zero));
    if (_mm_movemask_epi8(ascii) != 0xFFFF) return 0;
    *v = _mm_packus_epi16(a, b);
    return 1;
}

/* scan_lexemes_words for a 1- or 2-byte text whose prefixes start with at most 16 ASCII characters,
 * 16 characters at a time: only a lexeme head or a prefix's first character at a word start can change
 * anything, and most characters are neither, so the per-character step runs only at those (a block
 * with a character >= 128, whose word characters the bit test does not know, steps through each).
 * Same result as the per-character loop: a word start is a character whose predecessor in the text
 * is not a word character, and lexemes and scanned words are skipped through `cursor`. */
static int scan_lexemes_words_blocks(const Text *t, PyObject *src, PyObject **out, const Prefixes *p,
                                     PyObject *found) {
    __m128i firsts[16];
    for (int k = 0; k < p->n_first_chars; k++) firsts[k] = _mm_set1_epi8((char)p->first_chars[k]);
    Py_ssize_t i = 0, cursor = 0; /* everything before cursor is done; i >= cursor */
    while (i + 16 <= t->n) {
        __m128i v;
        if (!ascii_block(t, i, &v)) {
            cursor = lexeme_word_steps(t, src, out, p, found, i, i + 16);
            if (cursor == -2) return -1;
            i = cursor;
            continue;
        }
        __m128i heads = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('/')), _mm_cmpeq_epi8(v, _mm_set1_epi8('"'))),
                                     _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\'')), _mm_cmpeq_epi8(v, _mm_set1_epi8('R'))));
        __m128i first = _mm_setzero_si128();
        for (int k = 0; k < p->n_first_chars; k++) first = _mm_or_si128(first, _mm_cmpeq_epi8(v, firsts[k]));
        unsigned after = (ascii_word_bits(v) << 1) | (unsigned)(i > 0 && is_word(at(t, i - 1)));
        unsigned starts = (unsigned)_mm_movemask_epi8(first) & ~after;
        unsigned todo = (unsigned)_mm_movemask_epi8(heads) | starts;
        while (todo) {
            int j = __builtin_ctz(todo);
            todo &= todo - 1;
            Py_ssize_t at_j = i + j;
            if (at_j < cursor) continue; /* inside a lexeme or a word already read */
            int after_word = !((starts >> j) & 1);
            cursor = lexeme_word_step(t, src, out, p, found, at_j, &after_word);
            if (cursor == -2) return -1;
        }
        i = cursor > i + 16 ? cursor : i + 16;
    }
    return lexeme_word_steps(t, src, out, p, found, i > cursor ? i : cursor, t->n) == -2 ? -1 : 0;
}
#endif

static int words_ucs1(const Text *t, PyObject *text, const Prefixes *p, PyObject *found) {
    Text fixed = {PyUnicode_1BYTE_KIND, t->data, t->n};
    return scan_words(&fixed, text, p, found);
}

static int words_ucs2(const Text *t, PyObject *text, const Prefixes *p, PyObject *found) {
    Text fixed = {PyUnicode_2BYTE_KIND, t->data, t->n};
    return scan_words(&fixed, text, p, found);
}

static int words_ucs4(const Text *t, PyObject *text, const Prefixes *p, PyObject *found) {
    Text fixed = {PyUnicode_4BYTE_KIND, t->data, t->n};
    return scan_words(&fixed, text, p, found);
}

static int mask_words_ucs1(const Text *t, PyObject *src, PyObject **out, const Prefixes *p, PyObject *found) {
    Text fixed = {PyUnicode_1BYTE_KIND, t->data, t->n};
#ifdef HAVE_BLOCKS
    if (p->n_first_chars >= 0) return scan_lexemes_words_blocks(&fixed, src, out, p, found);
#endif
    return scan_lexemes_words(&fixed, src, out, p, found);
}

static int mask_words_ucs2(const Text *t, PyObject *src, PyObject **out, const Prefixes *p, PyObject *found) {
    Text fixed = {PyUnicode_2BYTE_KIND, t->data, t->n};
#ifdef HAVE_BLOCKS
    if (p->n_first_chars >= 0) return scan_lexemes_words_blocks(&fixed, src, out, p, found);
#endif
    return scan_lexemes_words(&fixed, src, out, p, found);
}

static int mask_words_ucs4(const Text *t, PyObject *src, PyObject **out, const Prefixes *p, PyObject *found) {
    Text fixed = {PyUnicode_4BYTE_KIND, t->data, t->n};
    return scan_lexemes_words(&fixed, src, out, p, found);
}

/* (mask(text), words(mask(text), prefixes)) in one pass over the text. */
/* The prefix tables of the tuple a function was last called with: the scanner passes one tuple for
 * every file, and building the tables cost more than searching a small file. The cache holds a
 * reference to the tuple (immutable, as are its strs), so the tables stay those of its prefixes. */
typedef struct {
    PyObject *tuple;
    Prefixes p;
    Code *codes;
    Py_ssize_t n_codes;
} PrefixCache;

static PrefixCache mask_words_cache, words_cache;

/* The tables for `tuple`, from `cache` or built into it; NULL with an exception set. */
static const Prefixes *cached_prefixes(PrefixCache *cache, PyObject *tuple) {
    if (cache->tuple == tuple) return &cache->p;
    Prefixes p = {0};
    Py_ssize_t n_codes;
    Code *codes = load_prefixes(tuple, &p, &n_codes);
    if (codes == NULL) return NULL;
    if (cache->tuple != NULL) {
        free_prefixes(&cache->p, cache->codes, cache->n_codes);
        Py_DECREF(cache->tuple);
    }
    Py_INCREF(tuple);
    cache->tuple = tuple;
    cache->p = p;
    cache->codes = codes;
    cache->n_codes = n_codes;
    return &cache->p;
}

static PyObject *mask_words(PyObject *self, PyObject *args) {
    PyObject *text, *prefixes;
    if (!PyArg_ParseTuple(args, "UO!:mask_words", &text, &PyTuple_Type, &prefixes)) return NULL;
    const Prefixes *p = cached_prefixes(&mask_words_cache, prefixes);
    if (p == NULL) return NULL;
    PyObject *found = PyDict_New(), *out = NULL, *result = NULL;
    if (found != NULL) {
        Text t = {PyUnicode_KIND(text), PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text)};
        int failed = t.kind == PyUnicode_1BYTE_KIND   ? mask_words_ucs1(&t, text, &out, p, found)
                     : t.kind == PyUnicode_2BYTE_KIND ? mask_words_ucs2(&t, text, &out, p, found)
                                                      : mask_words_ucs4(&t, text, &out, p, found);
        if (failed) {
            Py_XDECREF(out);
        } else {
            PyObject *masked = masked_result(text, out);
            if (masked != NULL) result = Py_BuildValue("(NO)", masked, found);
        }
        Py_DECREF(found);
    }
    return result;
}

static PyObject *words(PyObject *self, PyObject *args) {
    PyObject *text, *prefixes;
    if (!PyArg_ParseTuple(args, "UO!:words", &text, &PyTuple_Type, &prefixes)) return NULL;
    const Prefixes *p = cached_prefixes(&words_cache, prefixes);
    if (p == NULL) return NULL;
    PyObject *found = PyDict_New();
    if (found != NULL) {
        Text t = {PyUnicode_KIND(text), PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text)};
        int failed = t.kind == PyUnicode_1BYTE_KIND   ? words_ucs1(&t, text, p, found)
                     : t.kind == PyUnicode_2BYTE_KIND ? words_ucs2(&t, text, p, found)
                                                      : words_ucs4(&t, text, p, found);
        if (failed) Py_CLEAR(found);
    }
    return found;
}

/* End of a directive's text from `i` (the regex [^\n\\]*(?:\\(?:\r?\n|.)[^\n\\]*)*): the line
 * and every line a backslash continues; a backslash at the very end of the text is left out. */
INLINE Py_ssize_t directive_end(const Text *t, Py_ssize_t i) {
    for (;;) {
        while (i < t->n && at(t, i) != '\n' && at(t, i) != '\\') i++;
        if (i >= t->n || at(t, i) == '\n' || i + 1 >= t->n) return i;
        if (at(t, i + 1) == '\r' && i + 2 < t->n && at(t, i + 2) == '\n')
            i += 3;
        else
            i += 2; /* a backslash and the newline or any other character after it */
    }
}

/* Whether only whitespace stands between the line start and `i`. */
INLINE int starts_line(const Text *t, Py_ssize_t i) {
    while (--i >= 0) {
        Py_UCS4 c = at(t, i);
        if (c == '\n') return 1;
        if (!Py_UNICODE_ISSPACE(c)) return 0;
    }
    return 1;
}

INLINE int is_name_char(Py_UCS4 c) { return (c >= 'a' && c <= 'z') || c == '_'; }

/* What tools.cpp.preprocessor's _DIRECTIVE.finditer matches (`#`, blanks, a lowercase name, the
 * text up to the unescaped end of line), kept when it starts its line and `names` holds its name. */
INLINE int scan_directives(const Text *t, PyObject *text, PyObject *names, PyObject *out) {
    Py_ssize_t pos = 0;
    while ((pos = find_char(t, '#', pos)) >= 0) {
        Py_ssize_t hash = pos, name = hash + 1;
        while (name < t->n && (at(t, name) == ' ' || at(t, name) == '\t')) name++;
        Py_ssize_t rest = name;
        while (rest < t->n && is_name_char(at(t, rest))) rest++;
        if (rest == name) {
            pos = hash + 1;
            continue;
        }
        pos = directive_end(t, rest);
        if (!starts_line(t, hash)) continue;
        PyObject *word = PyUnicode_Substring(text, name, rest);
        if (word == NULL) return -1;
        int wanted = PySet_Contains(names, word);
        if (wanted <= 0) {
            Py_DECREF(word);
            if (wanted < 0) return -1;
            continue;
        }
        PyObject *item = Py_BuildValue("(nNnn)", hash, word, rest, pos);
        if (item == NULL) return -1;
        int failed = PyList_Append(out, item);
        Py_DECREF(item);
        if (failed) return -1;
    }
    return 0;
}

static int directives_ucs1(const Text *t, PyObject *text, PyObject *names, PyObject *out) {
    Text fixed = {PyUnicode_1BYTE_KIND, t->data, t->n};
    return scan_directives(&fixed, text, names, out);
}

static int directives_ucs2(const Text *t, PyObject *text, PyObject *names, PyObject *out) {
    Text fixed = {PyUnicode_2BYTE_KIND, t->data, t->n};
    return scan_directives(&fixed, text, names, out);
}

static int directives_ucs4(const Text *t, PyObject *text, PyObject *names, PyObject *out) {
    Text fixed = {PyUnicode_4BYTE_KIND, t->data, t->n};
    return scan_directives(&fixed, text, names, out);
}

static PyObject *directives(PyObject *self, PyObject *args) {
    PyObject *text, *names;
    if (!PyArg_ParseTuple(args, "UO!:directives", &text, &PyFrozenSet_Type, &names)) return NULL;
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    Text t = {PyUnicode_KIND(text), PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text)};
    int failed = t.kind == PyUnicode_1BYTE_KIND   ? directives_ucs1(&t, text, names, out)
                 : t.kind == PyUnicode_2BYTE_KIND ? directives_ucs2(&t, text, names, out)
                                                  : directives_ucs4(&t, text, names, out);
    if (failed) Py_CLEAR(out);
    return out;
}

static PyMethodDef methods[] = {
    {"mask", mask, METH_O, "The text with comments and literals blanked to spaces, newlines kept."},
    {"words", words, METH_VARARGS, "Every word starting with one of the prefixes -> its start offsets."},
    {"mask_words", mask_words, METH_VARARGS, "(mask(text), words of it starting with a prefix) in one pass."},
    {"directives", directives, METH_VARARGS, "(offset, name, rest start, end) of each directive line named."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_lexmask", "Comment and literal masking and the word search in C (see tools.cpp.source).", -1,
    methods,
};

PyMODINIT_FUNC PyInit__lexmask(void) {
    for (Py_UCS4 c = 0; c < 256; c++) word_table[c] = c == '_' || Py_UNICODE_ISALNUM(c);
    lexeme_head['/'] = lexeme_head['R'] = lexeme_head['"'] = lexeme_head['\''] = 1;
    return PyModule_Create(&module);
}
