/* msglc._speedups: the optional C accelerator, for writing archives and for reading them.
 *
 * Every function here is a faster twin of a Python function of msglc, which is its definition
 * and what msglc runs without this module (no C compiler at install, or MSGLC_PURE_PYTHON=1):
 * the same bytes written, the same values read, the same errors. Each function's comment names
 * the Python function it mirrors (paths are under msglc/). Where the Python path must answer
 * (damage, a layout out of the ordinary), a read returns NotImplemented or a status that says
 * so, and Python then also says what is wrong. msglc/util/accel.py loads this module and
 * declares what it exports (Speedups); msglc calls it only through accel.speedups, so one
 * switch selects either path. Every length read from a buffer is checked against the buffer
 * before it is used.
 *
 * Sections, in this order:
 *   Shared: CRC-32, byte order and the msgpack walk that both sides use.
 *   Write (msglc/write/): types checked at C speed; the TOC of a value just encoded.
 *   Read (msglc/io/, msglc/read/): local sources (mapped reads that cannot kill the process),
 *     block hash index lookups, spans of items, and FastGet, the views' __getitem__ in C.
 *   Both (msglc/format/): the binary fuse (built on write, rebuilt by verify) and the byte
 *     shuffle of compressed frames (shuffled on write, unshuffled on read).
 *   The module: its function table and init.
 */

#define PY_SSIZE_T_CLEAN
/* What msglc/util/accel.py expects (API there): raised whenever a function is added or changes,
 * so that a stale build is set aside instead of failing at a call. */
#define SPEEDUPS_API 22
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>
#if defined(__linux__)
/* Local files are read through a memory map where a file cut short by another program gives a
 * read that fails, never a SIGBUS that kills the process (see "Mapped reads" below). */
#define MSGLC_MAP 1
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#endif

/* ============================================================================================
 * Shared: CRC-32, byte order, and the msgpack walk
 * ============================================================================================ */

static uint32_t crc_table[8][256];

/* The tables of crc32_of (slicing by eight), made once at import. */
static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xFF];
}

/* CRC-32 (zlib's), eight bytes per step. Mirrors zlib.crc32, which the Python paths call
 * (keys' hashes, checksums of page records). */
static uint32_t crc32_of(const unsigned char *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    while (n >= 8) {
        uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
        c = crc_table[7][lo & 0xFF] ^ crc_table[6][(lo >> 8) & 0xFF] ^ crc_table[5][(lo >> 16) & 0xFF] ^
            crc_table[4][lo >> 24] ^ crc_table[3][hi & 0xFF] ^ crc_table[2][(hi >> 8) & 0xFF] ^
            crc_table[1][(hi >> 16) & 0xFF] ^ crc_table[0][hi >> 24];
        p += 8, n -= 8;
    }
    while (n--) c = crc_table[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

/* int.from_bytes(p[:n], "big"): msgpack's lengths and counts. */
static uint64_t be(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v = (v << 8) | p[i];
    return v;
}

/* v.to_bytes(width, "little") into out: the TOC's offsets and records. */
static void put_le(unsigned char *out, uint64_t v, int width) {
    for (int i = 0; i < width; i++) out[i] = (unsigned char)(v >> (8 * i));
}

/* What the first byte of a msgpack object says about its size (skip_init): KIND_FIXED and
 * the bytes that follow (fixed[]); a container adding fixed[] items (fixmap: 2 per entry);
 * a length of fixed[] bytes, then as many bytes (+1 for an ext's type); a 16/32-bit count of
 * items; or not msgpack (0xc1). */
enum { KIND_FIXED, KIND_ITEMS, KIND_SIZED, KIND_SIZED_EXT, KIND_ARRAY, KIND_MAP, KIND_BAD };
static unsigned char kind[256], fixed[256];

static void skip_init(void) {
    for (int m = 0; m < 256; m++) {
        unsigned char k = KIND_FIXED, f = 0;
        /* clang-format off */
        if (m <= 0x7f || m >= 0xe0 || m == 0xc0 || m == 0xc2 || m == 0xc3) f = 0;
        else if ((m & 0xf0) == 0x80) k = KIND_ITEMS, f = (unsigned char)(2 * (m & 0x0f));
        else if ((m & 0xf0) == 0x90) k = KIND_ITEMS, f = (unsigned char)(m & 0x0f);
        else if ((m & 0xe0) == 0xa0) f = (unsigned char)(m & 0x1f);
        else switch (m) {
            case 0xc4: case 0xd9: k = KIND_SIZED, f = 1; break;
            case 0xc5: case 0xda: k = KIND_SIZED, f = 2; break;
            case 0xc6: case 0xdb: k = KIND_SIZED, f = 4; break;
            case 0xc7: k = KIND_SIZED_EXT, f = 1; break;
            case 0xc8: k = KIND_SIZED_EXT, f = 2; break;
            case 0xc9: k = KIND_SIZED_EXT, f = 4; break;
            case 0xca: f = 4; break;
            case 0xcb: f = 8; break;
            case 0xcc: case 0xd0: f = 1; break;
            case 0xcd: case 0xd1: f = 2; break;
            case 0xce: case 0xd2: f = 4; break;
            case 0xcf: case 0xd3: f = 8; break;
            case 0xd4: f = 2; break;
            case 0xd5: f = 3; break;
            case 0xd6: f = 5; break;
            case 0xd7: f = 9; break;
            case 0xd8: f = 17; break;
            case 0xdc: k = KIND_ARRAY, f = 2; break;
            case 0xdd: k = KIND_ARRAY, f = 4; break;
            case 0xde: k = KIND_MAP, f = 2; break;
            case 0xdf: k = KIND_MAP, f = 4; break;
            default: k = KIND_BAD;
        }
        /* clang-format on */
        kind[m] = k, fixed[m] = f;
    }
}

/* Past the one msgpack object at p, or NULL if it does not fit before end. Nesting costs no
 * recursion: a count of the objects still to skip. Mirrors format/walk.py item_ends (the
 * end of each item, not decoded) and the Python paths' decoding as msgspec.Raw. */
static const unsigned char *skip(const unsigned char *p, const unsigned char *end) {
    uint64_t remaining = 1;
    while (remaining) {
        if (p >= end) return NULL;
        unsigned char m = *p++;
        remaining--;
        if (m < 0x80) continue; /* the commonest kinds, without the tables: positive fixint, */
        if ((m & 0xe0) == 0xa0) { /* fixstr, */
            if (end - p < (m & 0x1f)) return NULL;
            p += m & 0x1f;
            continue;
        }
        if (m == 0xcb) { /* float64 */
            if (end - p < 8) return NULL;
            p += 8;
            continue;
        }
        uint64_t len = fixed[m];
        unsigned char k = kind[m];
        if (k == KIND_FIXED) {
            if ((uint64_t)(end - p) < len) return NULL;
            p += len;
            continue;
        }
        if (k == KIND_ITEMS) {
            remaining += len;
            continue;
        }
        switch (k) {
            case KIND_SIZED:
            case KIND_SIZED_EXT: {
                int hdr = (int)len;
                if (end - p < hdr) return NULL;
                len = be(p, hdr) + (kind[m] == KIND_SIZED_EXT);
                p += hdr;
                break;
            }
            case KIND_ARRAY:
            case KIND_MAP: {
                int size = (int)len;
                if (end - p < size) return NULL;
                uint64_t count = be(p, size);
                remaining += kind[m] == KIND_MAP ? 2 * count : count;
                p += size;
                continue;
            }
            default: return NULL;
        }
        if ((uint64_t)(end - p) < len) return NULL;
        p += len;
    }
    return p;
}

/* ============================================================================================
 * Write: checks and indexes of a value being written (msglc/write/)
 * ============================================================================================ */

/* ---- types checked at C speed (write/values.py, write/indexer.py) -------------------------- */

/* exact_numbers(seq, depth): True if seq is a list/tuple nested depth levels deep (lists or
 * tuples at every level) whose leaves are all exactly float or int. False otherwise (the
 * caller then runs its full type check). Only reads ob_type pointers: a few ns per leaf.
 * Mirrors the leaf check of write/indexer.py TocBuilder._check_stride_types (a fixed-stride
 * matrix's elements). */
static int exact_leaves(PyObject *seq, int depth) {
    if (!PyList_CheckExact(seq) && !PyTuple_CheckExact(seq)) return 0;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    if (depth == 1) {
        for (Py_ssize_t i = 0; i < n; i++) {
            PyTypeObject *t = Py_TYPE(items[i]);
            if (t != &PyFloat_Type && t != &PyLong_Type) return 0;
        }
        return 1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!exact_leaves(items[i], depth - 1)) return 0;
    }
    return 1;
}

static PyObject *exact_numbers(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *seq;
    int depth;
    if (!PyArg_ParseTuple(args, "Oi", &seq, &depth)) return NULL;
    if (depth < 1 || depth > 64) {
        PyErr_SetString(PyExc_ValueError, "exact_numbers: depth out of range");
        return NULL;
    }
    return PyBool_FromLong(exact_leaves(seq, depth));
}

/* increasing(xs): True when the list xs of ints rises strictly, False when it does not;
 * NotImplemented for anything else (not a list, an item not an exact int of 64 bits): the
 * Python check then decides. Mirrors format/nodes.py _increasing, which checks the span
 * tables of every node read (12,000 spans a list of 4.5 M strings: about 1 ms in Python). */
/* One step of a check that ints rise strictly (increasing, entries_in_order): 1 when x, an
 * exact int of 64 bits, is the first (i == 0) or above *prev, and becomes *prev; 0 when it is
 * not above; -1 when x is no such int (the Python check then decides). */
static int rises(PyObject *x, Py_ssize_t i, long long *prev) {
    int overflow = 0;
    if (!PyLong_CheckExact(x)) return -1;
    long long v = PyLong_AsLongLongAndOverflow(x, &overflow); /* (no error for an exact int) */
    if (overflow) return -1;
    if (i && v <= *prev) return 0;
    *prev = v;
    return 1;
}

static PyObject *increasing(PyObject *self, PyObject *xs) {
    (void)self;
    if (!PyList_CheckExact(xs)) Py_RETURN_NOTIMPLEMENTED;
    long long prev = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(xs); i++) {
        int r = rises(PyList_GET_ITEM(xs, i), i, &prev);
        if (r < 0) Py_RETURN_NOTIMPLEMENTED;
        if (!r) Py_RETURN_FALSE;
    }
    Py_RETURN_TRUE;
}

/* An offset or length taken from a TOC node: an exact int in [lo, 2**61) (so that three of them
 * add up without overflow), or 0 (not one: the caller hands over to Python). */
#define NODE_OFFSET_LIMIT (1LL << 61)
static int node_offset(PyObject *x, long long lo, long long *out) {
    if (!PyLong_CheckExact(x)) return 0;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(x, &overflow);
    if (v == -1 && PyErr_Occurred()) PyErr_Clear(); /* (not for an exact int; then Python decides) */
    if (overflow || v < lo || v >= NODE_OFFSET_LIMIT) return 0;
    *out = v;
    return 1;
}

/* expand_map(first, klens, vlens): the offsets of a compact inline dict node's entries as a
 * tuple (koffs, voffs): entry j's key at koffs[j], its value at voffs[j], the dict's end at
 * koffs[n], from the first key's offset and each key's and value's length. NotImplemented
 * unless first is an int in [0, 2**61) and klens and vlens lists of as many ints in [1, 2**61)
 * whose sums stay below 2**61: the Python path then decides (and raises its error). Mirrors
 * format/nodes.py CompactMapNode.expanded (a node of 1,000 keys: about 120 us in Python). */
static PyObject *expand_map(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "expand_map(first, klens, vlens)");
        return NULL;
    }
    PyObject *klens = args[1], *vlens = args[2];
    long long at;
    if (!node_offset(args[0], 0, &at) || !PyList_CheckExact(klens) || !PyList_CheckExact(vlens) ||
        PyList_GET_SIZE(klens) != PyList_GET_SIZE(vlens))
        Py_RETURN_NOTIMPLEMENTED;
    Py_ssize_t n = PyList_GET_SIZE(klens);
    PyObject *koffs = PyList_New(n + 1), *voffs = PyList_New(n);
    if (koffs == NULL || voffs == NULL) goto fail;
    for (Py_ssize_t j = 0; j < n; j++) {
        long long k, v;
        if (!node_offset(PyList_GET_ITEM(klens, j), 1, &k) || !node_offset(PyList_GET_ITEM(vlens, j), 1, &v) ||
            at + k + v >= NODE_OFFSET_LIMIT) {
            Py_DECREF(koffs);
            Py_DECREF(voffs);
            Py_RETURN_NOTIMPLEMENTED;
        }
        PyObject *ko = PyLong_FromLongLong(at), *vo = PyLong_FromLongLong(at + k);
        if (ko == NULL || vo == NULL) {
            Py_XDECREF(ko);
            Py_XDECREF(vo);
            goto fail;
        }
        PyList_SET_ITEM(koffs, j, ko);
        PyList_SET_ITEM(voffs, j, vo);
        at += k + v;
    }
    PyObject *end = PyLong_FromLongLong(at);
    if (end == NULL) goto fail;
    PyList_SET_ITEM(koffs, n, end);
    return Py_BuildValue("(NN)", koffs, voffs);
fail:
    Py_XDECREF(koffs);
    Py_XDECREF(voffs);
    return NULL;
}

/* entries_in_order(koffs, voffs): True when an inline dict node's entries lie in order, each
 * key before its value and each value before the next key (koffs[0] < voffs[0] < koffs[1] <
 * ... < voffs[n - 1] < koffs[n]), False when not; NotImplemented unless both are lists of
 * 64-bit ints, koffs one longer: the Python check then decides. Mirrors format/nodes.py
 * _check_map, without the list of 2n + 1 offsets it would build. */
static PyObject *entries_in_order(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "entries_in_order(koffs, voffs)");
        return NULL;
    }
    PyObject *koffs = args[0], *voffs = args[1];
    if (!PyList_CheckExact(koffs) || !PyList_CheckExact(voffs) || PyList_GET_SIZE(koffs) != PyList_GET_SIZE(voffs) + 1)
        Py_RETURN_NOTIMPLEMENTED;
    Py_ssize_t n = PyList_GET_SIZE(voffs);
    long long prev = 0;
    for (Py_ssize_t i = 0; i <= 2 * n; i++) {
        int r = rises(i % 2 ? PyList_GET_ITEM(voffs, i / 2) : PyList_GET_ITEM(koffs, i / 2), i, &prev);
        if (r < 0) Py_RETURN_NOTIMPLEMENTED;
        if (!r) Py_RETURN_FALSE;
    }
    Py_RETURN_TRUE;
}

/* plain_values(obj): True if obj holds only values of exactly the types msglc stores as
 * they are: None, bool, int, float, str, bytes, list, tuple and dict with exactly-str or
 * exactly-int keys, at most PLAIN_DEPTH levels deep. False otherwise (the caller then runs its
 * full type check, which also accepts subclasses, enum members and NumPy values and names
 * what it refuses). Reads type pointers only and runs no Python code. Mirrors
 * write/values.py check_value (check_items, check_map), whose walk a True lets the writers
 * skip (write/indexer.py, write/encoder.py, write/streaming.py). */
#define PLAIN_DEPTH 200
static int plain(PyObject *o, int depth) {
    PyTypeObject *t = Py_TYPE(o);
    if (t == &PyFloat_Type || t == &PyLong_Type || t == &PyUnicode_Type || t == &PyBool_Type || o == Py_None ||
        t == &PyBytes_Type)
        return 1;
    if (depth >= PLAIN_DEPTH) return 0;
    if (t == &PyList_Type || t == &PyTuple_Type) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
        PyObject **items = PySequence_Fast_ITEMS(o);
        for (Py_ssize_t i = 0; i < n; i++) {
            if (!plain(items[i], depth + 1)) return 0;
        }
        return 1;
    }
    if (t == &PyDict_Type) {
        Py_ssize_t pos = 0;
        PyObject *key, *value;
        while (PyDict_Next(o, &pos, &key, &value)) {
            PyTypeObject *kt = Py_TYPE(key);
            if ((kt != &PyUnicode_Type && kt != &PyLong_Type) || !plain(value, depth + 1)) return 0;
        }
        return 1;
    }
    return 0;
}

static PyObject *plain_values(PyObject *self, PyObject *obj) {
    (void)self;
    return PyBool_FromLong(plain(obj, 0));
}

/* ---- the TOC of a value just encoded (write/indexer.py, write/reindex.py) ------------------ */

/* Does the value [v, end) get a TOC node of its own when long: an array, a map or a NumPy
 * array (extension type 78)? Mirrors format/msgpack.py gets_node. */
static int gets_node(const unsigned char *v, const unsigned char *end) {
    unsigned char m = *v;
    if ((m & 0xe0) == 0x80 || m == 0xdc || m == 0xdd || m == 0xde || m == 0xdf) return 1;
    int type_at = m == 0xc7 ? 2 : m == 0xc8 ? 3 : m == 0xc9 ? 5 : 0;
    return type_at && end - v > type_at && v[type_at] == 78;
}

/* list_index(buf, start, n, base, threshold) -> (offs, big): the n items of a msgpack array
 * whose first item is at buf[start]: offs, n + 1 little-endian u64 item starts relative to
 * base (the last is the end); big, [(item, start, end)] for the items longer than threshold
 * that get a node (gets_node), relative to base. Mirrors write/indexer.py item_layout and
 * TocBuilder.big_children, without a Python object per item (TocBuilder.list_items; and
 * write/reindex.py). */
static PyObject *list_index(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view;
    Py_ssize_t start, n, base, threshold;
    if (!PyArg_ParseTuple(args, "y*nnnn", &view, &start, &n, &base, &threshold)) return NULL;
    PyObject *result = NULL, *big = NULL, *offs_b = NULL;
    const unsigned char *buf = view.buf, *end = buf + view.len, *p;
    if (start < 0 || start > view.len || base < 0 || base > start || n < 0 || n > view.len - start) {
        PyErr_SetString(PyExc_ValueError, "list_index: arguments out of range");
        goto done;
    }
    offs_b = PyBytes_FromStringAndSize(NULL, (n + 1) * 8);
    big = PyList_New(0);
    if (!offs_b || !big) goto done;
    unsigned char *o = (unsigned char *)PyBytes_AS_STRING(offs_b);
    p = buf + start;
    for (Py_ssize_t e = 0; e < n; e++) {
        const unsigned char *item = p;
        put_le(o + 8 * e, (uint64_t)(item - buf - base), 8);
        if (!(p = skip(item, end))) {
            PyErr_SetString(PyExc_ValueError, "list_index: malformed msgpack");
            goto done;
        }
        if (p - item > threshold && gets_node(item, p)) {
            PyObject *entry = Py_BuildValue("(nnn)", e, (Py_ssize_t)(item - buf - base), (Py_ssize_t)(p - buf - base));
            if (!entry || PyList_Append(big, entry) < 0) {
                Py_XDECREF(entry);
                goto done;
            }
            Py_DECREF(entry);
        }
    }
    put_le(o + 8 * n, (uint64_t)(p - buf - base), 8);
    result = Py_BuildValue("(OO)", offs_b, big);
done:
    Py_XDECREF(offs_b);
    Py_XDECREF(big);
    PyBuffer_Release(&view);
    return result;
}

/* qsort's order of u64 records (map_index: sorted(), in the Python path). */
static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* CRC-32 of the n bytes at p read backwards (the second half of a key's 64-bit hash).
 * Mirrors zlib.crc32(key[::-1]) in format/fuse.py base_hash. */
static uint32_t crc32_reversed(const unsigned char *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    while (n) c = crc_table[0][(c ^ p[--n]) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

/* A key's 64-bit base hash: the CRC-32 of its msgpack bytes, then that of the bytes reversed.
 * Mirrors format/fuse.py base_hash (the fuse's and the direct index's keys). */
static uint64_t key_base_hash(const unsigned char *key, size_t n) {
    return (uint64_t)crc32_of(key, n) << 32 | crc32_reversed(key, n);
}

/* The walk of the n entries of a msgpack map body at buf[start] (map_index, map_hashed): each
 * entry's start relative to base into offs (and the end into offs[n]); each key's CRC-32
 * into crcs, its base hash (fuse.base_hash) into hashes as u64 LE, where not NULL; (entry,
 * value start, value end) appended to big for values longer than threshold that get a node.
 * -1 with an exception set when the bytes are not msgpack. */
static int walk_map(const unsigned char *buf, const unsigned char *end, Py_ssize_t start, Py_ssize_t n, Py_ssize_t base,
                    Py_ssize_t threshold, uint64_t *offs, uint32_t *crcs, unsigned char *hashes, PyObject *big,
                    const char *name) {
    const unsigned char *p = buf + start;
    for (Py_ssize_t e = 0; e < n; e++) {
        const unsigned char *key = p, *value;
        offs[e] = (uint64_t)(key - buf - base);
        if (!(value = skip(key, end)) || !(p = skip(value, end))) {
            PyErr_Format(PyExc_ValueError, "%s: malformed msgpack", name);
            return -1;
        }
        size_t len = (size_t)(value - key);
        uint32_t crc = crc32_of(key, len);
        if (crcs) crcs[e] = crc;
        if (hashes) put_le(hashes + 8 * e, (uint64_t)crc << 32 | crc32_reversed(key, len), 8);
        if (p - value > threshold && gets_node(value, p)) {
            PyObject *item = Py_BuildValue("(nnn)", e, (Py_ssize_t)(value - buf - base), (Py_ssize_t)(p - buf - base));
            if (!item || PyList_Append(big, item) < 0) {
                Py_XDECREF(item);
                return -1;
            }
            Py_DECREF(item);
        }
    }
    offs[n] = (uint64_t)(p - buf - base);
    return 0;
}

/* The n + 1 entry offsets as bytes, u32 LE when the last fits, else u64 LE (*width: 4 or 8). */
static PyObject *offsets_bytes(const uint64_t *offs, Py_ssize_t n, int *width) {
    *width = offs[n] < ((uint64_t)1 << 32) ? 4 : 8;
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n + 1) * *width);
    if (!out) return NULL;
    unsigned char *o = (unsigned char *)PyBytes_AS_STRING(out);
    for (Py_ssize_t e = 0; e <= n; e++) put_le(o + e * *width, offs[e], *width);
    return out;
}

/* map_hashed(buf, start, n, base, threshold) -> (entry_offsets, width, hashes, big): map_index's
 * walk with each key's base hash (fuse.base_hash) instead of the sorted records: what a fuse or a
 * sorted index needs, in one pass over the entries (write/indexer.py). */
static PyObject *map_hashed(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view;
    Py_ssize_t start, n, base, threshold;
    if (!PyArg_ParseTuple(args, "y*nnnn", &view, &start, &n, &base, &threshold)) return NULL;
    PyObject *result = NULL, *big = NULL, *hashes = NULL, *offs_b = NULL;
    uint64_t *offs = NULL;
    const unsigned char *buf = view.buf, *end = buf + view.len;
    /* every entry takes at least two bytes: this bounds the allocations by the buffer's size */
    if (start < 0 || start > view.len || base < 0 || base > start || n < 0 ||
        (uint64_t)n > (uint64_t)(view.len - start) / 2) {
        PyErr_SetString(PyExc_ValueError, "map_hashed: arguments out of range");
        goto done;
    }
    offs = malloc(sizeof(uint64_t) * (n + 1));
    hashes = PyBytes_FromStringAndSize(NULL, n * 8);
    big = PyList_New(0);
    if (!offs || !hashes || !big) {
        if (!offs) PyErr_NoMemory();
        goto done;
    }
    if (walk_map(buf, end, start, n, base, threshold, offs, NULL, (unsigned char *)PyBytes_AS_STRING(hashes), big,
                 "map_hashed") < 0)
        goto done;
    int width;
    offs_b = offsets_bytes(offs, n, &width);
    if (offs_b) result = Py_BuildValue("(NiOO)", offs_b, width, hashes, big);
done:
    free(offs);
    Py_XDECREF(hashes);
    Py_XDECREF(big);
    PyBuffer_Release(&view);
    return result;
}

/* map_index(buf, start, n, base, threshold, page_bits) walks the n entries of a msgpack map
 * body that starts at buf[start] and returns
 *   (entry_offsets: bytes, width: int, records: bytes, firsts: bytes, big: list)
 * entry_offsets: n + 1 little-endian offsets (relative to base) of width 4 or 8 bytes;
 * records: n little-endian u64 values crc32(key) << 32 | entry, sorted ascending;
 * firsts: 2**page_bits + 1 little-endian u32: first record of each page (page = crc >> (32 -
 * page_bits)), then n;
 * big: [(entry, value_start, value_end)] for values longer than threshold that are arrays,
 * maps or NumPy arrays (ext type 78). The input is msgpack written by msgspec moments
 * before; every length is still checked against the buffer, and malformed input raises
 * ValueError.
 * Mirrors write/indexer.py: key_records and TocBuilder.hash_index (the offsets, the sorted
 * records and the page starts of a hash index), with TocBuilder._big_values; on the read
 * side format/hash_index.py entry_hashes (the offsets and hashes of entries a block index
 * does not store). */
static PyObject *map_index(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view;
    Py_ssize_t start, n, base, threshold;
    int page_bits;
    if (!PyArg_ParseTuple(args, "y*nnnni", &view, &start, &n, &base, &threshold, &page_bits)) return NULL;
    PyObject *result = NULL, *big = NULL;
    uint64_t *offs = NULL, *recs = NULL;
    uint32_t *crcs = NULL, *firsts = NULL;
    const unsigned char *buf = view.buf, *end = buf + view.len;
    /* every entry takes at least two bytes, and pages never outnumber entries: this bounds
       every allocation below by the buffer's size */
    if (start < 0 || start > view.len || base < 0 || base > start || n < 0 || (uint64_t)n > 0xFFFFFFFFu ||
        (uint64_t)n > (uint64_t)(view.len - start) / 2 || page_bits < 0 || page_bits > 31 ||
        ((Py_ssize_t)1 << page_bits) > (n > 1 ? n : 1)) {
        PyErr_SetString(PyExc_ValueError, "map_index: arguments out of range");
        goto done;
    }
    size_t pages = (size_t)1 << page_bits;
    offs = malloc(sizeof(uint64_t) * (n + 1));
    recs = malloc(sizeof(uint64_t) * (n ? n : 1));
    crcs = malloc(sizeof(uint32_t) * (n ? n : 1));
    firsts = calloc(pages + 1, sizeof(uint32_t));
    big = PyList_New(0);
    if (!offs || !recs || !crcs || !firsts || !big) {
        PyErr_NoMemory();
        goto done;
    }
    if (walk_map(buf, end, start, n, base, threshold, offs, crcs, NULL, big, "map_index") < 0) goto done;
    /* counting sort by page, then each page in ascending (crc, entry) order */
    for (Py_ssize_t e = 0; e < n; e++) firsts[(page_bits ? crcs[e] >> (32 - page_bits) : 0) + 1]++;
    for (size_t q = 0; q < pages; q++) firsts[q + 1] += firsts[q];
    {
        uint32_t *fill = malloc(sizeof(uint32_t) * pages);
        if (!fill) {
            PyErr_NoMemory();
            goto done;
        }
        memcpy(fill, firsts, sizeof(uint32_t) * pages);
        for (Py_ssize_t e = 0; e < n; e++) {
            size_t page = page_bits ? crcs[e] >> (32 - page_bits) : 0;
            recs[fill[page]++] = ((uint64_t)crcs[e] << 32) | (uint64_t)e;
        }
        free(fill);
    }
    for (size_t q = 0; q < pages; q++) {
        uint64_t *seg = recs + firsts[q];
        size_t count = firsts[q + 1] - firsts[q];
        if (count <= 64) {
            for (size_t i = 1; i < count; i++) {
                uint64_t v = seg[i];
                size_t j = i;
                while (j && seg[j - 1] > v) {
                    seg[j] = seg[j - 1];
                    j--;
                }
                seg[j] = v;
            }
        } else {
            qsort(seg, count, sizeof(uint64_t), cmp_u64);
        }
    }
    int width;
    PyObject *offs_b = offsets_bytes(offs, n, &width);
    PyObject *recs_b = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)n * 8);
    PyObject *firsts_b = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(pages + 1) * 4);
    if (offs_b && recs_b && firsts_b) {
        unsigned char *r = (unsigned char *)PyBytes_AS_STRING(recs_b);
        unsigned char *f = (unsigned char *)PyBytes_AS_STRING(firsts_b);
        for (Py_ssize_t e = 0; e < n; e++) put_le(r + e * 8, recs[e], 8);
        for (size_t q = 0; q <= pages; q++) put_le(f + q * 4, firsts[q], 4);
        result = Py_BuildValue("(NiNNO)", offs_b, width, recs_b, firsts_b, big);
    } else {
        Py_XDECREF(offs_b);
        Py_XDECREF(recs_b);
        Py_XDECREF(firsts_b);
    }
done:
    free(offs);
    free(recs);
    free(crcs);
    free(firsts);
    Py_XDECREF(big);
    PyBuffer_Release(&view);
    return result;
}

/* block_records(records, page_bits, block_bits, block_width) -> bytes: the records of a block
 * index from n little-endian u64 records crc << 32 | entry: per record, the fingerprint byte
 * (the 8 crc bits after the page bits) and entry >> block_bits as block_width little-endian
 * bytes. Mirrors format/hash_index.py block_records (written by write/indexer.py). */
static PyObject *block_records(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view;
    int page_bits, block_bits, width;
    if (!PyArg_ParseTuple(args, "y*iii", &view, &page_bits, &block_bits, &width)) return NULL;
    PyObject *out = NULL;
    if (view.len % 8 || page_bits < 0 || page_bits > 31 || block_bits < 0 || block_bits > 31 || width < 1 ||
        width > 4) {
        PyErr_SetString(PyExc_ValueError, "block_records: arguments out of range");
        goto done;
    }
    Py_ssize_t n = view.len / 8, size = 1 + width;
    out = PyBytes_FromStringAndSize(NULL, n * size);
    if (!out) goto done;
    const unsigned char *r = view.buf;
    unsigned char *o = (unsigned char *)PyBytes_AS_STRING(out);
    for (Py_ssize_t i = 0; i < n; i++, r += 8, o += size) {
        uint32_t entry = (uint32_t)r[0] | (uint32_t)r[1] << 8 | (uint32_t)r[2] << 16 | (uint32_t)r[3] << 24;
        uint32_t crc = (uint32_t)r[4] | (uint32_t)r[5] << 8 | (uint32_t)r[6] << 16 | (uint32_t)r[7] << 24;
        o[0] = (unsigned char)((uint32_t)((uint64_t)crc << page_bits) >> 24);
        put_le(o + 1, entry >> block_bits, width);
    }
done:
    PyBuffer_Release(&view);
    return out;
}

/* ============================================================================================
 * Read: sources, hash-index lookups, spans of items, view lookups (msglc/io, msglc/read)
 * ============================================================================================ */

/* ---- local sources: mapped reads, File, Memory (io/local.py) ------------------------------- */

/* Mapped reads (C only: the Python path reads local files with os.pread, in io/local.py
 * FileSource.read). A read of a file's memory map past the file's end raises SIGBUS, which
 * kills the process; the file may be cut short by another program at any time. So the bytes are
 * only ever copied out of a map by guarded_copy, under a SIGBUS handler of msglc's: a fault
 * in the copy jumps back out of it and the copy fails (the caller then reads with pread, which
 * reports the short file as an error; a copy that may have met the zeros a cut leaves in its
 * last page fails too: guarded_copy). The handler passes every other SIGBUS on to the handler
 * it replaced (by default: the process is killed, as it would have been). It is installed
 * once, at the first map; a map is made only while it is the process's SIGBUS handler (a
 * handler installed after it that passes SIGBUS on, as faulthandler does, keeps the guard
 * working; one that swallows it does not, and is the installer's to answer for). */
#ifdef MSGLC_MAP
static __thread sigjmp_buf *bus_guard __attribute__((tls_model("initial-exec")));
static struct sigaction bus_previous;
static int bus_installed;

/* msglc's SIGBUS handler: a fault in guarded_copy fails that copy; any other SIGBUS goes to
 * the handler it replaced. */
static void bus_handler(int sig, siginfo_t *info, void *ctx) {
    sigjmp_buf *guard = bus_guard;
    if (guard) { /* a copy of ours faulted: it fails */
        bus_guard = NULL;
        sigset_t bus;
        sigemptyset(&bus);
        sigaddset(&bus, SIGBUS);
        pthread_sigmask(SIG_UNBLOCK, &bus, NULL); /* in case a handler before us blocked it */
        siglongjmp(*guard, 1);
    }
    /* anything else: as if this handler were not there */
    if (bus_previous.sa_flags & SA_SIGINFO) {
        if (bus_previous.sa_sigaction) bus_previous.sa_sigaction(sig, info, ctx);
        return;
    }
    if (bus_previous.sa_handler == SIG_IGN && info->si_code <= 0) return; /* a SIGBUS sent, ignored */
    if (bus_previous.sa_handler == SIG_DFL || bus_previous.sa_handler == SIG_IGN) {
        /* the default action: for a fault, the instruction runs again and the kernel kills
         * the process; a signal sent by kill() is sent again */
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigemptyset(&dfl.sa_mask);
        sigaction(sig, &dfl, NULL);
        if (info->si_code <= 0) raise(sig);
        return;
    }
    bus_previous.sa_handler(sig);
}

/* Is msglc's SIGBUS handler the process's (installed now if it never was)? */
static int bus_ready(void) {
    struct sigaction now;
    if (sigaction(SIGBUS, NULL, &now) != 0) return 0;
    if ((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == bus_handler) return 1;
    if (bus_installed) return 0; /* replaced since: chaining to the new one could loop back to us */
    struct sigaction ours;
    memset(&ours, 0, sizeof ours);
    ours.sa_sigaction = bus_handler;
    ours.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
    sigemptyset(&ours.sa_mask);
    bus_previous = now;
    if (sigaction(SIGBUS, &ours, NULL) != 0) return 0;
    bus_installed = 1;
    return 1;
}

/* Copy n bytes of a map to out, then read the byte at last (the map's last byte): 1, or 0 when
 * either faulted (the file is shorter now). A file cut short in the middle of a page leaves
 * the rest of that page mapped, reading as zeros, with no fault: so the copy must not come
 * from the map's last page (the caller's part), and a cut before that page is seen by the
 * read of last, which then faults. It comes after the copy: a truncation removes the pages
 * past the new end from every map before it zeroes the tail of the new last page, so a copy
 * that met those zeros is followed by a read of last that faults. */
static int guarded_copy(unsigned char *out, const unsigned char *from, size_t n, const unsigned char *last) {
    sigjmp_buf jump;
    if (sigsetjmp(jump, 0)) {
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        bus_guard = NULL;
        return 0;
    }
    bus_guard = &jump;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    memcpy(out, from, n);
    __atomic_thread_fence(__ATOMIC_ACQUIRE); /* the copy's loads before the next one */
    (void)*(const volatile unsigned char *)last;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    bus_guard = NULL;
    return 1;
}
#endif

/* File(fd[, map_size]): a local file's descriptor, for the lookups below to read without a
 * Python call per read: from a memory map of its first map_size bytes where the platform
 * allows one (MSGLC_MAP, above), made at the first read (an open that reads nothing through
 * it pays nothing), by pread otherwise and beyond them. close() marks it closed (the
 * descriptor belongs to its FileSource, which closes it) and lets the map go: a read that
 * finds it closed afterwards is refused, the number may have been reused. mapped is whether
 * reads come from a map (False before the first).
 * Copies from the map hold the GIL (a read of a page not in memory waits for the disk with
 * it, as Python's mmap does): close() cannot meet one, and a SIGBUS handler installed after
 * msglc's that reports on every thread (faulthandler) sees Python stand still, as it expects.
 * Mirrors io/local.py FileSource.read (os.pread), whose direct attribute holds it. */
typedef struct {
    PyObject_HEAD
    int fd, closed;
    unsigned char *map; /* NULL: none (yet, or any more) */
    Py_ssize_t map_len; /* the bytes to map (0: none) */
    Py_ssize_t map_safe; /* where the map's last page starts: copies end at or before it */
    int tried; /* the map was attempted (made or not) */
} File;

/* Lets the map go (C only, as the map is). */
static void file_unmap(File *self) {
#ifdef MSGLC_MAP
    if (self->map) munmap(self->map, (size_t)self->map_len);
#endif
    self->map = NULL;
}

/* File(fd[, map_size]), as io/local.py FileSource.__init__ makes it; nothing is mapped yet. */
static PyObject *file_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    int fd;
    Py_ssize_t map_size = 0;
    if ((kw && PyDict_GET_SIZE(kw)) || !PyArg_ParseTuple(args, "i|n", &fd, &map_size)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "File(fd[, map_size])");
        return NULL;
    }
    File *self = (File *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    self->fd = fd, self->closed = 0, self->map = NULL, self->tried = 0, self->map_safe = 0;
    self->map_len = map_size > 0 && (uint64_t)map_size <= (uint64_t)SIZE_MAX ? map_size : 0;
    return (PyObject *)self;
}

/* Map the file, the first time a read asks. */
static void file_map(File *self) {
    self->tried = 1;
#ifdef MSGLC_MAP
    if (!self->map_len || self->closed || !bus_ready()) return;
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0 || (page & (page - 1))) return;
    void *map = mmap(NULL, (size_t)self->map_len, PROT_READ, MAP_SHARED, self->fd, 0);
    if (map == MAP_FAILED) return; /* pread */
    self->map = (unsigned char *)map;
    self->map_safe = (self->map_len - 1) & ~(Py_ssize_t)(page - 1);
#endif
}

/* Lets the map go; the descriptor is its FileSource's. */
static void file_dealloc(File *self) {
    file_unmap(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* File.close(): reads are refused from now on. Called by io/local.py FileSource.close. */
static PyObject *file_close(File *self, PyObject *unused) {
    (void)unused;
    self->closed = 1;
    file_unmap(self);
    Py_RETURN_NONE;
}

#define GRID_DIMS 64 /* the most axes a NumPy array has (NumPy 2) */

static int file_copy(File *f, Py_ssize_t offset, Py_ssize_t size, unsigned char *out); /* below */
static int file_guarded(File *f);

/* The next index of a grid in C order (idx, below counts), and its offset at. */
static inline void grid_next(Py_ssize_t *at, Py_ssize_t *idx, const Py_ssize_t *counts, const Py_ssize_t *strides,
                             Py_ssize_t nd) {
    Py_ssize_t k = nd - 1;
    while (k >= 0) {
        *at += strides[k];
        if (++idx[k] < counts[k]) break;
        *at -= counts[k] * strides[k];
        idx[k--] = 0;
    }
}

/* File.read_grid(offset, counts, strides, size, out) -> pieces read: the pieces of size bytes
 * at offset + sum(i[k] * strides[k]) for every index i below counts, in C order, one after the
 * other into the writable buffer out (exactly their bytes), copied from the file's memory map
 * where it serves (as the lookups are), else by pread in one loop with the GIL released: a
 * block of an array costs a copy (or a system call) per row, not a Python call per row. It
 * stops at the first piece it cannot read whole (an error, the end of the file): the caller
 * reads that piece again to report why, and checks whether the file was closed meanwhile.
 * Mirrors the loop of io/local.py FileSource.read_grid (read_into per piece), which reads
 * again from the first piece not read here. */
static PyObject *file_read_grid(File *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5 || !PyTuple_Check(args[1]) || !PyTuple_Check(args[2]) ||
        PyTuple_GET_SIZE(args[1]) != PyTuple_GET_SIZE(args[2]) || PyTuple_GET_SIZE(args[1]) > GRID_DIMS) {
        PyErr_SetString(PyExc_TypeError, "read_grid(offset, counts: tuple, strides: tuple, size, out)");
        return NULL;
    }
    Py_ssize_t nd = PyTuple_GET_SIZE(args[1]);
    Py_ssize_t counts[GRID_DIMS], strides[GRID_DIMS], idx[GRID_DIMS];
    Py_ssize_t offset = PyLong_AsSsize_t(args[0]), size = PyLong_AsSsize_t(args[3]);
    if (PyErr_Occurred()) return NULL;
    Py_ssize_t total = 1, reach = offset; /* pieces, and the furthest byte (checked for overflow) */
    int bad = offset < 0 || size < 0;
    for (Py_ssize_t k = 0; k < nd; k++) {
        counts[k] = PyLong_AsSsize_t(PyTuple_GET_ITEM(args[1], k));
        strides[k] = PyLong_AsSsize_t(PyTuple_GET_ITEM(args[2], k));
        if (PyErr_Occurred()) return NULL;
        idx[k] = 0;
        if (counts[k] < 0 || strides[k] < 0) bad = 1;
        else if (counts[k] == 0) total = 0;
        else if ((total && total > PY_SSIZE_T_MAX / counts[k]) ||
                 (counts[k] > 1 && strides[k] > (PY_SSIZE_T_MAX - reach) / (counts[k] - 1)))
            bad = 1;
        else {
            total = total ? total * counts[k] : 0;
            reach += (counts[k] - 1) * strides[k];
        }
    }
    if (bad || (total && size > (PY_SSIZE_T_MAX - reach)) || (size && total > PY_SSIZE_T_MAX / size)) {
        PyErr_SetString(PyExc_ValueError, "read_grid: arguments out of range");
        return NULL;
    }
    Py_buffer out;
    if (PyObject_GetBuffer(args[4], &out, PyBUF_WRITABLE) < 0) return NULL;
    if (out.len != total * size) {
        PyBuffer_Release(&out);
        PyErr_Format(PyExc_ValueError, "read_grid: out holds %zd bytes, the pieces %zd", out.len, total * size);
        return NULL;
    }
    Py_ssize_t done = 0;
    if (!self->closed && size) {
        int fd = self->fd;
        unsigned char *buf = out.buf;
        Py_ssize_t at = offset;
        /* from the memory map while it serves (guarded, with the GIL: "Mapped reads" above), a
         * copy per piece instead of a system call; then by pread without the GIL */
        if (file_guarded(self))
            for (; done < total && file_copy(self, at, size, buf + done * size); done++)
                grid_next(&at, idx, counts, strides, nd);
        if (done < total) {
            Py_BEGIN_ALLOW_THREADS
            for (; done < total; done++) {
                Py_ssize_t got = 0;
                while (got < size) {
                    ssize_t n = pread(fd, buf + done * size + got, (size_t)(size - got), (off_t)(at + got));
                    if (n < 0 && errno == EINTR) continue;
                    if (n <= 0) break;
                    got += n;
                }
                if (got < size) break;
                grid_next(&at, idx, counts, strides, nd);
            }
            Py_END_ALLOW_THREADS
        }
    }
    PyBuffer_Release(&out);
    return PyLong_FromSsize_t(size ? done : total);
}

/* File.mapped: whether reads come from a memory map (tests/read/test_mapped_reads.py). */
static PyObject *file_mapped(File *self, void *unused) {
    (void)unused;
    return PyBool_FromLong(self->map != NULL);
}

/* Copy size bytes at offset from f's map to out: 1, 0 when they cannot come from the map
 * (none, closed, in or past its last page, or the file is shorter now: a fault). */
static int file_copy(File *f, Py_ssize_t offset, Py_ssize_t size, unsigned char *out) {
#ifdef MSGLC_MAP
    if (!f->tried) file_map(f);
    if (!f->map || f->closed || offset > f->map_safe - size) return 0; /* the last page: pread */
    return guarded_copy(out, f->map + offset, (size_t)size, f->map + f->map_len - 1);
#else
    (void)f, (void)offset, (void)size, (void)out;
    return 0;
#endif
}

/* Whether copies from f's map may be made now: a map, not closed, and msglc's SIGBUS handler
 * the process's. The reads made from Python (File.read, File.read_grid) check this at each
 * call: a system call, small beside their copies; a handler put in msglc's place since the map
 * was made (faulthandler.disable(), signal.signal) would let a file cut short kill or hang the
 * process (docs/reliability.md). The lookups rely on the check made when the map was made. */
static int file_guarded(File *f) {
#ifdef MSGLC_MAP
    if (!f->tried) file_map(f);
    return f->map && !f->closed && bus_ready();
#else
    (void)f;
    return 0;
#endif
}

/* File.read(offset, size) -> bytes | None: size bytes at offset copied from the file's memory
 * map ("Mapped reads" above: guarded, with the GIL), where a read from Python costs a copy
 * instead of a system call; None when they cannot come from the map (none, closed, in or past
 * its last page, msglc's SIGBUS handler no longer the process's, or the file is shorter now):
 * the caller reads them with pread, which reports why. Mirrors io/local.py FileSource.read,
 * which asks it first for reads of MAP_READ_MIN to MAP_READ bytes. */
static PyObject *file_read(File *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "read(offset, size)");
        return NULL;
    }
    Py_ssize_t offset = PyLong_AsSsize_t(args[0]), size = PyLong_AsSsize_t(args[1]);
    if (PyErr_Occurred()) return NULL;
    if (offset < 0 || size < 0) {
        PyErr_SetString(PyExc_ValueError, "read: offset and size must be >= 0");
        return NULL;
    }
#ifdef MSGLC_MAP
    if (file_guarded(self) && offset <= self->map_safe - size) { /* else nothing is allocated */
        PyObject *out = PyBytes_FromStringAndSize(NULL, size);
        if (!out) return NULL;
        if (file_copy(self, offset, size, (unsigned char *)PyBytes_AS_STRING(out))) return out;
        Py_DECREF(out);
    }
#endif
    Py_RETURN_NONE;
}

static PyMethodDef file_methods[] = {
    {"close", (PyCFunction)file_close, METH_NOARGS, "Refuse reads from now on."},
    {"read", (PyCFunction)(void (*)(void))file_read, METH_FASTCALL, "Bytes copied from the memory map, or None."},
    {"read_grid", (PyCFunction)(void (*)(void))file_read_grid, METH_FASTCALL,
     "Pieces of a strided grid, read into a buffer."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef file_getset[] = {
    {"mapped", (getter)file_mapped, NULL, "Whether reads come from a memory map.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject FileType = {
    /* clang-format off */
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "msglc._speedups.File",
    /* clang-format on */
    .tp_basicsize = sizeof(File),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A local file's descriptor (and memory map) for direct reads.",
    .tp_new = file_new,
    .tp_dealloc = (destructor)file_dealloc,
    .tp_methods = file_methods,
    .tp_getset = file_getset,
};

/* Memory(buffer): bytes in memory (bytes, a user's mmap) for the C reads, copied out (as the
 * Python path slices them: a user's map of a file cut short is the user's to answer for, see
 * docs/reliability.md). close() lets the buffer go; copies hold the GIL, so it cannot meet one.
 * Mirrors io/local.py BufferSource.read (a slice), whose direct attribute holds it. */
typedef struct {
    PyObject_HEAD
    Py_buffer view;
    int has_view;
} Memory;

/* Memory(buffer), as io/local.py BufferSource.__init__ makes it: the buffer is held. */
static PyObject *memory_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    PyObject *obj;
    if ((kw && PyDict_GET_SIZE(kw)) || !PyArg_ParseTuple(args, "O", &obj)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "Memory(buffer)");
        return NULL;
    }
    Memory *self = (Memory *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    if (PyObject_GetBuffer(obj, &self->view, PyBUF_SIMPLE) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    self->has_view = 1;
    return (PyObject *)self;
}

/* Memory.close(): the buffer let go, reads refused (io/local.py BufferSource.close). */
static PyObject *memory_close(Memory *self, PyObject *unused) {
    (void)unused;
    if (self->has_view) PyBuffer_Release(&self->view);
    self->has_view = 0;
    Py_RETURN_NONE;
}

/* Lets the buffer go. */
static void memory_dealloc(Memory *self) {
    if (self->has_view) PyBuffer_Release(&self->view);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef memory_methods[] = {
    {"close", (PyCFunction)memory_close, METH_NOARGS, "Let the buffer go; reads from now on are refused."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject MemoryType = {
    /* clang-format off */
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "msglc._speedups.Memory",
    /* clang-format on */
    .tp_basicsize = sizeof(Memory),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Bytes in memory for direct reads.",
    .tp_new = memory_new,
    .tp_dealloc = (destructor)memory_dealloc,
    .tp_methods = memory_methods,
};

/* Bytes read for a lookup: in the caller's buffer, or held by a Python object. */
typedef struct {
    PyObject *holder;
    Py_buffer view;
    int has_view;
} Held;

/* Lets the bytes go (a no-op for bytes in the caller's buffer). */
static void held_release(Held *h) {
    if (h->has_view) PyBuffer_Release(&h->view);
    Py_CLEAR(h->holder);
    h->has_view = 0;
}

/* The size bytes at offset through src: a File (copied from its map, or pread, into buf when
 * they fit in cap bytes, else into a new bytes object), a Memory (copied likewise) or a
 * callable read(offset, size). 1 with *data set (release held after use), 0 when the Python
 * path should read them (a short read, a failed or closed file, a result of another size), -1
 * with an exception (raised by read). Mirrors the archive's read(offset, size) (read/archive.py
 * Archive._bind); src is its c_read. */
static int src_read(PyObject *src, Py_ssize_t offset, Py_ssize_t size, unsigned char *buf, Py_ssize_t cap,
                    const unsigned char **data, Held *held) {
    held->holder = NULL, held->has_view = 0;
    if (offset < 0 || size < 0) return 0;
    if (Py_IS_TYPE(src, &FileType) || Py_IS_TYPE(src, &MemoryType)) {
        unsigned char *out = buf;
        if (size > cap) {
            held->holder = PyBytes_FromStringAndSize(NULL, size);
            if (!held->holder) return -1;
            out = (unsigned char *)PyBytes_AS_STRING(held->holder);
        }
        if (Py_IS_TYPE(src, &MemoryType)) {
            Memory *m = (Memory *)src;
            int ok = m->has_view && offset <= m->view.len - size;
            if (ok) memcpy(out, (const unsigned char *)m->view.buf + offset, (size_t)size);
            if (!ok) {
                held_release(held);
                return 0;
            }
            *data = out;
            return 1;
        }
        File *f = (File *)src;
        if (f->closed) {
            held_release(held);
            return 0;
        }
        if (file_copy(f, offset, size, out)) {
            *data = out;
            return 1;
        }
        Py_ssize_t done = 0;
        int failed = 0;
        Py_BEGIN_ALLOW_THREADS
        while (done < size) {
            ssize_t got = pread(f->fd, out + done, (size_t)(size - done), (off_t)(offset + done));
            if (got < 0 && errno == EINTR) continue;
            if (got <= 0) {
                failed = 1;
                break;
            }
            done += got;
        }
        Py_END_ALLOW_THREADS
        if (failed || f->closed) {
            held_release(held);
            return 0;
        }
        *data = out;
        return 1;
    }
    PyObject *args[2] = {PyLong_FromSsize_t(offset), PyLong_FromSsize_t(size)};
    PyObject *got = NULL;
    if (args[0] && args[1]) got = PyObject_Vectorcall(src, args, 2, NULL);
    Py_XDECREF(args[0]);
    Py_XDECREF(args[1]);
    if (!got) return -1;
    held->holder = got;
    if (PyObject_GetBuffer(got, &held->view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        held_release(held);
        return 0;
    }
    held->has_view = 1;
    if (held->view.len != size) {
        held_release(held);
        return 0;
    }
    *data = held->view.buf;
    return 1;
}

/* ---- block hash index lookups (format/hash_index.py) --------------------------------------- */

/* The candidates of fingerprint fp among the n records at r (size bytes each): the distinct
 * blocks in record order into seen[], how many records name each into counts[] (both room
 * for n), deduped through slots[] (cap entries, a power of two >= 2n). Returns how many, or
 * -1 - i when record i names a block >= blocks. The loop of format/hash_index.py page_blocks;
 * BlockProbe's lookups call it too. */
static Py_ssize_t fp_blocks(const unsigned char *r, Py_ssize_t n, int size, int fp, uint64_t blocks, uint64_t *seen,
                            Py_ssize_t *counts, Py_ssize_t *slots, size_t cap) {
    Py_ssize_t found = 0;
    for (size_t q = 0; q < cap; q++) slots[q] = -1;
    for (Py_ssize_t i = 0; i < n; i++, r += size) {
        if (r[0] != fp) continue;
        uint64_t block = 0;
        for (int k = size - 1; k >= 1; k--) block = (block << 8) | r[k];
        if (block >= blocks) return -1 - i;
        size_t q = (size_t)(block * 0x9E3779B97F4A7C15ull) & (cap - 1);
        while (slots[q] >= 0 && seen[slots[q]] != block) q = (q + 1) & (cap - 1);
        if (slots[q] < 0) {
            slots[q] = found;
            seen[found] = block;
            counts[found++] = 0;
        }
        counts[slots[q]]++;
    }
    return found;
}

/* Room for fp_blocks over n records: on the stack for a usual page, else from the heap. */
typedef struct {
    uint64_t seen_s[128];
    Py_ssize_t counts_s[128], slots_s[256];
    uint64_t *seen;
    Py_ssize_t *counts, *slots;
    size_t cap;
} Candidates;

/* Room for n records; -1 with MemoryError. */
static int candidates_init(Candidates *c, Py_ssize_t n) {
    c->cap = 16; /* an open-addressing table block -> candidate, twice the records: linear in a crafted page too */
    while (c->cap < 2 * (size_t)(n ? n : 1)) c->cap <<= 1;
    if (n <= 128) {
        c->seen = c->seen_s, c->counts = c->counts_s, c->slots = c->slots_s;
        return 0;
    }
    c->seen = malloc(sizeof(uint64_t) * (size_t)n);
    c->counts = malloc(sizeof(Py_ssize_t) * (size_t)n);
    c->slots = malloc(sizeof(Py_ssize_t) * c->cap);
    if (c->seen && c->counts && c->slots) return 0;
    PyErr_NoMemory();
    return -1;
}

/* Frees what candidates_init took from the heap. */
static void candidates_free(Candidates *c) {
    if (c->seen != c->seen_s) {
        free(c->seen);
        free(c->counts);
        free(c->slots);
    }
}

/* page_blocks(records, size, fp, blocks) -> [(block, count), ...]: the blocks named by the
 * records (size bytes each: a fingerprint byte, then a little-endian block number) whose
 * fingerprint is fp, in record order, each with how many of them name it; ValueError naming
 * the record's index if one names a block >= blocks. Mirrors format/hash_index.py
 * page_blocks. */
static PyObject *page_blocks(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view;
    int size, fp;
    Py_ssize_t blocks;
    if (!PyArg_ParseTuple(args, "y*iin", &view, &size, &fp, &blocks)) return NULL;
    PyObject *out = NULL;
    Candidates c = {.seen = NULL};
    if (size < 2 || size > 5 || view.len % size || blocks < 0) {
        PyErr_SetString(PyExc_ValueError, "page_blocks: arguments out of range");
        PyBuffer_Release(&view);
        return NULL;
    }
    Py_ssize_t n = view.len / size;
    if (candidates_init(&c, n) < 0) goto done;
    Py_ssize_t found = fp_blocks(view.buf, n, size, fp, (uint64_t)blocks, c.seen, c.counts, c.slots, c.cap);
    if (found < 0) {
        const unsigned char *r = (const unsigned char *)view.buf + (-1 - found) * size;
        uint64_t block = 0;
        for (int k = size - 1; k >= 1; k--) block = (block << 8) | r[k];
        PyErr_Format(PyExc_ValueError, "record %zd names block %llu of %zd", -1 - found, (unsigned long long)block,
                     blocks);
        goto done;
    }
    out = PyList_New(found);
    if (!out) goto done;
    for (Py_ssize_t j = 0; j < found; j++) {
        PyObject *item = Py_BuildValue("(Kn)", (unsigned long long)c.seen[j], c.counts[j]);
        if (!item) {
            Py_CLEAR(out);
            goto done;
        }
        PyList_SET_ITEM(out, j, item);
    }
done:
    candidates_free(&c);
    PyBuffer_Release(&view);
    return out;
}

/* key_crcs(block, count) -> [crc32 of each key]: the keys of the count entries (key, value,
 * ...) that make block, hashed without decoding (nesting costs no recursion); ValueError if
 * the block is not exactly count entries. Mirrors format/hash_index.py block_key_crcs. */
static PyObject *key_crcs(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view;
    Py_ssize_t count;
    if (!PyArg_ParseTuple(args, "y*n", &view, &count)) return NULL;
    PyObject *out = NULL;
    const unsigned char *buf = view.buf, *end = buf + view.len, *p = buf, *v;
    if (count < 0 || count > view.len) {
        PyErr_SetString(PyExc_ValueError, "key_crcs: not as many msgpack entries as the index says");
        goto done;
    }
    out = PyList_New(count);
    if (!out) goto done;
    for (Py_ssize_t e = 0; e < count; e++) {
        const unsigned char *key = p;
        if (!(v = skip(key, end)) || !(p = skip(v, end))) {
            PyErr_SetString(PyExc_ValueError, "key_crcs: not as many msgpack entries as the index says");
            Py_CLEAR(out);
            goto done;
        }
        PyObject *crc = PyLong_FromUnsignedLong(crc32_of(key, (size_t)(v - key)));
        if (!crc) {
            Py_CLEAR(out);
            goto done;
        }
        PyList_SET_ITEM(out, e, crc);
    }
    if (p != end) {
        PyErr_SetString(PyExc_ValueError, "key_crcs: not as many msgpack entries as the index says");
        Py_CLEAR(out);
    }
done:
    PyBuffer_Release(&view);
    return out;
}

/* Walk the count entries (key, value, ...) that must make [buf, end) exactly; *at and *stop
 * get the value of the entry whose key is encoded as key (NULL if none). -1 if they do not
 * make it. The walk of find_entry and of BlockProbe's lookups. */
static int walk_entries(const unsigned char *buf, const unsigned char *end, Py_ssize_t count, const unsigned char *key,
                        Py_ssize_t klen, const unsigned char **at, const unsigned char **stop) {
    const unsigned char *p = buf, *v, *q;
    *at = *stop = NULL;
    if (count < 0) return -1;
    for (Py_ssize_t e = 0; e < count; e++) { /* the whole block is walked: it must be count entries */
        if (!(v = skip(p, end)) || !(q = skip(v, end))) return -1;
        if (!*at && v - p == klen && memcmp(p, key, (size_t)klen) == 0) {
            *at = v;
            *stop = q;
        }
        p = q;
    }
    return p == end ? 0 : -1;
}

/* find_entry(block, count, key) -> (start, end) | None: the value of the entry whose key is
 * encoded exactly as key, among the count entries (key, value, ...) that make block; None if
 * none is, and ValueError if block is not exactly count entries (items are skipped, never
 * decoded; the whole block is walked, as the pure-Python path decodes it whole). Mirrors
 * format/hash_index.py find_entry. */
static PyObject *find_entry(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view, key;
    Py_ssize_t count;
    if (!PyArg_ParseTuple(args, "y*ny*", &view, &count, &key)) return NULL;
    PyObject *result = NULL;
    const unsigned char *buf = view.buf, *at, *stop;
    if (walk_entries(buf, buf + view.len, count, key.buf, key.len, &at, &stop) < 0) {
        PyErr_SetString(PyExc_ValueError, "find_entry: not as many msgpack entries as the index says");
    } else if (at) {
        result = Py_BuildValue("(nn)", (Py_ssize_t)(at - buf), (Py_ssize_t)(stop - buf));
    } else {
        result = Py_None;
        Py_INCREF(result);
    }
    PyBuffer_Release(&view);
    PyBuffer_Release(&key);
    return result;
}

/* BlockProbe(pages, offs, width, kids, records_at, n, page_bits, blocks, block_bits, span_lo,
 * span_hi): one dict's block index (read/dict_index.py BlockIndex, which makes it) with its
 * page table and block offsets in memory; probe.find(read, base, key, h) looks the key up
 * with read(offset, size) for the page's records and each candidate block: (offset, value
 * bytes), or None for a key the dict does not hold. It returns NotImplemented for anything
 * unusual (a checksum that fails, bounds that do not fit, a block around a large value, a
 * miss the records do not explain): the Python path then answers, with its errors. kids:
 * sorted native u64 pairs (start, end) of the entries whose value has a node of its own.
 * A page's records, once read and found to match their checksum, are kept (when all the
 * dict's records take at most RECORDS_KEPT bytes): a later lookup in that page reads only its
 * block, one pread instead of two. Each page's records get an allocation of their own when
 * kept, so memory grows with the pages looked up (plus a pointer a page), never past that: one
 * buffer for all the records, even calloc'd, costs them all at the first lookup (calloc clears
 * what it takes from the heap: most dicts are far below malloc's mmap threshold).
 * With fuse = (slot_bits, seed, seg_bits, seg_count, slots_size) it is the probe of a fuse index
 * (type 7, read/dict_index.py FuseIndex) instead: pages is then the CRC-32 (u32 LE) of each
 * FUSE_CHUNK bytes of the slots, which start at records_at (page_bits 0); a key's block is the
 * xor of its three slots, each read with its chunk (checked, and kept while the slots take at
 * most FUSE_KEPT bytes), and a key its block does not hold is simply absent.
 * Mirrors read/dict_index.py BlockIndex.find (probe_find), BlockIndex._candidates (probe_blocks:
 * what a lookup walks, for the Python path, from what the probe keeps) and read/views.py
 * LazyHashDict._lookup (probe_get: find, then decode). */
#define RECORDS_KEPT (16 << 20)
/* Python's values, exported for tests/format/test_fuse.py to compare: */
#define FUSE_CHUNK 1024 /* format/fuse.py CHUNK: slot bytes per CRC */
#define FUSE_KEPT (16 << 20) /* read/dict_index.py FUSE_KEPT */
#define FUSE_MAX_SEG_BITS 18 /* format/fuse.py MAX_SEG_BITS */

static unsigned char kept_empty[1]; /* the records of a page without any (or an empty chunk), kept */

/* Keeps a copy of the size bytes at data, checked, in *slot for later lookups, unless a copy
 * is there (another thread's lookup kept them while this one read); nothing when the
 * allocation fails (the next lookup reads them again). The index pieces of BlockProbe (page
 * records, a fuse's slot chunks) and DirectProbe (record chunks); free them with kept_free. */
static void keep_checked(unsigned char **slot, const unsigned char *data, size_t size) {
    if (*slot) return;
    unsigned char *copy = size ? PyMem_Malloc(size) : kept_empty;
    if (copy && size) memcpy(copy, data, size);
    *slot = copy;
}

/* Frees the n pieces keep_checked kept in kept, and kept itself. */
static void kept_free(unsigned char **kept, Py_ssize_t n) {
    if (!kept) return;
    for (Py_ssize_t i = 0; i < n; i++)
        if (kept[i] != kept_empty) PyMem_Free(kept[i]);
    PyMem_Free(kept);
}

typedef struct {
    PyObject_HEAD
    PyObject *pages, *offs, *kids; /* bytes */
    Py_ssize_t records_at, n, blocks, span_lo, span_hi, nkids;
    int width, page_bits, block_bits, size;
    unsigned char *
        *kept; /* a page's records (a fuse's chunk) once read and checked (NULL: not yet), or NULL: none kept */
    Py_ssize_t nkept; /* pages (chunks) that kept covers */
    int fuse, slot_bits, seg_bits; /* a fuse index (type 7): its shape (fuse_block) */
    uint64_t seed, seg_count;
    Py_ssize_t slots_size;
} BlockProbe;

/* Frees the kept records (C only). */
static void probe_dealloc(BlockProbe *self) {
    Py_XDECREF(self->pages);
    Py_XDECREF(self->offs);
    Py_XDECREF(self->kids);
    kept_free(self->kept, self->nkept);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* int.from_bytes(p[:n], "little"): the index's page table and block offsets. */
static uint64_t le(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

/* BlockProbe(...): the arguments checked (ValueError), as BlockIndex.__init__ makes them. */
static PyObject *probe_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    PyObject *pages, *offs, *kids, *fuse = Py_None;
    int width, page_bits, block_bits, slot_bits = 0, seg_bits = 0;
    Py_ssize_t records_at, n, blocks, span_lo, span_hi, slots_size = 0;
    unsigned long long seed = 0, seg_count = 0;
    if (kw && PyDict_GET_SIZE(kw)) {
        PyErr_SetString(PyExc_TypeError, "BlockProbe takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "SSiSnnininn|O", &pages, &offs, &width, &kids, &records_at, &n, &page_bits, &blocks,
                          &block_bits, &span_lo, &span_hi, &fuse))
        return NULL;
    PyObject *seed_obj, *seg_count_obj;
    if (fuse != Py_None) { /* seed and seg_count range-checked (a "K" format would take them modulo 2**64) */
        if (!PyArg_ParseTuple(fuse, "iO!iO!n", &slot_bits, &PyLong_Type, &seed_obj, &seg_bits, &PyLong_Type,
                              &seg_count_obj, &slots_size))
            return NULL;
        seed = PyLong_AsUnsignedLongLong(seed_obj);
        if (!PyErr_Occurred()) seg_count = PyLong_AsUnsignedLongLong(seg_count_obj); /* no call with an error set */
        if (PyErr_Occurred()) {
            if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return NULL;
            PyErr_Clear();
            seg_count = 0; /* refused below */
        }
    }
    Py_ssize_t size = 1;
    while (size < 8 && (blocks - 1) >> (8 * size)) size++; /* block_width(): the fewest bytes that hold the largest */
    Py_ssize_t nkept = page_bits >= 0 && page_bits <= 31 ? (Py_ssize_t)1 << page_bits : 0, table = (nkept + 1) * 8;
    int fits = 1;
    if (fuse != Py_None) { /* the slots' size and chunk CRCs as format/fuse.py fuse_layout has them */
        fits = slot_bits >= 1 && slot_bits <= 32 && seg_bits >= 0 && seg_bits <= FUSE_MAX_SEG_BITS && seg_count >= 1 &&
               seg_count <= (1ull << 32) && page_bits == 0 &&
               (unsigned long long)slots_size ==
                   ((((seg_count + 2) << seg_bits) * (unsigned long long)slot_bits + 7) >> 3);
        nkept = (slots_size + FUSE_CHUNK - 1) / FUSE_CHUNK, table = 4 * nkept;
    }
    if (!fits || (width != 4 && width != 8) || page_bits < 0 || page_bits > 31 || block_bits < 0 || block_bits > 30 ||
        n < 0 || blocks < 1 || size > 4 || PyBytes_GET_SIZE(pages) != table ||
        PyBytes_GET_SIZE(offs) != (blocks + 1) * width || PyBytes_GET_SIZE(kids) % 16) {
        PyErr_SetString(PyExc_ValueError, "BlockProbe: arguments out of range");
        return NULL;
    }
    BlockProbe *self = (BlockProbe *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    Py_INCREF(pages), Py_INCREF(offs), Py_INCREF(kids);
    self->pages = pages, self->offs = offs, self->kids = kids;
    self->width = width, self->page_bits = page_bits, self->block_bits = block_bits, self->size = 1 + (int)size;
    self->records_at = records_at, self->n = n, self->blocks = blocks, self->span_lo = span_lo, self->span_hi = span_hi;
    self->nkids = PyBytes_GET_SIZE(kids) / 16;
    self->fuse = fuse != Py_None, self->slot_bits = slot_bits, self->seg_bits = seg_bits;
    self->seed = seed, self->seg_count = seg_count, self->slots_size = slots_size;
    self->kept = NULL, self->nkept = nkept;
    if (self->fuse ? slots_size <= FUSE_KEPT : n > 0 && (size + 1) * n <= RECORDS_KEPT) /* NULL (no memory to
                                                                                          * spare): read each time */
        self->kept = PyMem_Calloc((size_t)nkept, sizeof(unsigned char *));
    return (PyObject *)self;
}

/* Does the block [start, stop) hold a large value's entry? Such a block is left to
 * read/dict_index.py BlockIndex._around_kids. */
static int probe_kid_inside(BlockProbe *self, uint64_t start, uint64_t stop) {
    const uint64_t *k = (const uint64_t *)PyBytes_AS_STRING(self->kids);
    Py_ssize_t lo = 0, hi = self->nkids;
    while (lo < hi) { /* the first kid starting at or after start */
        Py_ssize_t mid = (lo + hi) / 2;
        if (k[2 * mid] < start) lo = mid + 1;
        else hi = mid;
    }
    return lo < self->nkids && k[2 * lo] < stop;
}

/* How many of the count entries of [p, end) have a key whose CRC-32 falls in the page and
 * has the fingerprint of the records (a miss must find as many as the records name). Mirrors
 * read/dict_index.py BlockIndex._check_sharing. */
static Py_ssize_t sharing_keys(const unsigned char *p, const unsigned char *end, Py_ssize_t count, int bits,
                               uint32_t page, int fp) {
    Py_ssize_t same = 0;
    for (Py_ssize_t e = 0; e < count; e++) {
        const unsigned char *v = skip(p, end), *q = v ? skip(v, end) : NULL;
        if (!q) return -1;
        uint32_t c = crc32_of(p, (size_t)(v - p));
        if ((bits ? c >> (32 - bits) : 0) == page && (int)((uint32_t)((uint64_t)c << bits) >> 24) == fp) same++;
        p = q;
    }
    return same;
}

#define RECS_CAP 1024
#define BLOCK_CAP 8192

static uint64_t fuse_mix(uint64_t x, uint64_t seed);
static void fuse_slots(uint64_t h, int seg_bits, uint64_t seg_count, uint64_t *slot);

/* The w bits (32 at most) that start at bit shift (0-7) of b, least significant bit first:
 * a slot's value from the (shift + w + 7) / 8 bytes that hold it. */
static uint32_t bits_at(const unsigned char *b, int shift, int w) {
    return (uint32_t)((le(b, (shift + w + 7) >> 3) >> shift) & (((uint64_t)1 << w) - 1));
}

#define FUSE_SPAN_CHUNKS 16 /* a lookup's three slots within this many chunks are read in one */

/* Chunks c0..c1 of a fuse's slots read in one request (data NULL: none), their CRCs not yet
 * checked. */
typedef struct {
    const unsigned char *data;
    uint64_t c0, c1;
} SlotSpan;

/* Chunk c of a fuse's slots (*len bytes) at *chunk: kept, or taken from span, or read (into
 * buf, FUSE_CHUNK bytes, or held), then checked against its CRC and kept: 1, 0 for the Python
 * path (a read that fails, a chunk that fails its checksum or lies past the slots), -1 with
 * an exception. Mirrors read/dict_index.py FuseIndex._chunk. */
static int fuse_chunk(BlockProbe *self, PyObject *src, uint64_t c, const SlotSpan *span, unsigned char *buf,
                      const unsigned char **chunk, Py_ssize_t *len, Held *held) {
    held->holder = NULL, held->has_view = 0;
    if (c >= (uint64_t)self->nkept) return 0;
    Py_ssize_t size = self->slots_size - (Py_ssize_t)c * FUSE_CHUNK;
    *len = size = size < FUSE_CHUNK ? size : FUSE_CHUNK;
    if (self->kept && self->kept[c]) {
        *chunk = self->kept[c];
        return 1;
    }
    if (span->data && span->c0 <= c && c <= span->c1) {
        *chunk = span->data + (c - span->c0) * FUSE_CHUNK;
    } else {
        int got = src_read(src, self->records_at + (Py_ssize_t)c * FUSE_CHUNK, size, buf, FUSE_CHUNK, chunk, held);
        if (got <= 0) return got;
    }
    const unsigned char *crcs = (const unsigned char *)PyBytes_AS_STRING(self->pages);
    if (crc32_of(*chunk, (size_t)size) != (uint32_t)le(crcs + 4 * c, 4)) {
        held_release(held);
        return 0;
    }
    if (self->kept) keep_checked(&self->kept[c], *chunk, (size_t)size);
    return 1;
}

/* The block that the fuse's three slots name for the key encoded as key: 1 with *block, 2
 * for the Python path, -1 with an exception. The slots lie in three consecutive segments: in
 * a lookup table of up to about 400,000 keys (4 KB blocks) mostly within FUSE_SPAN_CHUNKS
 * chunks, which are then read in one request where not all kept (else, or where that read
 * reports damage, a chunk at a time). Mirrors
 * read/dict_index.py FuseIndex._candidates (_slot: a slot's bytes may lie in two chunks;
 * those past the slots' end count as 0). */
static int fuse_block(BlockProbe *self, PyObject *src, const unsigned char *key, Py_ssize_t klen, uint64_t *block) {
    uint64_t slot[3], first[3], c_lo = UINT64_MAX, c_hi = 0;
    int w = self->slot_bits, nbytes[3], kept = self->kept != NULL;
    fuse_slots(fuse_mix(key_base_hash(key, (size_t)klen), self->seed), self->seg_bits, self->seg_count, slot);
    for (int s = 0; s < 3; s++) {
        uint64_t bit = slot[s] * (uint64_t)w;
        first[s] = bit >> 3, nbytes[s] = (int)(((bit & 7) + (uint64_t)w + 7) >> 3); /* 5 at most */
        for (uint64_t c = first[s] / FUSE_CHUNK; c <= (first[s] + (uint64_t)nbytes[s] - 1) / FUSE_CHUNK; c++) {
            c_lo = c < c_lo ? c : c_lo, c_hi = c > c_hi ? c : c_hi;
            kept = kept && c < (uint64_t)self->nkept && self->kept[c];
        }
    }
    unsigned char buf[FUSE_CHUNK], spanbuf[FUSE_SPAN_CHUNKS * FUSE_CHUNK];
    SlotSpan span = {.data = NULL, .c0 = c_lo, .c1 = c_hi};
    Held sh = {.holder = NULL, .has_view = 0};
    if (!kept && c_hi > c_lo && c_hi - c_lo < FUSE_SPAN_CHUNKS && c_hi < (uint64_t)self->nkept) {
        Py_ssize_t at = (Py_ssize_t)c_lo * FUSE_CHUNK, end = ((Py_ssize_t)c_hi + 1) * FUSE_CHUNK;
        end = end < self->slots_size ? end : self->slots_size;
        int got = src_read(src, self->records_at + at, end - at, spanbuf, sizeof spanbuf, &span.data, &sh);
        if (got < 0 && PyErr_ExceptionMatches(PyExc_ValueError)) {
            /* Damage the read reports (an MsglcError) may lie between the slots, in bytes this
             * lookup does not need (a frame of their own): the slots' chunks alone are read,
             * as the Python path reads them, and report it if it is theirs. */
            PyErr_Clear();
            span.data = NULL;
        } else if (got <= 0) {
            return got < 0 ? -1 : 2;
        }
    }
    uint64_t x = 0;
    int status = 1;
    for (int s = 0; s < 3 && status == 1; s++) {
        unsigned char word[8] = {0};
        for (uint64_t c = first[s] / FUSE_CHUNK; c <= (first[s] + (uint64_t)nbytes[s] - 1) / FUSE_CHUNK; c++) {
            const unsigned char *chunk;
            Py_ssize_t len;
            Held held;
            int got = fuse_chunk(self, src, c, &span, buf, &chunk, &len, &held);
            if (got <= 0) {
                status = got < 0 ? -1 : 2;
                break;
            }
            for (int k = 0; k < nbytes[s]; k++) {
                uint64_t at = first[s] + (uint64_t)k;
                if (at / FUSE_CHUNK == c && at % FUSE_CHUNK < (uint64_t)len) word[k] = chunk[at % FUSE_CHUNK];
            }
            held_release(&held);
        }
        x ^= bits_at(word, (int)((slot[s] * (uint64_t)w) & 7), w);
    }
    held_release(&sh);
    *block = x;
    return status;
}

/* The candidate blocks of hash h: the distinct blocks its page's records name with its
 * fingerprint, with how many name each (c: candidates_init'd here; *found of them, or -1 for a
 * record naming no block), or for a fuse the block its slots name (one, or none: *found 0).
 * 1, 2 for the Python path (a read or checksum that fails, page bounds that do not fit), -1
 * with an exception. Mirrors read/dict_index.py BlockIndex._candidates (FuseIndex's). */
static int probe_candidates(BlockProbe *self, PyObject *src, const unsigned char *key, Py_ssize_t klen, uint32_t h,
                            Candidates *c, Py_ssize_t *found) {
    int bits = self->page_bits, size = self->size, got;
    *found = -1;
    if (self->fuse) {
        uint64_t block;
        if ((got = fuse_block(self, src, key, klen, &block)) != 1) return got;
        if (candidates_init(c, 1) < 0) return -1;
        c->seen[0] = block, c->counts[0] = 1, *found = block < (uint64_t)self->blocks;
        return 1;
    }
    uint32_t page = bits ? h >> (32 - bits) : 0;
    const unsigned char *slot = (const unsigned char *)PyBytes_AS_STRING(self->pages) + 8 * (size_t)page;
    uint64_t first = le(slot, 4), crc = le(slot + 4, 4), end = le(slot + 8, 4);
    if (!(first <= end && end <= (uint64_t)self->n)) return 2;
    Py_ssize_t nrecs = (Py_ssize_t)(end - first);
    unsigned char recbuf[RECS_CAP];
    const unsigned char *recs;
    Held rh = {.holder = NULL, .has_view = 0};
    if (self->kept && self->kept[page]) {
        recs = self->kept[page];
    } else {
        got = src_read(src, self->records_at + size * (Py_ssize_t)first, size * nrecs, recbuf, RECS_CAP, &recs, &rh);
        if (got <= 0) return got < 0 ? -1 : 2;
        if (crc32_of(recs, (size_t)(size * nrecs)) != crc) {
            held_release(&rh);
            return 2;
        }
        if (self->kept) keep_checked(&self->kept[page], recs, (size_t)(size * nrecs));
    }
    int fp = (int)((uint32_t)((uint64_t)h << bits) >> 24);
    if (candidates_init(c, nrecs) == 0)
        *found = fp_blocks(recs, nrecs, size, fp, (uint64_t)self->blocks, c->seen, c->counts, c->slots, c->cap);
    held_release(&rh);
    if (*found < 0) return PyErr_Occurred() ? -1 : 2;
    return 1;
}

/* Where the value of the key encoded as key (CRC-32 h) is, in the dict whose first byte is at
 * base, read through src: 1 with *at, *len pointing into blockbuf or held (release it) and
 * *where its offset; 0 for a key the dict does not hold; 2 for anything unusual (the Python
 * path answers); -1 with an exception. Mirrors read/dict_index.py BlockIndex.find
 * (_candidates, _in_block). */
static int probe_locate(BlockProbe *self, PyObject *src, Py_ssize_t base, const unsigned char *key, Py_ssize_t klen,
                        uint32_t h, unsigned char *blockbuf, Held *held, const unsigned char **at, Py_ssize_t *len,
                        Py_ssize_t *where) {
    int bits = self->page_bits, width = self->width, bb = self->block_bits;
    uint32_t page = bits ? h >> (32 - bits) : 0;
    int fp = (int)((uint32_t)((uint64_t)h << bits) >> 24);
    held->holder = NULL, held->has_view = 0;
    Candidates c = {.seen = NULL};
    Py_ssize_t found;
    int status = probe_candidates(self, src, key, klen, h, &c, &found), got;
    if (status != 1) {
        candidates_free(&c);
        return status;
    }
    status = 0;
    const unsigned char *offs = (const unsigned char *)PyBytes_AS_STRING(self->offs);
    for (Py_ssize_t j = 0; j < found; j++) {
        uint64_t block = c.seen[j];
        uint64_t start = le(offs + block * width, width), stop = le(offs + (block + 1) * width, width);
        if (!((uint64_t)self->span_lo <= start && start < stop && stop <= (uint64_t)self->span_hi) ||
            probe_kid_inside(self, start, stop)) {
            status = 2;
            goto done;
        }
        Py_ssize_t entries = self->n - (Py_ssize_t)(block << bb);
        if (entries > ((Py_ssize_t)1 << bb)) entries = (Py_ssize_t)1 << bb;
        const unsigned char *buf, *v, *vend;
        got = src_read(src, base + (Py_ssize_t)start, (Py_ssize_t)(stop - start), blockbuf, BLOCK_CAP, &buf, held);
        if (got <= 0) {
            status = got < 0 ? -1 : 2;
            goto done;
        }
        const unsigned char *bend = buf + (stop - start);
        int ok = walk_entries(buf, bend, entries, key, klen, &v, &vend) == 0;
        if (ok && v) {
            *at = v, *len = vend - v, *where = base + (Py_ssize_t)start + (v - buf);
            status = 1;
            goto done;
        }
        int clean_miss = ok && (self->fuse || sharing_keys(buf, bend, entries, bits, page, fp) == c.counts[j]);
        held_release(held);
        if (!clean_miss) {
            status = 2; /* not its entries, or other keys than the records say */
            goto done;
        }
    }
done:
    candidates_free(&c);
    return status;
}

/* What find() returns for a lookup's status (probe_locate, direct_locate): (offset, value
 * bytes), None or NotImplemented; NULL for -1 (an exception). The bytes are let go. */
static PyObject *found_tuple(int status, const unsigned char *at, Py_ssize_t len, Py_ssize_t where, Held *held) {
    PyObject *result = NULL;
    if (status == 1) result = Py_BuildValue("(ny#)", where, (const char *)at, len);
    else if (status == 0) result = Py_NewRef(Py_None);
    else if (status == 2) result = Py_NewRef(Py_NotImplemented);
    held_release(held);
    return result;
}

/* probe.find(read, base, key, h) -> (offset, value bytes) | None | NotImplemented. Mirrors
 * read/dict_index.py BlockIndex.find, which calls it first. */
static PyObject *probe_find(BlockProbe *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "find(read, base, key, h)");
        return NULL;
    }
    Py_ssize_t base = PyLong_AsSsize_t(args[1]);
    unsigned long hl = PyLong_AsUnsignedLong(args[3]);
    if (PyErr_Occurred()) return NULL;
    if (!PyBytes_Check(args[2]) || hl > 0xFFFFFFFFul) {
        PyErr_SetString(PyExc_TypeError, "find: key must be bytes and h a CRC-32");
        return NULL;
    }
    unsigned char blockbuf[BLOCK_CAP];
    Held held;
    const unsigned char *at = NULL;
    Py_ssize_t len = 0, where = 0;
    int status = probe_locate(self, args[0], base, (const unsigned char *)PyBytes_AS_STRING(args[2]),
                              PyBytes_GET_SIZE(args[2]), (uint32_t)hl, blockbuf, &held, &at, &len, &where);
    return found_tuple(status, at, len, where, &held);
}

/* A dict key as msgspec encodes it (str or exact int, the key types msglc stores) into out
 * (cap bytes): its length, or 0 for a key to leave to the Python path. Mirrors
 * read/views.py _encode_key. */
static Py_ssize_t encode_key(PyObject *key, unsigned char *out, Py_ssize_t cap) {
    if (PyUnicode_CheckExact(key)) {
        Py_ssize_t n;
        const char *text = PyUnicode_AsUTF8AndSize(key, &n);
        if (!text) {
            PyErr_Clear(); /* lone surrogates: no such key can be stored */
            return 0;
        }
        int h = n < 32 ? 1 : n < 256 ? 2 : n < 65536 ? 3 : 5;
        if (n + h > cap) return 0;
        if (h == 1) out[0] = (unsigned char)(0xa0 | n);
        else if (h == 2) out[0] = 0xd9, out[1] = (unsigned char)n;
        else if (h == 3) out[0] = 0xda, out[1] = (unsigned char)(n >> 8), out[2] = (unsigned char)n;
        else return 0;
        memcpy(out + h, text, (size_t)n);
        return n + h;
    }
    if (!PyLong_CheckExact(key) || cap < 9) return 0;
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(key, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 0;
    }
    int n;
    if (v >= 0) {
        uint64_t u = (uint64_t)v;
        if (u < 128) {
            out[0] = (unsigned char)u;
            return 1;
        }
        out[0] = u < 256 ? 0xcc : u < 65536 ? 0xcd : u < 4294967296ull ? 0xce : 0xcf;
        n = u < 256 ? 1 : u < 65536 ? 2 : u < 4294967296ull ? 4 : 8;
        for (int i = 0; i < n; i++) out[1 + i] = (unsigned char)(u >> (8 * (n - 1 - i)));
        return 1 + n;
    }
    if (v >= -32) {
        out[0] = (unsigned char)(int8_t)v;
        return 1;
    }
    out[0] = v >= -128 ? 0xd0 : v >= -32768 ? 0xd1 : v >= -2147483648ll ? 0xd2 : 0xd3;
    n = v >= -128 ? 1 : v >= -32768 ? 2 : v >= -2147483648ll ? 4 : 8;
    for (int i = 0; i < n; i++) out[1 + i] = (unsigned char)((uint64_t)v >> (8 * (n - 1 - i)));
    return 1 + n;
}

/* decode(the len bytes at at), or NotImplemented when it raises an Exception other than
 * MemoryError: the Python path decodes again and says what is wrong. Mirrors read/views.py
 * _decode (decode is that function). */
static PyObject *decoded(PyObject *decode, const unsigned char *at, Py_ssize_t len) {
    PyObject *raw = PyBytes_FromStringAndSize((const char *)at, len);
    if (!raw) return NULL;
    PyObject *value = PyObject_CallOneArg(decode, raw);
    Py_DECREF(raw);
    if (!value && PyErr_ExceptionMatches(PyExc_Exception) && !PyErr_ExceptionMatches(PyExc_MemoryError)) {
        PyErr_Clear();
        value = Py_NewRef(Py_NotImplemented);
    }
    return value;
}

/* What get() returns for a lookup's status: the value decoded, missing, or NotImplemented;
 * NULL for -1 (an exception). The bytes are let go. */
static PyObject *found_value(int status, const unsigned char *at, Py_ssize_t len, PyObject *decode, PyObject *missing,
                             Held *held) {
    PyObject *result = NULL;
    if (status == 1) result = decoded(decode, at, len);
    else if (status == 0) result = Py_NewRef(missing);
    else if (status == 2) result = Py_NewRef(Py_NotImplemented);
    held_release(held);
    return result;
}

/* probe.get(src, base, key, decode, missing): the value of key (str or int) decoded, missing
 * for a key the dict does not hold, NotImplemented to ask the Python path. src: a File or
 * read(). Mirrors read/views.py LazyHashDict._lookup. */
static PyObject *probe_get(BlockProbe *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "get(src, base, key, decode, missing)");
        return NULL;
    }
    Py_ssize_t base = PyLong_AsSsize_t(args[1]);
    if (base == -1 && PyErr_Occurred()) return NULL;
    unsigned char kb[256], blockbuf[BLOCK_CAP];
    Py_ssize_t klen = encode_key(args[2], kb, sizeof kb);
    if (!klen) Py_RETURN_NOTIMPLEMENTED;
    Held held;
    const unsigned char *at = NULL;
    Py_ssize_t len = 0, where = 0;
    int status =
        probe_locate(self, args[0], base, kb, klen, crc32_of(kb, (size_t)klen), blockbuf, &held, &at, &len, &where);
    return found_value(status, at, len, args[3], args[4], &held);
}

/* probe.candidates(read, key, h) -> [(block, count), ...] | NotImplemented: the blocks a
 * lookup of the key encoded as key (CRC-32 h) walks, as probe_candidates finds them with the
 * page records or slot chunks this probe keeps: the Python path (contains, a block around a
 * large value) asks here, so that a dict keeps them once, not once in C and again in Python.
 * Mirrors read/dict_index.py BlockIndex._read_candidates (FuseIndex's). */
static PyObject *probe_blocks(BlockProbe *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "candidates(read, key, h)");
        return NULL;
    }
    unsigned long hl = PyLong_AsUnsignedLong(args[2]);
    if (PyErr_Occurred()) return NULL;
    if (!PyBytes_Check(args[1]) || hl > 0xFFFFFFFFul) {
        PyErr_SetString(PyExc_TypeError, "candidates: key must be bytes and h a CRC-32");
        return NULL;
    }
    Candidates c = {.seen = NULL};
    Py_ssize_t found = 0;
    int status = probe_candidates(self, args[0], (const unsigned char *)PyBytes_AS_STRING(args[1]),
                                  PyBytes_GET_SIZE(args[1]), (uint32_t)hl, &c, &found);
    PyObject *out = NULL;
    if (status == 2) {
        out = Py_NewRef(Py_NotImplemented);
    } else if (status == 1 && (out = PyList_New(found))) {
        for (Py_ssize_t j = 0; j < found; j++) {
            PyObject *item = Py_BuildValue("(Kn)", (unsigned long long)c.seen[j], c.counts[j]);
            if (!item) {
                Py_CLEAR(out);
                break;
            }
            PyList_SET_ITEM(out, j, item);
        }
    }
    candidates_free(&c);
    return out;
}

/* BlockProbe's methods and type. */
static PyMethodDef probe_methods[] = {
    {"find", (PyCFunction)(void (*)(void))probe_find, METH_FASTCALL,
     "(offset, value bytes) of a key, None, or NotImplemented."},
    {"get", (PyCFunction)(void (*)(void))probe_get, METH_FASTCALL,
     "A key's value decoded, missing, or NotImplemented."},
    {"candidates", (PyCFunction)(void (*)(void))probe_blocks, METH_FASTCALL,
     "The (block, count) a key's lookup walks, or NotImplemented."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject BlockProbeType = {
    /* clang-format off */
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "msglc._speedups.BlockProbe",
    /* clang-format on */
    .tp_basicsize = sizeof(BlockProbe),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A block index's lookups in C (see find).",
    .tp_new = probe_new,
    .tp_dealloc = (destructor)probe_dealloc,
    .tp_methods = probe_methods,
};

/* ---- direct-indexed dicts, node type 10 (format/direct.py) --------------------------------- */

static uint64_t fuse_mix(uint64_t x, uint64_t seed);
static void *big_zeroed(size_t size);
static void big_free(void *p, size_t size);

typedef struct {
    uint64_t h, e;
} HashEntry;

/* Whether pair x comes after pair y in the records' order, (hash, entry). */
static int pair_after(const HashEntry *x, const HashEntry *y) {
    return x->h > y->h || (x->h == y->h && x->e > y->e);
}

/* qsort's order of pairs: the records' order. */
static int cmp_pairs(const void *a, const void *b) {
    return pair_after(a, b) - pair_after(b, a);
}

/* The n pairs at p, already in order by their top `bits` bits of hash, put in the records'
 * order: each run alike in those bits sorted, by insertion where short (the usual: a run
 * holds one or two pairs), by qsort where long (keys chosen to share those bits must not
 * make the build quadratic). */
static void sort_runs(HashEntry *p, size_t n, int bits) {
    size_t i = 0;
    while (i < n) {
        size_t j = i + 1;
        while (j < n && p[j].h >> (64 - bits) == p[i].h >> (64 - bits)) j++;
        if (j - i > 16) {
            qsort(p + i, j - i, sizeof(HashEntry), cmp_pairs);
        } else {
            for (size_t a = i + 1; a < j; a++) {
                HashEntry x = p[a];
                size_t b = a;
                for (; b > i && pair_after(&p[b - 1], &x); b--) p[b] = p[b - 1];
                p[b] = x;
            }
        }
        i = j;
    }
}

/* The n pairs of in sorted into out by the bits of their hash at shift (bits of them), stably;
 * count: 2**bits + 1 counters, zeroed. */
static void radix_pass(const HashEntry *in, HashEntry *out, size_t n, int shift, int bits, size_t *count) {
    uint64_t mask = ((uint64_t)1 << bits) - 1;
    for (size_t i = 0; i < n; i++) count[((in[i].h >> shift) & mask) + 1]++;
    for (size_t k = 0; k < ((size_t)1 << bits); k++) count[k + 1] += count[k];
    for (size_t i = 0; i < n; i++) out[count[(in[i].h >> shift) & mask]++] = in[i];
}

/* The fp_bits bits of h after its group's. Mirrors format/direct.py fingerprint. */
static uint64_t direct_fingerprint(uint64_t h, int group_bits, int fp_bits) {
    return (h << group_bits) >> (64 - fp_bits);
}

/* The estimate of hash h in its group [first, end). Mirrors format/direct.py estimate. */
static uint64_t direct_estimate(uint64_t h, int group_bits, uint64_t first, uint64_t end) {
    uint64_t f = (h >> (48 - group_bits)) & 0xFFFF;
    return first + ((f * (end - first)) >> 16);
}

/* direct_build(hashes, offs, offs_width, kids, group_bits, width, off_bits, chunk) ->
 * (region, groups, lo, hi, entry_read): the index of node type 10 over the keys of these base
 * hashes (u64 LE, entry order; fuse.base_hash) whose entries start at offs (n + 1 offsets of
 * offs_width bytes LE, the last the dict's end). kids: the entries whose value has a node of
 * their own (native u64, any order), left out of entry_read. Mirrors format/direct.py build. */
static PyObject *direct_build(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer hv, ov, kv;
    int offs_width, group_bits, width, off_bits;
    Py_ssize_t chunk;
    if (!PyArg_ParseTuple(args, "y*y*iy*iiin", &hv, &ov, &offs_width, &kv, &group_bits, &width, &off_bits, &chunk))
        return NULL;
    PyObject *result = NULL, *region = NULL, *groups = NULL;
    HashEntry *pairs = NULL, *sorted = NULL;
    size_t *counts = NULL, pairs_size = 0;
    Py_ssize_t n = hv.len / 8;
    size_t ng = (size_t)1 << (group_bits > 0 ? group_bits : 0);
    uint64_t *firsts = NULL;
    unsigned char *isk = NULL;
    if (hv.len % 8 || (offs_width != 4 && offs_width != 8) || ov.len != (n + 1) * offs_width || kv.len % 8 ||
        group_bits < 0 || group_bits > 26 || width < 1 || width > 8 || off_bits < 1 || off_bits >= 8 * width ||
        chunk < 1 || n > 0xFFFFFFFFll) {
        PyErr_SetString(PyExc_ValueError, "direct_build: arguments out of range");
        goto done;
    }
    int fp_bits = 8 * width - off_bits > 32 ? 32 : 8 * width - off_bits;
    const unsigned char *hb = hv.buf, *ob = ov.buf;
    pairs_size = sizeof(HashEntry) * (size_t)(n ? n : 1);
    pairs = big_zeroed(pairs_size);
    sorted = big_zeroed(pairs_size);
    counts = calloc((ng > ((size_t)1 << 16) ? ng : ((size_t)1 << 16)) + 1, sizeof(size_t));
    firsts = calloc(ng + 1, sizeof(uint64_t));
    isk = calloc((size_t)(n ? n : 1), 1);
    Py_ssize_t nchunks = (n + chunk - 1) / chunk;
    region = PyBytes_FromStringAndSize(NULL, n * width + 4 * nchunks);
    groups = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(ng + 1) * 4);
    if (!pairs || !sorted || !counts || !firsts || !isk || !region || !groups) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto done;
    }
    const uint64_t *kids = kv.buf;
    for (Py_ssize_t k = 0; k < kv.len / 8; k++)
        if (kids[k] < (uint64_t)n) isk[kids[k]] = 1;
    uint64_t entry_read = 0, lo = 0, hi = 0, by_bits[65] = {0}, most[65] = {0}, counted = 0;
    Py_BEGIN_ALLOW_THREADS;
    for (Py_ssize_t e = 0; e < n; e++) {
        uint64_t h = fuse_mix(le(hb + 8 * e, 8), 0);
        pairs[e].h = h, pairs[e].e = (uint64_t)e;
        firsts[(group_bits ? h >> (64 - group_bits) : 0) + 1]++;
        uint64_t len = le(ob + (e + 1) * offs_width, offs_width) - le(ob + e * offs_width, offs_width);
        if (!isk[e]) { /* entry_read: the longest of the entries in the fewest bit lengths that hold 999 in 1000 */
            int b = 0;
            while (b < 64 && len >> b) b++;
            by_bits[b]++, counted++;
            if (len > most[b]) most[b] = len;
        }
    }
    for (uint64_t b = 0, sum = 0; b < 65 && counted; b++) {
        sum += by_bits[b];
        if (most[b] > entry_read) entry_read = most[b];
        if (sum * 1000 >= counted * 999) break;
    }
    for (size_t g = 0; g < ng; g++) firsts[g + 1] += firsts[g];
    /* the records' order: a stable radix sort by the 16 bits after the group's, then by the
     * group, which leaves only runs of pairs alike in both (a few) to sort */
    radix_pass(pairs, sorted, (size_t)n, 48 - group_bits, 16, counts);
    if (group_bits) {
        memset(counts, 0, (ng + 1) * sizeof(size_t));
        radix_pass(sorted, pairs, (size_t)n, 64 - group_bits, group_bits, counts);
        HashEntry *swap = pairs;
        pairs = sorted, sorted = swap;
    }
    sort_runs(sorted, (size_t)n, group_bits + 16);
    unsigned char *out = (unsigned char *)PyBytes_AS_STRING(region);
    size_t g = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t h = sorted[i].h;
        while (firsts[g + 1] <= (uint64_t)i) g++;
        uint64_t est = direct_estimate(h, group_bits, firsts[g], firsts[g + 1]);
        if (est > (uint64_t)i && est - (uint64_t)i > lo) lo = est - (uint64_t)i;
        if ((uint64_t)i > est && (uint64_t)i - est > hi) hi = (uint64_t)i - est;
        uint64_t off = le(ob + sorted[i].e * offs_width, offs_width);
        put_le(out, direct_fingerprint(h, group_bits, fp_bits) << off_bits | off, width);
        out += width;
        if ((i + 1) % chunk == 0 || i + 1 == n) { /* the chunk's CRC after its records */
            Py_ssize_t count = (i % chunk) + 1;
            put_le(out, crc32_of(out - count * width, (size_t)(count * width)), 4);
            out += 4;
        }
    }
    Py_END_ALLOW_THREADS;
    unsigned char *gb = (unsigned char *)PyBytes_AS_STRING(groups);
    for (size_t k = 0; k <= ng; k++) put_le(gb + 4 * k, firsts[k], 4);
    result = Py_BuildValue("(OOKKK)", region, groups, (unsigned long long)lo, (unsigned long long)hi,
                           (unsigned long long)entry_read);
done:
    big_free(pairs, pairs_size);
    big_free(sorted, pairs_size);
    free(counts);
    free(firsts);
    free(isk);
    Py_XDECREF(region);
    Py_XDECREF(groups);
    PyBuffer_Release(&hv);
    PyBuffer_Release(&ov);
    PyBuffer_Release(&kv);
    return result;
}

/* DirectProbe(groups, region_at, n, group_bits, width, off_bits, chunk, lo, hi, entry_read,
 * span_lo, span_hi): one dict's direct index (read/dict_index.py DirectIndex, which makes it);
 * probe.find(read, base, key, h) looks the key up with one read of the chunks of records
 * that hold its window and the reads of each entry they name with its fingerprint (those of
 * read/dict_index.py _Window: EntryReads): (offset, value bytes), or None for a key the dict
 * does not hold (h is not used). NotImplemented for anything unusual (a checksum that fails,
 * an offset out of bounds, bytes that are not an entry, a key whose hash lacks its record's
 * fingerprint, a window of more than 8 chunks): the Python path then answers, with its
 * errors. Checked chunks are kept, each in an
 * allocation of its own, while all the records take at most RECORDS_KEPT bytes. Mirrors
 * read/dict_index.py DirectIndex.find (direct_find) and read/views.py LazyHashDict._lookup
 * (direct_get). */
#define DIRECT_CHUNKS 8
#define DIRECT_FIRST_READ_MAX (1 << 16) /* format/direct.py FIRST_READ_MAX */
#define DIRECT_READ_CAP 16384

typedef struct {
    PyObject_HEAD
    PyObject *groups; /* bytes: (2**group_bits + 1) u32 LE */
    Py_ssize_t region_at, n, chunk, lo, hi, entry_read, span_lo, span_hi, nchunks;
    int group_bits, width, off_bits, fp_bits;
    unsigned char **kept; /* a chunk's records once read and checked (NULL: not yet), or NULL: none kept */
} DirectProbe;

static void direct_dealloc(DirectProbe *self) {
    Py_XDECREF(self->groups);
    kept_free(self->kept, self->nchunks);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* DirectProbe(...): the arguments checked (ValueError), as DirectIndex.__init__ makes them. */
static PyObject *direct_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    PyObject *groups;
    int group_bits, width, off_bits;
    Py_ssize_t region_at, n, chunk, lo, hi, entry_read, span_lo, span_hi;
    if (kw && PyDict_GET_SIZE(kw)) {
        PyErr_SetString(PyExc_TypeError, "DirectProbe takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "Snniiinnnnnn", &groups, &region_at, &n, &group_bits, &width, &off_bits, &chunk, &lo,
                          &hi, &entry_read, &span_lo, &span_hi))
        return NULL;
    if (group_bits < 0 || group_bits > 26 || width < 1 || width > 8 || off_bits < 1 || off_bits >= 8 * width ||
        chunk < 1 || n < 1 || lo < 0 || hi < 0 || entry_read < 0 || region_at < 0 || span_lo < 0 || span_hi < span_lo ||
        PyBytes_GET_SIZE(groups) != (((Py_ssize_t)1 << group_bits) + 1) * 4) {
        PyErr_SetString(PyExc_ValueError, "DirectProbe: arguments out of range");
        return NULL;
    }
    DirectProbe *self = (DirectProbe *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    Py_INCREF(groups);
    self->groups = groups;
    self->region_at = region_at, self->n = n, self->chunk = chunk, self->lo = lo, self->hi = hi;
    self->entry_read = entry_read, self->span_lo = span_lo, self->span_hi = span_hi;
    self->group_bits = group_bits, self->width = width, self->off_bits = off_bits;
    self->fp_bits = 8 * width - off_bits > 32 ? 32 : 8 * width - off_bits;
    if (self->chunk > n) self->chunk = n; /* (one chunk either way: no overflow below) */
    self->nchunks = (n + self->chunk - 1) / self->chunk;
    self->kept = NULL;
    if ((uint64_t)width * (uint64_t)n <= RECORDS_KEPT) /* NULL (no memory to spare): read them each time */
        self->kept = PyMem_Calloc((size_t)self->nchunks, sizeof(unsigned char *));
    return (PyObject *)self;
}

/* The hash that orders and finds a key's record (format/direct.py key_hash). */
static uint64_t direct_hash(const unsigned char *key, Py_ssize_t klen) {
    return fuse_mix(key_base_hash(key, (size_t)klen), 0);
}

/* Pointers to the records of chunks c0..c1 in ptr[], read (in one read into buf, cap bytes)
 * and checked unless kept: 1, 0 for the Python path (a failed read or checksum), -1 with an
 * exception. */
static int direct_chunks(DirectProbe *self, PyObject *src, Py_ssize_t c0, Py_ssize_t c1, unsigned char *buf,
                         Py_ssize_t cap, const unsigned char **ptr, Held *held) {
    int all = self->kept != NULL;
    for (Py_ssize_t c = c0; all && c <= c1; c++) all = self->kept[c] != NULL;
    held->holder = NULL, held->has_view = 0;
    if (all) {
        for (Py_ssize_t c = c0; c <= c1; c++) ptr[c - c0] = self->kept[c];
        return 1;
    }
    Py_ssize_t step = self->chunk * self->width + 4, last = (c1 + 1) * self->chunk;
    if (last > self->n) last = self->n;
    last -= c1 * self->chunk; /* records in chunk c1 */
    const unsigned char *data;
    int got =
        src_read(src, self->region_at + c0 * step, (c1 - c0) * step + last * self->width + 4, buf, cap, &data, held);
    if (got <= 0) return got;
    for (Py_ssize_t c = c0; c <= c1; c++) {
        const unsigned char *part = data + (c - c0) * step;
        size_t size = (size_t)((c < c1 ? self->chunk : last) * self->width);
        if (crc32_of(part, size) != (uint32_t)le(part + size, 4)) {
            held_release(held);
            return 0;
        }
        ptr[c - c0] = part;
        if (self->kept) keep_checked(&self->kept[c], part, size);
    }
    return 1;
}

/* Where the item at buf[p] ends (len bytes read), from its headers alone, as
 * format/msgpack.py item_end finds it: past len for a str, bin, ext or fixed-size item (or a
 * container whose last item is one); -1 when a header, or an item inside a container, lies
 * past len; -2 on a byte no item starts with. */
static int64_t item_end_at(const unsigned char *buf, Py_ssize_t len, Py_ssize_t p) {
    uint64_t pending = 1, size = (uint64_t)len, q = (uint64_t)p;
    while (pending) {
        if (q >= size) return -1;
        unsigned char m = buf[q], k = kind[m];
        uint64_t f = fixed[m];
        pending--;
        if (k == KIND_BAD) return -2;
        if (k == KIND_FIXED) {
            q += 1 + f;
        } else if (k == KIND_ITEMS) {
            pending += f, q += 1;
        } else {
            if (q + 1 + f > size) return -1;
            uint64_t n = be(buf + q + 1, (int)f);
            if (k == KIND_ARRAY) pending += n, q += 1 + f;
            else if (k == KIND_MAP) pending += 2 * n, q += 1 + f;
            else q += 1 + f + n + (k == KIND_SIZED_EXT);
        }
        if (pending && q > size) return -1;
    }
    return (int64_t)q;
}

#define DIRECT_WALK_OVER (1 << 20) /* read/dict_index.py WALK_OVER */

/* The reads of one entry's items, as read/dict_index.py _Window makes them (read for read):
 * the dict's bytes [at, at + len) in buf, the first read of `first` bytes, a small container
 * across a read's end read again from its start with twice as much (at least WALK_OVER), a
 * long str, bin or ext item read alone. Offsets are from the dict's first byte, at base. */
typedef struct {
    PyObject *src;
    Py_ssize_t base, stop, first, at, len;
    const unsigned char *buf;
    Held held;
    unsigned char *stack; /* DIRECT_READ_CAP bytes for the reads that fit */
    int begun;
} EntryReads;

/* _Window.item_end(pos): 0 with *end set; 2 for the Python path (what it finds damaged, it
 * reports); -1 with an exception. */
static int entry_item_end(EntryReads *w, Py_ssize_t pos, Py_ssize_t *end) {
    if (pos >= w->stop) return 2;
    Py_ssize_t size = w->begun ? DIRECT_WALK_OVER : w->first;
    w->begun = 1;
    for (;;) {
        if (w->buf && pos - w->at >= 0 && pos - w->at < w->len) {
            int64_t e = item_end_at(w->buf, w->len, pos - w->at);
            if (e == -2) return 2;
            if (e >= 0) {
                if (w->at + (Py_ssize_t)e > w->stop) return 2;
                *end = w->at + (Py_ssize_t)e;
                return 0;
            }
            if (w->at + w->len >= w->stop) return 2;
            if (2 * w->len > size) size = 2 * w->len;
        }
        held_release(&w->held);
        w->buf = NULL;
        Py_ssize_t ask = size < w->stop - pos ? size : w->stop - pos;
        int got = src_read(w->src, w->base + pos, ask, w->stack, DIRECT_READ_CAP, &w->buf, &w->held);
        if (got <= 0) {
            w->buf = NULL;
            return got < 0 ? -1 : 2;
        }
        w->at = pos, w->len = ask;
    }
}

/* _Window.bytes(pos, end): *out points at them, in the window or in one read of their own
 * (held by *own: release it). 0 with *out set; 2 for the Python path; -1 with an exception. */
static int entry_bytes(EntryReads *w, Py_ssize_t pos, Py_ssize_t end, const unsigned char **out, Held *own) {
    own->holder = NULL, own->has_view = 0;
    if (w->buf && w->at <= pos && end <= w->at + w->len) {
        *out = w->buf + (pos - w->at);
        return 0;
    }
    int got = src_read(w->src, w->base + pos, end - pos, NULL, 0, out, own);
    return got < 0 ? -1 : got == 0 ? 2 : 0;
}

/* The records of hash h's window, [*start, *stop): 1, 0 for an empty window, 2 for bounds
 * that do not fit (the Python path). Mirrors format/direct.py window. */
static int direct_bounds(DirectProbe *self, uint64_t h, uint64_t *start, uint64_t *stop) {
    int gb = self->group_bits;
    const unsigned char *groups = (const unsigned char *)PyBytes_AS_STRING(self->groups);
    uint64_t g = gb ? h >> (64 - gb) : 0, first = le(groups + 4 * g, 4), end = le(groups + 4 * g + 4, 4);
    if (first > end || end > (uint64_t)self->n) return 2;
    uint64_t est = direct_estimate(h, gb, first, end);
    *start = est - first > (uint64_t)self->lo ? est - (uint64_t)self->lo : first;
    *stop = est + (uint64_t)self->hi + 1 < end ? est + (uint64_t)self->hi + 1 : end;
    return *start < *stop;
}

/* The window of records of hash h, [*start, *stop): 1 with its chunks' records in ptr[]
 * (DIRECT_CHUNKS at most; the first chunk's c0 = *start / chunk; read into recbuf,
 * DIRECT_READ_CAP bytes, or held in rh: release it), 0 for an empty window, 2 for the Python
 * path (bounds that do not fit, more chunks, a read or a checksum that fails), -1 with an
 * exception. */
static int direct_window(DirectProbe *self, PyObject *src, uint64_t h, uint64_t *start, uint64_t *stop,
                         const unsigned char **ptr, unsigned char *recbuf, Held *rh) {
    rh->holder = NULL, rh->has_view = 0;
    int got = direct_bounds(self, h, start, stop);
    if (got != 1) return got;
    Py_ssize_t chunk = self->chunk, c0 = (Py_ssize_t)*start / chunk, c1 = (Py_ssize_t)(*stop - 1) / chunk;
    if (c1 - c0 >= DIRECT_CHUNKS) return 2;
    got = direct_chunks(self, src, c0, c1, recbuf, DIRECT_READ_CAP, ptr, rh);
    return got < 0 ? -1 : got == 0 ? 2 : 1;
}

/* Where the value of the key encoded as key is, in the dict whose first byte is at base, read
 * through src: 1 with *at, *len pointing into entrybuf or held (release it) and *where its
 * offset; 0 for a key the dict does not hold; 2 for anything unusual (the Python path
 * answers); -1 with an exception. Mirrors read/dict_index.py DirectIndex._entry. */
static int direct_locate(DirectProbe *self, PyObject *src, Py_ssize_t base, const unsigned char *key, Py_ssize_t klen,
                         unsigned char *entrybuf, Held *held, const unsigned char **at, Py_ssize_t *len,
                         Py_ssize_t *where) {
    held->holder = NULL, held->has_view = 0;
    uint64_t h = direct_hash(key, klen), start, stop;
    unsigned char recbuf[DIRECT_READ_CAP];
    const unsigned char *ptr[DIRECT_CHUNKS];
    Held rh;
    int got = direct_window(self, src, h, &start, &stop, ptr, recbuf, &rh);
    if (got != 1) return got;
    Py_ssize_t chunk = self->chunk, c0 = (Py_ssize_t)start / chunk;
    uint64_t offs[16], fp = direct_fingerprint(h, self->group_bits, self->fp_bits), lo = start, hi = stop;
    int found = 0, width = self->width, ob = self->off_bits;
    while (lo < hi) { /* the window ascends by fingerprint: the first record of fp's */
        uint64_t mid = lo + (hi - lo) / 2;
        if (le(ptr[mid / chunk - c0] + (mid % chunk) * width, width) >> ob < fp) lo = mid + 1;
        else hi = mid;
    }
    for (uint64_t i = lo; i < stop; i++) {
        uint64_t r = le(ptr[i / chunk - c0] + (i % chunk) * width, width);
        if ((r >> ob) != fp) break;
        if (found == 16) { /* more fingerprints alike than any real dict has: the Python path */
            held_release(&rh);
            return 2;
        }
        offs[found++] = r & (((uint64_t)1 << ob) - 1);
    }
    held_release(&rh);
    for (int j = 0; j < found; j++) {
        uint64_t o = offs[j];
        if (o < (uint64_t)self->span_lo || o >= (uint64_t)self->span_hi) return 2;
        Py_ssize_t size = self->entry_read > klen + 1 ? self->entry_read : klen + 1; /* direct.first_read */
        if (size > DIRECT_FIRST_READ_MAX) size = DIRECT_FIRST_READ_MAX;
        EntryReads w = {.src = src,
                        .base = base,
                        .stop = self->span_hi,
                        .first = size,
                        .at = (Py_ssize_t)o,
                        .len = 0,
                        .buf = NULL,
                        .held = {.holder = NULL, .has_view = 0},
                        .stack = entrybuf,
                        .begun = 0};
        Py_ssize_t key_end, value_end;
        const unsigned char *stored, *value;
        Held own;
        int s = entry_item_end(&w, (Py_ssize_t)o, &key_end);
        if (!s) s = entry_bytes(&w, (Py_ssize_t)o, key_end, &stored, &own);
        if (s) {
            held_release(&w.held);
            return s;
        }
        if (key_end - (Py_ssize_t)o == klen && memcmp(stored, key, (size_t)klen) == 0) {
            held_release(&own);
            s = entry_item_end(&w, key_end, &value_end);
            if (!s) s = entry_bytes(&w, key_end, value_end, &value, &own);
            if (s) {
                held_release(&w.held);
                return s;
            }
            if (own.holder) { /* read on its own: the window goes */
                held_release(&w.held);
                *held = own;
            } else {
                *held = w.held;
            }
            *at = value, *len = value_end - key_end, *where = base + key_end;
            return 1;
        }
        int other =
            direct_fingerprint(direct_hash(stored, key_end - (Py_ssize_t)o), self->group_bits, self->fp_bits) == fp;
        held_release(&own);
        held_release(&w.held);
        if (!other) return 2; /* a key its record does not fit: the Python path says so */
    }
    return 0;
}

/* probe.find(read, base, key, h) -> (offset, value bytes) | None | NotImplemented. Mirrors
 * read/dict_index.py DirectIndex.find, which calls it first. */
static PyObject *direct_find(DirectProbe *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "find(read, base, key, h)");
        return NULL;
    }
    Py_ssize_t base = PyLong_AsSsize_t(args[1]);
    if (base == -1 && PyErr_Occurred()) return NULL;
    if (!PyBytes_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "find: key must be bytes");
        return NULL;
    }
    unsigned char entrybuf[DIRECT_READ_CAP];
    Held held;
    const unsigned char *at = NULL;
    Py_ssize_t len = 0, where = 0;
    int status = direct_locate(self, args[0], base, (const unsigned char *)PyBytes_AS_STRING(args[2]),
                               PyBytes_GET_SIZE(args[2]), entrybuf, &held, &at, &len, &where);
    return found_tuple(status, at, len, where, &held);
}

/* probe.records(read, h) -> bytes | NotImplemented: the records of hash h's window (u64
 * key_hash), from the chunks this probe keeps (or reads, checks and keeps): the Python path
 * (contains, a lookup the probe left to it) asks here, so that a dict keeps them once. A
 * window of any number of chunks (those of more than DIRECT_CHUNKS are left to the Python
 * path by find, not here: else it would keep their chunks a second time). Mirrors
 * read/dict_index.py DirectIndex._read_records. */
static PyObject *direct_records(DirectProbe *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "records(read, h)");
        return NULL;
    }
    unsigned long long h = PyLong_AsUnsignedLongLong(args[1]);
    if (h == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    uint64_t start = 0, stop = 0;
    int got = direct_bounds(self, (uint64_t)h, &start, &stop);
    if (got == 2) Py_RETURN_NOTIMPLEMENTED;
    if (got == 0) return PyBytes_FromStringAndSize(NULL, 0);
    Py_ssize_t width = self->width, chunk = self->chunk, n = (Py_ssize_t)(stop - start);
    Py_ssize_t c0 = (Py_ssize_t)start / chunk, c1 = (Py_ssize_t)(stop - 1) / chunk;
    unsigned char recbuf[DIRECT_READ_CAP];
    const unsigned char *few[DIRECT_CHUNKS], **ptr = few;
    if (c1 - c0 >= DIRECT_CHUNKS && !(ptr = PyMem_New(const unsigned char *, (size_t)(c1 - c0 + 1))))
        return PyErr_NoMemory();
    Held rh;
    PyObject *out = NULL;
    got = direct_chunks(self, args[0], c0, c1, recbuf, DIRECT_READ_CAP, ptr, &rh);
    if (got == 0) out = Py_NewRef(Py_NotImplemented);
    if (got == 1 && (out = PyBytes_FromStringAndSize(NULL, n * width))) {
        unsigned char *to = (unsigned char *)PyBytes_AS_STRING(out);
        for (Py_ssize_t i = (Py_ssize_t)start; i < (Py_ssize_t)stop;) { /* a chunk's part at a time */
            Py_ssize_t upto = (i / chunk + 1) * chunk, k = (upto < (Py_ssize_t)stop ? upto : (Py_ssize_t)stop) - i;
            memcpy(to, ptr[i / chunk - c0] + (i % chunk) * width, (size_t)(k * width));
            to += k * width, i += k;
        }
    }
    held_release(&rh);
    if (ptr != few) PyMem_Free(ptr);
    return out;
}

/* probe.get(src, base, key, decode, missing): probe_get for a direct index. */
static PyObject *direct_get(DirectProbe *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "get(src, base, key, decode, missing)");
        return NULL;
    }
    Py_ssize_t base = PyLong_AsSsize_t(args[1]);
    if (base == -1 && PyErr_Occurred()) return NULL;
    unsigned char kb[256], entrybuf[DIRECT_READ_CAP];
    Py_ssize_t klen = encode_key(args[2], kb, sizeof kb);
    if (!klen) Py_RETURN_NOTIMPLEMENTED;
    Held held;
    const unsigned char *at = NULL;
    Py_ssize_t len = 0, where = 0;
    int status = direct_locate(self, args[0], base, kb, klen, entrybuf, &held, &at, &len, &where);
    return found_value(status, at, len, args[3], args[4], &held);
}

static PyMethodDef direct_methods[] = {
    {"find", (PyCFunction)(void (*)(void))direct_find, METH_FASTCALL,
     "(offset, value bytes) of a key, None, or NotImplemented."},
    {"get", (PyCFunction)(void (*)(void))direct_get, METH_FASTCALL,
     "A key's value decoded, missing, or NotImplemented."},
    {"records", (PyCFunction)(void (*)(void))direct_records, METH_FASTCALL,
     "The records of a hash's window, or NotImplemented."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject DirectProbeType = {
    /* clang-format off */
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "msglc._speedups.DirectProbe",
    /* clang-format on */
    .tp_basicsize = sizeof(DirectProbe),
    .tp_dealloc = (destructor)direct_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One dict's direct index lookups (node type 10) in C.",
    .tp_methods = direct_methods,
    .tp_new = direct_new,
};

/* ---- spans of items (read/views.py, read/local_many.py) ------------------------------------------ */

/* The value a path's tail names inside the msgpack value [*at, *stop): str segments look up
 * map keys (the last of equal keys, as decoding keeps it), ASCII-digit str or int segments
 * index arrays. 1 with *at, *stop moved there; 0 for anything else (a missing key, another
 * kind of value or segment), which the Python path then resolves. Mirrors the rest of a path
 * taken alone in read/local_many.py (_Batch.finish: short_steps, then resolve). whole: the
 * value must also be exactly [*at, *stop) (its first level is walked to its end anyway for a
 * map, and on past the item taken for an array), else 0, as a skip of it first would say. */
static int descend(PyObject *tail, const unsigned char **at, const unsigned char **stop, int whole) {
    const unsigned char *p = *at, *end = *stop;
    Py_ssize_t nseg = PyList_GET_SIZE(tail);
    for (Py_ssize_t s = 0; s < nseg; s++) {
        PyObject *seg = PyList_GET_ITEM(tail, s);
        if (p >= end) return 0;
        unsigned char m = *p++;
        uint64_t count;
        int is_map = (m & 0xf0) == 0x80 || m == 0xde || m == 0xdf,
            is_array = (m & 0xf0) == 0x90 || m == 0xdc || m == 0xdd;
        int hdr = (m == 0xdc || m == 0xde) ? 2 : (m == 0xdd || m == 0xdf) ? 4 : 0;
        if (!is_map && !is_array) return 0;
        if (end - p < hdr) return 0;
        count = hdr ? be(p, hdr) : (uint64_t)(m & 0x0f);
        p += hdr;
        if (is_map) { /* str keys equal the segment when their text does, whatever their header */
            Py_ssize_t n;
            const char *text = PyUnicode_CheckExact(seg) ? PyUnicode_AsUTF8AndSize(seg, &n) : NULL;
            const unsigned char *found = NULL, *found_end = NULL;
            if (!text) {
                PyErr_Clear();
                return 0;
            }
            for (uint64_t e = 0; e < count; e++) {
                const unsigned char *v = skip(p, end), *q = v ? skip(v, end) : NULL;
                if (!q) return 0;
                unsigned char k = *p;
                int h = (k & 0xe0) == 0xa0 ? 1 : k == 0xd9 ? 2 : k == 0xda ? 3 : k == 0xdb ? 5 : 0;
                if (h && v - p - h == n && memcmp(p + h, text, (size_t)n) == 0) found = v, found_end = q;
                p = q;
            }
            if (!found || (whole && s == 0 && p != end)) return 0;
            p = found, end = found_end;
        } else {
            uint64_t index = 0;
            if (PyUnicode_CheckExact(seg)) {
                Py_ssize_t n;
                const char *text = PyUnicode_AsUTF8AndSize(seg, &n);
                if (!text || n < 1 || n > 18) {
                    PyErr_Clear();
                    return 0;
                }
                for (Py_ssize_t c = 0; c < n; c++) {
                    if (text[c] < '0' || text[c] > '9') return 0;
                    index = index * 10 + (uint64_t)(text[c] - '0');
                }
            } else if (PyLong_CheckExact(seg)) {
                Py_ssize_t i = PyLong_AsSsize_t(seg);
                if (i < 0) {
                    PyErr_Clear();
                    return 0;
                }
                index = (uint64_t)i;
            } else {
                return 0;
            }
            if (index >= count) return 0;
            for (uint64_t e = 0; e < index && p; e++) p = skip(p, end);
            const unsigned char *q = p ? skip(p, end) : NULL;
            if (!q) return 0;
            if (whole && s == 0) { /* the items after it, to the value's end */
                const unsigned char *r = q;
                for (uint64_t e = index + 1; e < count && r; e++) r = skip(r, end);
                if (r != end) return 0;
            }
            end = q;
        }
    }
    *at = p, *stop = end;
    return 1;
}

/* span_items(src, offset, size, count, js, decode, tails, missing): the items js (a list of
 * ascending indexes below count) of the count msgpack items that must make the size bytes at
 * offset exactly (neighbours skipped, not decoded; NotImplemented when they do not, or for
 * anything else unusual: the Python path answers), decoded, in a list. tails: None, or a list
 * holding for each item None (the item) or a list of segments (the value they name in it, see
 * descend; missing where it does not). Mirrors read/views.py list_items (view[i] for each
 * index, and read/local_many.py's lookups of the tails). */
/* The bounds of items js (n ascending indexes below count) of the count msgpack items that
 * must make the size bytes at data exactly: at[2k] and at[2k + 1] for js[k]. 1 when they
 * make them (and so every item's bounds are set), else 0. */
static int item_bounds(const unsigned char *data, Py_ssize_t size, Py_ssize_t count, const Py_ssize_t *js, Py_ssize_t n,
                       const unsigned char **at) {
    const unsigned char *p = data, *end = data + size;
    Py_ssize_t k = 0;
    for (Py_ssize_t i = 0; i < count && p; i++) {
        const unsigned char *q = skip(p, end);
        if (k < n && i == js[k]) at[2 * k] = p, at[2 * k + 1] = q, k++;
        p = q;
    }
    return p == end && k == n;
}

static PyObject *span_items(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 8 || !PyList_CheckExact(args[4]) ||
        (args[6] != Py_None && (!PyList_CheckExact(args[6]) || PyList_GET_SIZE(args[6]) != PyList_GET_SIZE(args[4])))) {
        PyErr_SetString(PyExc_TypeError, "span_items(src, offset, size, count, js: list, decode, tails, missing)");
        return NULL;
    }
    PyObject *tails = args[6];
    Py_ssize_t offset = PyLong_AsSsize_t(args[1]), size = PyLong_AsSsize_t(args[2]);
    Py_ssize_t count = PyLong_AsSsize_t(args[3]);
    if (PyErr_Occurred()) return NULL;
    PyObject *js = args[4];
    Py_ssize_t n = PyList_GET_SIZE(js), prev = -1;
    /* the items' bounds, then their indexes: one allocation */
    const unsigned char **at = PyMem_Malloc((sizeof(*at) * 2 + sizeof(Py_ssize_t)) * (size_t)(n ? n : 1));
    if (!at) return PyErr_NoMemory();
    Py_ssize_t *jv = (Py_ssize_t *)(at + 2 * (n ? n : 1));
    for (Py_ssize_t k = 0; k < n; k++) {
        Py_ssize_t j = PyLong_AsSsize_t(PyList_GET_ITEM(js, k));
        if ((j == -1 && PyErr_Occurred()) || j <= prev || j >= count) {
            PyMem_Free(at);
            if (PyErr_Occurred()) return NULL;
            Py_RETURN_NOTIMPLEMENTED;
        }
        jv[k] = prev = j;
    }
    unsigned char buf[16384];
    const unsigned char *data;
    Held held;
    PyObject *result = NULL;
    int got = src_read(args[0], offset, size, buf, sizeof buf, &data, &held);
    if (got <= 0) {
        PyMem_Free(at);
        if (got < 0) return NULL;
        Py_RETURN_NOTIMPLEMENTED;
    }
    if (!item_bounds(data, size, count, jv, n, at)) {
        result = Py_NewRef(Py_NotImplemented);
        goto done;
    }
    result = PyList_New(n);
    for (Py_ssize_t e = 0; result && e < n; e++) {
        const unsigned char *v = at[2 * e], *vend = at[2 * e + 1];
        PyObject *tail = tails == Py_None ? Py_None : PyList_GET_ITEM(tails, e);
        if (vend && tail != Py_None && (!PyList_CheckExact(tail) || !descend(tail, &v, &vend, 0))) {
            PyList_SET_ITEM(result, e, Py_NewRef(args[7]));
            continue;
        }
        PyObject *value = vend ? decoded(args[5], v, vend - v) : NULL;
        if (value == Py_NotImplemented || (!value && !PyErr_Occurred())) {
            Py_XDECREF(value);
            Py_SETREF(result, Py_NewRef(Py_NotImplemented));
            goto done;
        }
        if (!value) Py_CLEAR(result);
        else PyList_SET_ITEM(result, e, value);
    }
done:
    held_release(&held);
    PyMem_Free(at);
    return result;
}

/* span_item(src, offset, size, count, j, decode): span_items of the one item j, unwrapped.
 * Mirrors read/views.py _decode_item (LazyBlockList.__getitem__ of an item without a node). */
static PyObject *span_item(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "span_item(src, offset, size, count, j, decode)");
        return NULL;
    }
    PyObject *js = PyList_New(1);
    if (!js) return NULL;
    PyList_SET_ITEM(js, 0, Py_NewRef(args[4]));
    PyObject *full[8] = {args[0], args[1], args[2], args[3], js, args[5], Py_None, Py_None};
    PyObject *got = span_items(self, full, 8);
    Py_DECREF(js);
    if (!got || got == Py_NotImplemented) return got;
    PyObject *value = Py_NewRef(PyList_GET_ITEM(got, 0));
    Py_DECREF(got);
    return value;
}

/* span_value(src, offset, size, count, j, decode, tail): item j of the count msgpack items
 * that must make the size bytes at offset exactly, and the value the segments tail name in
 * it (descend): (that value decoded, True); (the item decoded whole, False) where descend does
 * not take the tail; NotImplemented when the span is not such items or a value does not
 * decode (the Python path reads and answers). One read of the span either way. Mirrors
 * read/views.py LazyBlockList.value_at. */
static PyObject *span_value(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 7 || !PyList_CheckExact(args[6])) {
        PyErr_SetString(PyExc_TypeError, "span_value(src, offset, size, count, j, decode, tail: list)");
        return NULL;
    }
    Py_ssize_t offset = PyLong_AsSsize_t(args[1]), size = PyLong_AsSsize_t(args[2]);
    Py_ssize_t count = PyLong_AsSsize_t(args[3]), j = PyLong_AsSsize_t(args[4]);
    if (PyErr_Occurred()) return NULL;
    if (j < 0 || j >= count) Py_RETURN_NOTIMPLEMENTED;
    unsigned char buf[16384];
    const unsigned char *data;
    Held held;
    int got = src_read(args[0], offset, size, buf, sizeof buf, &data, &held);
    if (got <= 0) {
        if (got < 0) return NULL;
        Py_RETURN_NOTIMPLEMENTED;
    }
    const unsigned char *bounds[2] = {NULL, NULL}; /* (set by item_bounds when it succeeds) */
    PyObject *result = NULL;
    if (!item_bounds(data, size, count, &j, 1, bounds)) {
        result = Py_NewRef(Py_NotImplemented);
    } else {
        const unsigned char *v = bounds[0], *vend = bounds[1]; /* moved by descend only when it takes the tail */
        int taken = descend(args[6], &v, &vend, 0);
        PyObject *value = decoded(args[5], v, vend - v);
        result =
            !value || value == Py_NotImplemented ? value : Py_BuildValue("(NO)", value, taken ? Py_True : Py_False);
    }
    held_release(&held);
    return result;
}

/* descend_value(data, tail, decode): the value that the path tail (a list of segments, as
 * descend takes them) names inside the one msgpack value data holds, decoded; NotImplemented
 * when data is not exactly one value, descend does not take the tail, or the value does not
 * decode: the Python path then decodes data whole and resolves the tail in it, and raises
 * what it raises. Mirrors read/paths.py resolve over the value decoded whole
 * (read/views.py LazyInlineDict.value_at). */
static int buffer_arg(const char *fn, const char *name, PyObject *o, Py_buffer *view, int writable); /* below */

static PyObject *descend_value(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *data, *tail, *decode;
    if (!PyArg_ParseTuple(args, "OO!O:descend_value", &data, &PyList_Type, &tail, &decode)) return NULL;
    Py_buffer v;
    if (buffer_arg("descend_value", "data", data, &v, 0) < 0) return NULL;
    const unsigned char *at = v.buf, *stop = at + v.len;
    PyObject *result;
    /* (a tail's first step walks the value to its end: it checks that the value is one item) */
    int one = PyList_GET_SIZE(tail) ? descend(tail, &at, &stop, 1) : v.len > 0 && skip(at, stop) == stop;
    if (v.len < 1 || !one) result = Py_NewRef(Py_NotImplemented);
    else result = decoded(decode, at, stop - at);
    PyBuffer_Release(&v);
    return result;
}

/* group_indices(members, depth, n): read_many's grouping of paths under a list of n items
 * (msglc/read/local_many.py): members are (position, segments) pairs whose segment at depth must
 * be an exact str of 1 to 18 ASCII digits naming an item in range. Returns (indices, groups,
 * tails): the items named, ascending; for each, the members naming it, in their order; for
 * each, the segments after depth of its one member (None when several name it or nothing
 * follows). None when any member is otherwise: the Python loop then sorts them out. Mirrors
 * the grouping loop of read/local_many.py _Batch.step (by_seg, then sorted, then _tail). */
typedef struct {
    Py_ssize_t index, at;
} Named;

/* By item, then by position among the members (a stable sort by item, as sorted(by_seg)). */
static int named_order(const void *a, const void *b) {
    const Named *x = a, *y = b;
    if (x->index != y->index) return x->index < y->index ? -1 : 1;
    return x->at < y->at ? -1 : x->at > y->at;
}

static PyObject *group_indices(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *members;
    Py_ssize_t depth, n;
    if (!PyArg_ParseTuple(args, "O!nn", &PyList_Type, &members, &depth, &n)) return NULL;
    Py_ssize_t count = PyList_GET_SIZE(members);
    if (depth < 0 || count == 0) Py_RETURN_NONE;
    Named *named = PyMem_Malloc(sizeof(Named) * (size_t)count);
    if (!named) return PyErr_NoMemory();
    for (Py_ssize_t k = 0; k < count; k++) {
        PyObject *m = PyList_GET_ITEM(members, k), *segs;
        if (!PyTuple_CheckExact(m) || PyTuple_GET_SIZE(m) != 2 || !PyList_CheckExact(segs = PyTuple_GET_ITEM(m, 1)) ||
            PyList_GET_SIZE(segs) <= depth)
            goto other;
        PyObject *seg = PyList_GET_ITEM(segs, depth);
        if (!PyUnicode_CheckExact(seg) || !PyUnicode_IS_ASCII(seg)) goto other;
        Py_ssize_t len = PyUnicode_GET_LENGTH(seg);
        const char *text = (const char *)PyUnicode_1BYTE_DATA(seg);
        if (len < 1 || len > 18) goto other;
        Py_ssize_t index = 0;
        for (Py_ssize_t c = 0; c < len; c++) {
            if (text[c] < '0' || text[c] > '9') goto other;
            index = index * 10 + (text[c] - '0');
        }
        if (index >= n) goto other;
        named[k].index = index, named[k].at = k;
    }
    qsort(named, (size_t)count, sizeof(Named), named_order);
    PyObject *indices = PyList_New(0), *groups = PyList_New(0), *tails = PyList_New(0), *result = NULL;
    if (!indices || !groups || !tails) goto done;
    for (Py_ssize_t k = 0; k < count;) {
        Py_ssize_t end = k + 1;
        while (end < count && named[end].index == named[k].index) end++;
        PyObject *index = PyLong_FromSsize_t(named[k].index), *group = PyList_New(end - k), *tail = Py_None;
        if (!index || !group) {
            Py_XDECREF(index), Py_XDECREF(group);
            goto done;
        }
        for (Py_ssize_t e = k; e < end; e++)
            PyList_SET_ITEM(group, e - k, Py_NewRef(PyList_GET_ITEM(members, named[e].at)));
        PyObject *segs = PyTuple_GET_ITEM(PyList_GET_ITEM(members, named[k].at), 1);
        if (end == k + 1 && PyList_GET_SIZE(segs) > depth + 1) {
            tail = PyList_GetSlice(segs, depth + 1, PyList_GET_SIZE(segs));
            if (!tail) {
                Py_DECREF(index), Py_DECREF(group);
                goto done;
            }
        } else {
            Py_INCREF(tail);
        }
        int failed =
            PyList_Append(indices, index) < 0 || PyList_Append(groups, group) < 0 || PyList_Append(tails, tail) < 0;
        Py_DECREF(index), Py_DECREF(group), Py_DECREF(tail);
        if (failed) goto done;
        k = end;
    }
    result = PyTuple_Pack(3, indices, groups, tails);
done:
    Py_XDECREF(indices), Py_XDECREF(groups), Py_XDECREF(tails);
    PyMem_Free(named);
    return result;
other:
    PyMem_Free(named);
    Py_RETURN_NONE;
}

/* ---- FastGet: view lookups without a Python frame (read/views.py) -------------------------- */

/* FastGet(kind, cls, fallback, decode, switch): __getitem__ of a view class of
 * msglc/read/views.py in C, from the state the class holds in the slots named below.
 *   "stride" (fixed-stride lists): for an exact int index in range, the item read and decoded,
 *   or the row view made;
 *   "hash" (hash-indexed dicts): the whole lookup in BlockProbe.get (missing: its sentinel
 *   for a key not held, then absent(key) raises the KeyError);
 *   "inline" (dicts with their keys in the node): a key whose value is a view the archive
 *   keeps (Archive.views[(base, pos, key)], a views.ViewCache, set by
 *   LazyInlineDict._lookup), or a value without a node of its own, read and decoded, its
 *   index from the view's key map (its _keys slot, read.archive.NodeCache.key_map).
 * Only on a view without a cache, over an open archive; everything else (other index kinds,
 * errors, damage, switch["speedups"] set to None) calls fallback, the Python __getitem__,
 * which gives the same answers. Mirrors read/views.py LazyStrideList.__getitem__ and
 * LazyDict.__getitem__ (with LazyHashDict._lookup and LazyInlineDict._lookup).
 *
 * It reads Python state by name, so a rename on the Python side must be made here too (a
 * slot that is missing makes FastGet() raise TypeError at import; an attribute that is
 * missing raises AttributeError at the lookup):
 *   slots (their offsets taken once, by fast_offsets):
 *     _a, _base, _pos, _nsize, _cache   read/part.py Bound and LazyPart .__slots__
 *     _h, _n, _s, _whole, _next         read/views.py LazyStrideList.__slots__
 *     _node                             read/views.py LazyDict.__slots__
 *     _index                            read/views.py LazyHashDict.__slots__
 *     _keys                             read/views.py LazyInlineDict.__slots__
 *   attributes (str_* below, looked up at each call):
 *     c_read, closed, views             read/archive.py Archive (the view's _a)
 *     probe                             read/dict_index.py BlockIndex (LazyHashDict._index)
 *     kid_keys                          format/nodes.py HashMapNode (LazyHashDict._node)
 *     kids, koffs, voffs                format/nodes.py MapNode (LazyInlineDict._node)
 *     "speedups" (a key of switch)      util/accel.py speedups (switch is vars(accel)) */
enum { S_A, S_BASE, S_CACHE, S_POS, S_NSIZE, S_H, S_N, S_S, S_WHOLE, S_NEXT, S_MAX };
enum { H_INDEX = S_POS, H_NODE, H_COUNT };
enum { I_KEYS = H_COUNT, I_COUNT };
#define S_COUNT S_MAX
static const char *const stride_slots[S_COUNT] = {"_a", "_base", "_cache", "_pos",   "_nsize",
                                                  "_h", "_n",    "_s",     "_whole", "_next"};
static const char *const hash_slots[H_COUNT] = {"_a", "_base", "_cache", "_index", "_node"};
static const char *const inline_slots[I_COUNT] = {"_a", "_base", "_cache", "_pos", "_node", "_keys"};
static PyObject *str_c_read, *str_closed, *str_speedups, *str_probe, *str_kid_keys;
static PyObject *str_views, *str_kids, *str_koffs, *str_voffs;
enum { K_STRIDE, K_HASH, K_INLINE };

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    int kind; /* K_STRIDE, K_HASH or K_INLINE */
    PyTypeObject *cls;
    PyObject *fallback, *decode, *sw, *missing, *absent;
    Py_ssize_t at[S_MAX];
} FastGet;

#define SLOT(obj, g, k) (*(PyObject **)((char *)(obj) + (g)->at[k]))

/* The offsets of the named slots in cls's instances (TypeError naming one that is not a
 * writable object slot): read by SLOT without an attribute lookup. C only. */
static int fast_offsets(FastGet *g, const char *const *names, int count) {
    for (int k = 0; k < count; k++) {
        PyObject *d = PyObject_GetAttrString((PyObject *)g->cls, names[k]);
        if (!d && !PyErr_ExceptionMatches(PyExc_AttributeError)) return -1;
        PyErr_Clear();
        int ok = d && Py_IS_TYPE(d, &PyMemberDescr_Type) && ((PyMemberDescrObject *)d)->d_member->type == T_OBJECT_EX &&
                 !(((PyMemberDescrObject *)d)->d_member->flags & READONLY);
        if (ok) g->at[k] = ((PyMemberDescrObject *)d)->d_member->offset;
        Py_XDECREF(d);
        if (!ok) {
            PyErr_Format(PyExc_TypeError, "FastGet: %s is not a slot of the class", names[k]);
            return -1;
        }
    }
    return 0;
}

/* The value of a lone float64 or fixint as msgspec decodes it (the matrix elements), without
 * a bytes object and a decoder call; NULL for anything else. Mirrors read/views.py _decode
 * of those two kinds. */
static PyObject *scalar(const unsigned char *p, Py_ssize_t len) {
    if (len == 9 && p[0] == 0xcb) {
        uint64_t bits = be(p + 1, 8);
        double d;
        memcpy(&d, &bits, sizeof d);
        return PyFloat_FromDouble(d);
    }
    if (len == 1 && (p[0] < 0x80 || p[0] >= 0xe0)) return PyLong_FromLong(p[0] < 0x80 ? (long)p[0] : (long)p[0] - 256);
    return NULL;
}

/* Is a's archive open (its closed attribute exactly False)? -1 with an exception. Mirrors
 * the test of read/part.py LazyPart._check_open (Archive.check_open). */
static int is_open(PyObject *a) {
    PyObject *closed = PyObject_GetAttr(a, str_closed);
    if (!closed) return -1;
    int open = closed == Py_False;
    Py_DECREF(closed);
    return open;
}

/* Item i of stride view self (0 <= i < n): its value, or its row view; NotImplemented when
 * the Python path should answer. Mirrors read/views.py LazyStrideList.__getitem__ for an
 * index in range (its item decoded, or stride_row's view made without I/O). */
static PyObject *stride_item(FastGet *g, PyObject *self, Py_ssize_t i) {
    PyObject *a = SLOT(self, g, S_A), *whole = SLOT(self, g, S_WHOLE);
    Py_ssize_t base = PyLong_AsSsize_t(SLOT(self, g, S_BASE)), h = PyLong_AsSsize_t(SLOT(self, g, S_H));
    Py_ssize_t s = PyLong_AsSsize_t(SLOT(self, g, S_S));
    if (PyErr_Occurred() || base < 0 || h < 0 || s <= 0 || i > (PY_SSIZE_T_MAX - base - h) / s) {
        PyErr_Clear();
        Py_RETURN_NOTIMPLEMENTED;
    }
    Py_ssize_t off = base + h + i * s;
    if (whole == Py_True) {
        PyObject *src = PyObject_GetAttr(a, str_c_read);
        if (!src) return NULL;
        unsigned char buf[256];
        const unsigned char *data;
        Held held;
        int got = src_read(src, off, s, buf, sizeof buf, &data, &held);
        Py_DECREF(src);
        if (got <= 0) return got < 0 ? NULL : Py_NewRef(Py_NotImplemented);
        PyObject *value = scalar(data, s);
        if (!value) value = decoded(g->decode, data, s);
        held_release(&held);
        return value;
    }
    PyObject *next = SLOT(self, g, S_NEXT);
    int open = is_open(a);
    if (open < 0) return NULL;
    if (whole != Py_False || !open || !PyTuple_CheckExact(next) || PyTuple_GET_SIZE(next) != 5)
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *row = g->cls->tp_alloc(g->cls, 0), *start = PyLong_FromSsize_t(off), *zero = PyLong_FromLong(0);
    if (!row || !start || !zero) {
        Py_XDECREF(row), Py_XDECREF(start), Py_XDECREF(zero);
        return NULL;
    }
    SLOT(row, g, S_A) = Py_NewRef(a);
    SLOT(row, g, S_BASE) = start;
    SLOT(row, g, S_POS) = Py_NewRef(SLOT(self, g, S_POS));
    SLOT(row, g, S_NSIZE) = zero; /* no node of its own: its parent's describes it */
    SLOT(row, g, S_CACHE) = Py_NewRef(Py_None);
    for (int k = 0; k < 5; k++) SLOT(row, g, S_H + k) = Py_NewRef(PyTuple_GET_ITEM(next, k));
    return row;
}

/* view[key] of a stride view: an exact int in range, else NotImplemented (slices, negative
 * indexes: the Python path). The index test of LazyStrideList.__getitem__. */
static PyObject *stride_get(FastGet *g, PyObject *self, PyObject *key) {
    if (!PyLong_CheckExact(key)) Py_RETURN_NOTIMPLEMENTED;
    Py_ssize_t i = PyLong_AsSsize_t(key), n = PyLong_AsSsize_t(SLOT(self, g, S_N));
    if (PyErr_Occurred()) {
        PyErr_Clear();
        Py_RETURN_NOTIMPLEMENTED;
    }
    if (i < 0 || i >= n) Py_RETURN_NOTIMPLEMENTED;
    return stride_item(g, self, i);
}

/* The value of key in hash view self, or NotImplemented (KeyError raised for a key it does
 * not hold). Mirrors read/views.py LazyHashDict._lookup, through BlockProbe.get or DirectProbe.get. */
static PyObject *hash_get(FastGet *g, PyObject *self, PyObject *key) {
    PyObject *index = SLOT(self, g, H_INDEX), *a = SLOT(self, g, S_A);
    if (index == Py_None) Py_RETURN_NOTIMPLEMENTED;
    PyObject *probe = PyObject_GetAttr(index, str_probe), *kids = PyObject_GetAttr(SLOT(self, g, H_NODE), str_kid_keys);
    int open = is_open(a);
    PyObject *src = PyObject_GetAttr(a, str_c_read), *value = NULL;
    if (probe && kids && src && open >= 0) {
        int block = Py_IS_TYPE(probe, &BlockProbeType), direct = Py_IS_TYPE(probe, &DirectProbeType);
        if (!open || !(block || direct) || !PyDict_CheckExact(kids) || PyDict_GET_SIZE(kids)) {
            value = Py_NewRef(Py_NotImplemented);
        } else {
            PyObject *args[5] = {src, SLOT(self, g, S_BASE), key, g->decode, g->missing};
            value = block ? probe_get((BlockProbe *)probe, args, 5) : direct_get((DirectProbe *)probe, args, 5);
        }
    }
    Py_XDECREF(probe), Py_XDECREF(kids), Py_XDECREF(src);
    if (value == g->missing) { /* absent(key) raises the KeyError, from a frame of msglc */
        Py_DECREF(value);
        return PyObject_CallOneArg(g->absent, key);
    }
    return value;
}

/* Item j of the exact list l as a Py_ssize_t; -1 when it is none (no exception). l[j] of a
 * node's koffs or voffs. */
static Py_ssize_t list_at(PyObject *l, Py_ssize_t j) {
    if (!l || !PyList_CheckExact(l) || j < 0 || j >= PyList_GET_SIZE(l)) return -1;
    Py_ssize_t v = PyLong_AsSsize_t(PyList_GET_ITEM(l, j));
    if (v == -1) PyErr_Clear();
    return v;
}

/* Borrowed d[key] of an exact dict d; NULL when absent or d is no dict (an exception only
 * from a key's __eq__). d.get(key) of Archive.views and key_maps. */
static PyObject *dict_item(PyObject *d, PyObject *key) {
    return d && PyDict_CheckExact(d) ? PyDict_GetItemWithError(d, key) : NULL;
}

/* The value of key j of inline view self (entry [k0, k1) of the dict at base, its value at
 * v) read and decoded, when it is no container with a node of its own; NotImplemented when
 * the Python path should answer (it then also says what is damaged). Mirrors the end of
 * read/views.py LazyInlineDict._lookup (_check_key, then decode). */
static PyObject *inline_value(FastGet *g, PyObject *a, Py_ssize_t base, PyObject *key, Py_ssize_t k0, Py_ssize_t v,
                              Py_ssize_t k1) {
    unsigned char kb[256], buf[256];
    Py_ssize_t klen = encode_key(key, kb, sizeof kb);
    if (!klen || v - k0 != klen || base > PY_SSIZE_T_MAX - k1) Py_RETURN_NOTIMPLEMENTED;
    PyObject *src = PyObject_GetAttr(a, str_c_read);
    if (!src) return NULL;
    const unsigned char *data;
    Held held;
    int got = src_read(src, base + k0, k1 - k0, buf, sizeof buf, &data, &held);
    Py_DECREF(src);
    if (got <= 0) return got < 0 ? NULL : Py_NewRef(Py_NotImplemented);
    PyObject *value = memcmp(data, kb, (size_t)klen) ? Py_NewRef(Py_NotImplemented) : scalar(data + klen, k1 - v);
    if (!value) value = decoded(g->decode, data + klen, k1 - v);
    held_release(&held);
    return value;
}

/* The value of key in inline view self: a view the archive keeps for it
 * (Archive.views[(base, pos, key)], which LazyInlineDict._lookup sets), or a value without a
 * node read and decoded; NotImplemented for the rest (a key map not made yet, a key it
 * does not hold, a container's first lookup). Mirrors read/views.py
 * LazyInlineDict._lookup. */
static PyObject *inline_get(FastGet *g, PyObject *self, PyObject *key) {
    if (!PyUnicode_CheckExact(key) && !PyLong_CheckExact(key)) Py_RETURN_NOTIMPLEMENTED;
    PyObject *a = SLOT(self, g, S_A), *node = SLOT(self, g, H_NODE), *pos = SLOT(self, g, S_POS);
    int open = is_open(a);
    if (open <= 0) return open < 0 ? NULL : Py_NewRef(Py_NotImplemented);
    PyObject *views = PyObject_GetAttr(a, str_views), *where = PyTuple_Pack(3, SLOT(self, g, S_BASE), pos, key);
    /* a ViewCache: a dict subclass that keeps dict's lookup */
    PyObject *made = views && where && PyDict_Check(views) ? Py_XNewRef(PyDict_GetItemWithError(views, where)) : NULL;
    Py_XDECREF(views), Py_XDECREF(where);
    if (made || PyErr_Occurred()) return made;
    PyObject *kids = PyObject_GetAttr(node, str_kids);
    PyObject *koffs = PyObject_GetAttr(node, str_koffs), *voffs = PyObject_GetAttr(node, str_voffs), *value = NULL;
    if (kids && koffs && voffs) {
        PyObject *at = dict_item(SLOT(self, g, I_KEYS), key); /* its key map: None until the Python path made it */
        Py_ssize_t j = at ? PyLong_AsSsize_t(at) : -1, base = PyLong_AsSsize_t(SLOT(self, g, S_BASE));
        Py_ssize_t k0 = list_at(koffs, j), v = list_at(voffs, j), k1 = list_at(koffs, j + 1);
        int kid = at ? PyDict_Contains(kids, at) : 1;
        if (PyErr_Occurred()) PyErr_Clear(); /* the Python path raises it again */
        if (kid || j < 0 || base < 0 || k0 < 0 || v <= k0 || k1 <= v) value = Py_NewRef(Py_NotImplemented);
        else value = inline_value(g, a, base, key, k0, v, k1);
    }
    Py_XDECREF(kids), Py_XDECREF(koffs), Py_XDECREF(voffs);
    return value;
}

/* view.__getitem__(key): the C lookup of g's kind when the view is ready for it (its slots
 * set, no cache, the switch on), else fallback. Mirrors LazyStrideList.__getitem__ and
 * LazyDict.__getitem__ (read/views.py), which fallback is. */
static PyObject *fast_call(FastGet *g, PyObject *const *args, size_t nargsf, PyObject *kw) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != 2 || (kw && PyTuple_GET_SIZE(kw))) /* view.__getitem__(key=k) and the like: as Python answers */
        return PyObject_Vectorcall(g->fallback, args, (size_t)nargs, kw);
    PyObject *self = args[0];
    if (PyObject_TypeCheck(self, g->cls)) {
        PyObject *sw = PyDict_GetItemWithError(g->sw, str_speedups);
        if (!sw && PyErr_Occurred()) return NULL;
        int ready = sw && sw != Py_None;
        int slots = g->kind == K_STRIDE ? S_COUNT : g->kind == K_INLINE ? I_COUNT : H_COUNT;
        for (int k = 0; ready && k < slots; k++) ready = SLOT(self, g, k) != NULL;
        if (ready && SLOT(self, g, S_CACHE) == Py_None) {
            PyObject *got = g->kind == K_HASH     ? hash_get(g, self, args[1])
                            : g->kind == K_INLINE ? inline_get(g, self, args[1])
                                                  : stride_get(g, self, args[1]);
            if (got != Py_NotImplemented) return got;
            Py_DECREF(got);
        }
    }
    return PyObject_Vectorcall(g->fallback, args, 2, NULL);
}

/* FastGet(kind, cls, fallback, decode, switch[, missing, absent]), as read/views.py makes
 * them at import. */
static PyObject *fast_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    const char *kind;
    PyObject *cls, *fallback, *decode, *sw, *missing = Py_None, *absent = Py_None;
    if ((kw && PyDict_GET_SIZE(kw)) || !PyArg_ParseTuple(args, "sO!OOO!|OO", &kind, &PyType_Type, &cls, &fallback,
                                                         &decode, &PyDict_Type, &sw, &missing, &absent)) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "FastGet(kind, cls, fallback, decode, switch[, missing, absent])");
        return NULL;
    }
    int k = strcmp(kind, "hash") == 0 ? K_HASH : strcmp(kind, "inline") == 0 ? K_INLINE : K_STRIDE;
    if (k == K_STRIDE && strcmp(kind, "stride") != 0) {
        PyErr_Format(PyExc_ValueError, "FastGet: no kind %s", kind);
        return NULL;
    }
    if (k == K_HASH && !PyCallable_Check(absent)) {
        PyErr_SetString(PyExc_TypeError, "FastGet: a hash kind needs absent(key), which raises its KeyError");
        return NULL;
    }
    FastGet *g = (FastGet *)type->tp_alloc(type, 0);
    if (!g) return NULL;
    g->vectorcall = (vectorcallfunc)fast_call;
    g->kind = k;
    g->cls = (PyTypeObject *)Py_NewRef(cls);
    g->fallback = Py_NewRef(fallback), g->decode = Py_NewRef(decode), g->sw = Py_NewRef(sw);
    g->missing = Py_NewRef(missing), g->absent = Py_NewRef(absent);
    const char *const *names = k == K_HASH ? hash_slots : k == K_INLINE ? inline_slots : stride_slots;
    if (fast_offsets(g, names, k == K_STRIDE ? S_COUNT : k == K_INLINE ? I_COUNT : H_COUNT) < 0) {
        Py_DECREF(g);
        return NULL;
    }
    return (PyObject *)g;
}

/* Drops the references fast_new took (C only). */
static void fast_dealloc(FastGet *g) {
    Py_XDECREF(g->cls), Py_XDECREF(g->fallback), Py_XDECREF(g->decode);
    Py_XDECREF(g->sw), Py_XDECREF(g->missing), Py_XDECREF(g->absent);
    Py_TYPE(g)->tp_free((PyObject *)g);
}

/* What a function has, from fallback's: __name__, __qualname__, __doc__ (introspection,
 * pickling a bound view.__getitem__ by name), __wrapped__ (inspect.signature). */
static PyObject *fast_attr(FastGet *g, void *name) {
    if (strcmp((const char *)name, "__wrapped__") == 0) return Py_NewRef(g->fallback);
    return PyObject_GetAttrString(g->fallback, (const char *)name);
}

static PyGetSetDef fast_getset[] = {
    {"__name__", (getter)fast_attr, NULL, NULL, "__name__"},
    {"__qualname__", (getter)fast_attr, NULL, NULL, "__qualname__"},
    {"__doc__", (getter)fast_attr, NULL, NULL, "__doc__"},
    {"__wrapped__", (getter)fast_attr, NULL, NULL, "__wrapped__"},
    {NULL, NULL, NULL, NULL, NULL},
};

/* Pickled as what it is, cls.__getitem__ (that of the pure-Python path where it is unpickled
 * without the accelerator): cloudpickle pickles a bound method's function itself. */
static PyObject *fast_reduce(FastGet *g, PyObject *unused) {
    (void)unused;
    PyObject *getattr_ = PyDict_GetItemString(PyEval_GetBuiltins(), "getattr");
    if (!getattr_) {
        PyErr_SetString(PyExc_RuntimeError, "FastGet: no builtins.getattr");
        return NULL;
    }
    return Py_BuildValue("(O(Os))", getattr_, (PyObject *)g->cls, "__getitem__");
}

static PyMethodDef fast_methods[] = {
    {"__reduce__", (PyCFunction)fast_reduce, METH_NOARGS, "cls.__getitem__, by name."},
    {NULL, NULL, 0, NULL},
};

/* As a method: view.__getitem__ is bound like a function's. */
static PyObject *fast_descr_get(PyObject *g, PyObject *obj, PyObject *type) {
    (void)type;
    if (!obj || obj == Py_None) return Py_NewRef(g);
    return PyMethod_New(g, obj);
}

static PyTypeObject FastGetType = {
    /* clang-format off */
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "msglc._speedups.FastGet",
    /* clang-format on */
    .tp_basicsize = sizeof(FastGet),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "__getitem__ of a view class in C (see fast_call).",
    .tp_new = fast_new,
    .tp_dealloc = (destructor)fast_dealloc,
    .tp_vectorcall_offset = offsetof(FastGet, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_descr_get = fast_descr_get,
    .tp_getset = fast_getset,
    .tp_methods = fast_methods,
};

/* ============================================================================================
 * Both: the binary fuse and the byte shuffle (msglc/format/)
 * ============================================================================================ */

/* ---- fuse-indexed dicts, node type 7 (format/fuse.py) -------------------------------------- */

/* A base hash mixed with the seed (murmur3's 64-bit finalizer). Mirrors format/fuse.py mix. */
static uint64_t fuse_mix(uint64_t x, uint64_t seed) {
    x ^= seed * 0x9E3779B97F4A7C15ull;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

/* The three slots of hash h in a fuse of seg_count segments of 1 << seg_bits slots. Mirrors
 * format/fuse.py slots_of. */
static void fuse_slots(uint64_t h, int seg_bits, uint64_t seg_count, uint64_t *slot) {
    uint64_t len = (uint64_t)1 << seg_bits, mask = len - 1;
    uint64_t hi = (uint64_t)(((__uint128_t)h * (__uint128_t)(seg_count * len)) >> 64);
    slot[0] = hi;
    slot[1] = (hi + len) ^ ((h >> 18) & mask);
    slot[2] = (hi + 2 * len) ^ (h & mask);
}

/* Slot i of w bits (LSB first). Mirrors format/fuse.py slot_value. */
static uint32_t slot_get(const unsigned char *packed, uint64_t i, int w) {
    uint64_t bit = i * (uint64_t)w;
    return bits_at(packed + (bit >> 3), (int)(bit & 7), w);
}

/* fuse_build(hashes, values, slot_bits, seg_bits, seg_count, seed) -> bytes or None: the
 * packed slots (slot_bits each, LSB first) of a 3-wise binary fuse in which every key's three
 * slots xor to its value, for keys of these base hashes (u64 LE) and values (u32 LE); None
 * when the keys do not peel (try another seed). No pure-Python twin: format/fuse.py build
 * calls it for each seed, and returns None without this module (the writer then writes a
 * type-6 index: write/indexer.py TocBuilder.fuse_node); read/verify.py calls it to rebuild
 * a fuse and compare it with the stored one. */
/* A slot while a fuse is built: how many keys use it, the xor of their values and the xor of
 * their hashes, so that the one key left in a slot is known from the slot alone; once every
 * key is peeled, all are 0 and ``values`` holds the slot's value. One record: a key's slot is
 * one cache miss. */
typedef struct {
    uint32_t count, values;
    uint64_t hashes;
} fuse_cell;

/* A peeled key: its hash, its value and which of its slots it was peeled at. */
typedef struct {
    uint64_t h;
    uint32_t value, which;
} fuse_peeled;

/* fuse_build's work, without the GIL: 1 and ``packed`` filled, or 0 when the keys do not peel.
 * Keys are peeled in the order format.md specifies (a stack of slots used by one key, pushed
 * in ascending order, then as they come free), and assigned in the reverse order. The slots'
 * sums are made with the keys sorted by their first slot's segment (a counting sort into
 * ``sh``, ``sv``): the same sums, and each key's three slots lie near the last key's. */
static int fuse_peel(const unsigned char *hb, const unsigned char *vb, Py_ssize_t n, int w, int seg_bits,
                     uint64_t seg_count, uint64_t seed, uint64_t slots, uint64_t *sh, uint32_t *sv, fuse_peeled *stack,
                     uint64_t *queue, fuse_cell *cell, unsigned char *packed) {
    uint64_t s[3];
    uint32_t mask = (uint32_t)(((uint64_t)1 << w) - 1);
    uint64_t *start = queue; /* seg_count + 1 counters (zeroed: big_zeroed), before the queue is used */
    /* each hash is read once (into ``mixed``, the stack's room until the peeling): the hashes'
       buffer may change meanwhile (a bytearray, the GIL let go), and a count that does not
       match the placement would write past ``sh`` */
    uint64_t *mixed = (uint64_t *)stack;
    for (Py_ssize_t i = 0; i < n; i++) {
        mixed[i] = fuse_mix(le(hb + 8 * i, 8), seed);
        fuse_slots(mixed[i], seg_bits, seg_count, s);
        start[(s[0] >> seg_bits) + 1]++;
    }
    for (uint64_t g = 0; g < seg_count; g++) start[g + 1] += start[g];
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t hh = mixed[i];
        fuse_slots(hh, seg_bits, seg_count, s);
        uint64_t at = start[s[0] >> seg_bits]++;
        sh[at] = hh;
        sv[at] = (vb[4 * i] | vb[4 * i + 1] << 8 | vb[4 * i + 2] << 16 | (uint32_t)vb[4 * i + 3] << 24) & mask;
    }
    for (Py_ssize_t j = 0; j < n; j++) {
        uint64_t hh = sh[j];
        uint32_t v = sv[j];
        fuse_slots(hh, seg_bits, seg_count, s);
        for (int k = 0; k < 3; k++) {
            fuse_cell *c = &cell[s[k]];
            c->count++, c->values ^= v, c->hashes ^= hh;
        }
    }
    uint64_t qn = 0, sn = 0;
    for (uint64_t q = 0; q < slots; q++)
        if (cell[q].count == 1) queue[qn++] = q;
    while (qn) {
        uint64_t q = queue[--qn];
        if (cell[q].count != 1) continue;
        uint32_t v = cell[q].values;
        uint64_t hh = cell[q].hashes;
        fuse_slots(hh, seg_bits, seg_count, s);
        int which = s[0] == q ? 0 : s[1] == q ? 1 : 2;
        stack[sn].h = hh, stack[sn].value = v, stack[sn].which = (uint32_t)which, sn++;
        for (int k = 0; k < 3; k++) {
            fuse_cell *c = &cell[s[k]];
            c->count--, c->values ^= v, c->hashes ^= hh;
            if (k != which && c->count == 1) queue[qn++] = s[k];
        }
    }
    if (sn != (uint64_t)n) return 0;
    /* every count and xor is 0 now: ``values`` holds each slot's value from here on */
    while (sn) {
        fuse_peeled *top = &stack[--sn];
        fuse_slots(top->h, seg_bits, seg_count, s);
        uint32_t v = top->value;
        for (int k = 0; k < 3; k++)
            if (k != (int)top->which) v ^= cell[s[k]].values;
        cell[s[top->which]].values = v;
    }
    /* packed LSB first, w bits a slot; the bits past the last slot are 0 */
    uint64_t acc = 0, at = 0;
    int held = 0;
    for (uint64_t q = 0; q < slots; q++) {
        acc |= (uint64_t)cell[q].values << held;
        held += w;
        while (held >= 8) packed[at++] = (unsigned char)acc, acc >>= 8, held -= 8;
    }
    if (held) packed[at] = (unsigned char)acc; /* the last byte, in part */
    return 1;
}

/* Memory for fuse_build's arrays (tens of MB, reached at random): zeroed, and in huge pages
 * where the system gives them on request (Linux's transparent huge pages in "madvise" mode),
 * so that the peeling's random reads miss the TLB far less. Freed with big_free. */
static void *big_zeroed(size_t size) {
#if defined(MAP_ANONYMOUS) && defined(MADV_HUGEPAGE)
    if (size >= ((size_t)1 << 21)) {
        void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return NULL;
        (void)madvise(p, size, MADV_HUGEPAGE); /* a hint: without it, ordinary pages */
        return p;
    }
#endif
    return calloc(1, size ? size : 1);
}

static void big_free(void *p, size_t size) {
    if (!p) return;
#if defined(MAP_ANONYMOUS) && defined(MADV_HUGEPAGE)
    if (size >= ((size_t)1 << 21)) {
        munmap(p, size);
        return;
    }
#endif
    free(p);
}

static PyObject *fuse_build(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer hv, vv;
    int w, seg_bits;
    unsigned long long seg_count, seed;
    if (!PyArg_ParseTuple(args, "y*y*iiKK", &hv, &vv, &w, &seg_bits, &seg_count, &seed)) return NULL;
    PyObject *out = NULL;
    uint64_t *sh = NULL, *queue = NULL;
    size_t sh_size = 0, sv_size = 0, stack_size = 0, queue_size = 0, cell_size = 0;
    uint32_t *sv = NULL;
    fuse_peeled *stack = NULL;
    fuse_cell *cell = NULL;
    Py_ssize_t n = hv.len / 8;
    uint64_t len = seg_bits >= 0 && seg_bits <= 24 ? (uint64_t)1 << seg_bits : 0;
    uint64_t slots = (seg_count + 2) * len;
    if (hv.len % 8 || vv.len != n * 4 || w < 1 || w > 32 || !len || !seg_count || seg_count > ((uint64_t)1 << 32) ||
        (uint64_t)n > 0xFFFFFFFFu || slots < (uint64_t)n) {
        PyErr_SetString(PyExc_ValueError, "fuse_build: arguments out of range");
        goto done;
    }
    const unsigned char *hb = hv.buf, *vb = vv.buf;
    uint64_t queued = slots > seg_count + 1 ? slots : seg_count + 1;
    if ((uint64_t)n > SIZE_MAX / sizeof(fuse_peeled) || queued > SIZE_MAX / sizeof(fuse_cell) ||
        (slots * (uint64_t)w + 7) / 8 > (uint64_t)PY_SSIZE_T_MAX) { /* (sizes past what a size_t holds) */
        PyErr_NoMemory();
        goto done;
    }
    sh_size = sizeof(uint64_t) * (size_t)n, sv_size = sizeof(uint32_t) * (size_t)n;
    stack_size = sizeof(fuse_peeled) * (size_t)n;
    queue_size = sizeof(uint64_t) * (size_t)queued;
    cell_size = sizeof(fuse_cell) * (size_t)slots;
    sh = big_zeroed(sh_size);
    sv = big_zeroed(sv_size);
    stack = big_zeroed(stack_size);
    queue = big_zeroed(queue_size);
    cell = big_zeroed(cell_size);
    out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)((slots * (uint64_t)w + 7) / 8));
    if (!sh || !sv || !stack || !queue || !cell || !out) {
        if (out) Py_CLEAR(out);
        else PyErr_Clear();
        PyErr_NoMemory();
        goto done;
    }
    unsigned char *packed = (unsigned char *)PyBytes_AS_STRING(out);
    int peeled;
    Py_BEGIN_ALLOW_THREADS /* the buffers are held and no Python object is touched: a compressed
                              dump's threads compress the data meanwhile */
    peeled = fuse_peel(hb, vb, n, w, seg_bits, seg_count, seed, slots, sh, sv, stack, queue, cell, packed);
    Py_END_ALLOW_THREADS
    if (!peeled) Py_SETREF(out, Py_NewRef(Py_None));
done:
    big_free(sh, sh_size);
    big_free(sv, sv_size);
    big_free(stack, stack_size);
    big_free(queue, queue_size);
    big_free(cell, cell_size);
    PyBuffer_Release(&hv);
    PyBuffer_Release(&vv);
    return out;
}

/* fuse_check(packed, hashes, values, slot_bits, seg_bits, seg_count, seed) -> int: the first
 * key whose three slots do not xor to its value, or -1. Mirrors the pure-Python check of a
 * fuse in read/verify.py (slots_of and slot_value per key); msglc does not call it at present
 * (verify rebuilds the fuse with fuse_build instead). */
static PyObject *fuse_check(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer pv, hv, vv;
    int w, seg_bits;
    unsigned long long seg_count, seed;
    if (!PyArg_ParseTuple(args, "y*y*y*iiKK", &pv, &hv, &vv, &w, &seg_bits, &seg_count, &seed)) return NULL;
    PyObject *out = NULL;
    Py_ssize_t n = hv.len / 8;
    uint64_t len = seg_bits >= 0 && seg_bits <= 24 ? (uint64_t)1 << seg_bits : 0;
    uint64_t slots = (seg_count + 2) * len;
    if (hv.len % 8 || vv.len != n * 4 || w < 1 || w > 32 || !len || !seg_count || seg_count > ((uint64_t)1 << 32) ||
        (uint64_t)pv.len * 8 < slots * (uint64_t)w + 7 - 7) {
        PyErr_SetString(PyExc_ValueError, "fuse_check: arguments out of range");
        goto done;
    }
    const unsigned char *hb = hv.buf, *vb = vv.buf, *packed = pv.buf;
    uint64_t mask = ((uint64_t)1 << w) - 1, s[3];
    Py_ssize_t bad = -1;
    for (Py_ssize_t i = 0; i < n && bad < 0; i++) {
        fuse_slots(fuse_mix(le(hb + 8 * i, 8), seed), seg_bits, seg_count, s);
        uint32_t want =
            (uint32_t)((vb[4 * i] | vb[4 * i + 1] << 8 | vb[4 * i + 2] << 16 | (uint32_t)vb[4 * i + 3] << 24) & mask);
        if ((slot_get(packed, s[0], w) ^ slot_get(packed, s[1], w) ^ slot_get(packed, s[2], w)) != want) bad = i;
    }
    out = PyLong_FromSsize_t(bad);
done:
    PyBuffer_Release(&pv);
    PyBuffer_Release(&hv);
    PyBuffer_Release(&vv);
    return out;
}

/* ---- the byte shuffle of filter code 1 (format/shuffle.py) --------------------------------- */

/* The byte shuffle of filter code 1 (docs/format.md; format/shuffle.py is the definition).
 * A frame of m elements of e bytes is stored as byte 0 of every element, then byte 1, and so
 * on: plain byte j*e + k is stored byte k*m + j. Both directions transpose a byte matrix. A
 * kernel moves `count` elements whose byte planes (the shuffled side) lie `planes` bytes
 * apart: a whole frame (count == planes == m), or the whole elements of a gather.
 * With the element size a constant, GCC and Clang turn the loops into vector interleaves:
 * measured here (x86-64, GCC 12 -O3, 64 KB in cache), 16-65 GB/s for 2, 4, 8 and 16 and
 * 6-8 GB/s for 3, 5 and 9 (msgpack's 16-, 32- and 64-bit numbers with their marker byte:
 * fixed-stride lists), against about 4 GB/s for byte loops. Shuffles of 16 bytes go in
 * halves: the compilers' code for one group of 16 strided loads came out slower than this
 * (0.5 GB/s). Shuffles of 8 bytes (float64, the usual array) go through tiles of 16 elements,
 * transposed in a local buffer and written as 16-byte runs: 26 against 16 GB/s in halves. */
#if defined(_MSC_VER)
#define RESTRICT __restrict
#else
#define RESTRICT restrict
#endif

/* unshuffle_E and shuffle_E for elements of E bytes, a constant (shuffled W planes at a
 * time); the kernels are C only. */
#define SHUFFLE_KERNELS(E, W)                                                                                          \
    static void unshuffle_##E(const unsigned char *RESTRICT s, size_t planes, unsigned char *RESTRICT d,               \
                              size_t count) {                                                                          \
        for (size_t j = 0; j < count; j++)                                                                             \
            for (size_t k = 0; k < E; k++) d[j * E + k] = s[k * planes + j];                                           \
    }                                                                                                                  \
    static void shuffle_##E(const unsigned char *RESTRICT s, unsigned char *RESTRICT d, size_t planes, size_t count) { \
        for (size_t h = 0; h < E; h += W)                                                                              \
            for (size_t j = 0; j < count; j++)                                                                         \
                for (size_t k = 0; k < W; k++) d[(h + k) * planes + j] = s[j * E + h + k];                             \
    }
SHUFFLE_KERNELS(2, 2)
SHUFFLE_KERNELS(3, 3)
SHUFFLE_KERNELS(4, 4)
SHUFFLE_KERNELS(5, 5)
SHUFFLE_KERNELS(8, 8)
#define SHUFFLE_TILE 16 /* elements of 8 bytes per tile of shuffle_8_tiled */

/* shuffle_8 through tiles of SHUFFLE_TILE elements, transposed in a local buffer. */
static void shuffle_8_tiled(const unsigned char *RESTRICT s, unsigned char *RESTRICT d, size_t planes, size_t count) {
    size_t j = 0;
    for (; j + SHUFFLE_TILE <= count; j += SHUFFLE_TILE) {
        unsigned char t[8][SHUFFLE_TILE];
        for (size_t i = 0; i < SHUFFLE_TILE; i++)
            for (size_t k = 0; k < 8; k++) t[k][i] = s[(j + i) * 8 + k];
        for (size_t k = 0; k < 8; k++) memcpy(d + k * planes + j, t[k], SHUFFLE_TILE);
    }
    if (j < count) shuffle_8(s + j * 8, d + j, planes, count - j);
}
SHUFFLE_KERNELS(9, 9)
SHUFFLE_KERNELS(16, 8)

#define SHUFFLE_BLOCK 16384 /* plain bytes a generic kernel moves at a time: they stay in L1 cache */

/* Any other element size: plane by plane, a block of elements at a time. (The kernels are
 * C only: format/shuffle.py's pure-Python path moves each byte plane with one slice.) */
static void unshuffle_any(const unsigned char *RESTRICT s, size_t planes, unsigned char *RESTRICT d, size_t count,
                          size_t e) {
    size_t block = SHUFFLE_BLOCK / e;
    for (size_t j0 = 0; j0 < count; j0 += block) {
        size_t n = count - j0 < block ? count - j0 : block;
        for (size_t k = 0; k < e; k++) {
            const unsigned char *p = s + k * planes + j0;
            unsigned char *q = d + j0 * e + k;
            for (size_t j = 0; j < n; j++) q[j * e] = p[j];
        }
    }
}

/* shuffle_any: unshuffle_any's other way. */
static void shuffle_any(const unsigned char *RESTRICT s, unsigned char *RESTRICT d, size_t planes, size_t count,
                        size_t e) {
    size_t block = SHUFFLE_BLOCK / e;
    for (size_t j0 = 0; j0 < count; j0 += block) {
        size_t n = count - j0 < block ? count - j0 : block;
        for (size_t k = 0; k < e; k++) {
            const unsigned char *p = s + j0 * e + k;
            unsigned char *q = d + k * planes + j0;
            for (size_t j = 0; j < n; j++) q[j] = p[j * e];
        }
    }
}

/* The kernel for element size e, each way. */
static void unshuffle_run(const unsigned char *s, size_t planes, unsigned char *d, size_t count, size_t e) {
    switch (e) {
        case 2: unshuffle_2(s, planes, d, count); break;
        case 3: unshuffle_3(s, planes, d, count); break;
        case 4: unshuffle_4(s, planes, d, count); break;
        case 5: unshuffle_5(s, planes, d, count); break;
        case 8: unshuffle_8(s, planes, d, count); break;
        case 9: unshuffle_9(s, planes, d, count); break;
        case 16: unshuffle_16(s, planes, d, count); break;
        default: unshuffle_any(s, planes, d, count, e);
    }
}

/* The m elements of s shuffled into d. Mirrors format/shuffle.py shuffle's pure-Python path. */
static void shuffle_run(const unsigned char *s, unsigned char *d, size_t m, size_t e) {
    switch (e) {
        case 2: shuffle_2(s, d, m, m); break;
        case 3: shuffle_3(s, d, m, m); break;
        case 4: shuffle_4(s, d, m, m); break;
        case 5: shuffle_5(s, d, m, m); break;
        case 8: shuffle_8_tiled(s, d, m, m); break;
        case 9: shuffle_9(s, d, m, m); break;
        case 16: shuffle_16(s, d, m, m); break;
        default: shuffle_any(s, d, m, m, e);
    }
}

/* Plain bytes [lo, lo + n) of the shuffled bytes s (m elements of e bytes) into d: the
 * elements it covers whole by a kernel, the bytes of a partial one at each end one by one.
 * Mirrors format/shuffle.py gather_into's pure-Python path. */
static void gather_run(const unsigned char *s, size_t m, size_t e, size_t lo, unsigned char *d, size_t n) {
    size_t p = lo, hi = lo + n;
    for (; p < hi && p % e; p++) *d++ = s[(p % e) * m + p / e];
    size_t whole = (hi - p) / e;
    if (whole) {
        unshuffle_run(s + p / e, m, d, whole, e);
        d += whole * e;
        p += whole * e;
    }
    for (; p < hi; p++) *d++ = s[(p % e) * m + p / e];
}

#define SHUFFLE_NOGIL 8192 /* bytes from which a call lets other threads run while it works */

/* The name of o's type as Python's type(o).__name__ gives it (tp_name without its module),
 * so that an error names it as format/shuffle.py's does. */
static const char *type_name(PyObject *o) {
    const char *name = Py_TYPE(o)->tp_name, *dot = strrchr(name, '.');
    return dot ? dot + 1 : name;
}

/* An int argument, clipped to the Py_ssize_t range (a larger one is out of range anyway, and
 * says so as a ValueError, not an OverflowError); -1 with TypeError if it is not an int.
 * Mirrors format/shuffle.py _int (the same errors). */
static int size_arg(const char *fn, const char *name, PyObject *o, Py_ssize_t *out) {
    if (!PyIndex_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s: %s must be an int, not %.100s", fn, name, type_name(o));
        return -1;
    }
    *out = PyNumber_AsSsize_t(o, NULL);
    return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

/* A contiguous buffer argument (writable: out), or -1 with TypeError saying what it is not.
 * Mirrors format/shuffle.py _source and _target (the same errors): why a buffer is refused is
 * found as they find it, from a memoryview's request (a strided buffer with its format), since
 * exporters refuse in their own words (NumPy: a ValueError); an object that gives not even
 * that raises its own error there, as memoryview() does, unless it has no buffer at all. */
static int buffer_arg(const char *fn, const char *name, PyObject *o, Py_buffer *view, int writable) {
    if (PyObject_GetBuffer(o, view, writable ? PyBUF_WRITABLE : PyBUF_SIMPLE) == 0) return 0;
    if (!PyErr_ExceptionMatches(PyExc_BufferError) && !PyErr_ExceptionMatches(PyExc_TypeError) &&
        !PyErr_ExceptionMatches(PyExc_ValueError))
        return -1;
    PyErr_Clear();
    const char *what = "";
    Py_buffer full;
    if (PyObject_GetBuffer(o, &full, PyBUF_FULL_RO) == 0) {
        if (!PyBuffer_IsContiguous(&full, 'C')) what = "a non-contiguous ";
        else if (writable && full.readonly) what = "a read-only ";
        PyBuffer_Release(&full);
    } else if (PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyErr_Clear();
    } else {
        return -1;
    }
    PyErr_Format(PyExc_TypeError, "%s: %s must be a %scontiguous bytes-like object, not %s%.100s", fn, name,
                 writable ? "writable " : "", what, type_name(o));
    return -1;
}

/* The element size (2..255, the filter's parameter; from 1, plain bytes, where `plain`) of a
 * buffer of len bytes. Mirrors the checks of format/shuffle.py _source. */
static int element_size_arg(const char *fn, PyObject *o, Py_ssize_t len, Py_ssize_t *e, int plain) {
    if (size_arg(fn, "the element size", o, e) < 0) return -1;
    if (*e < 2 - plain || *e > 255) {
        PyErr_Format(PyExc_ValueError, "%s: the element size must be %d to 255, not %R", fn, 2 - plain, o);
        return -1;
    }
    if (len % *e) {
        PyErr_Format(PyExc_ValueError, "%s: src holds %zd bytes, not a whole number of %zd-byte elements", fn, len, *e);
        return -1;
    }
    return 0;
}

static int element_arg(const char *fn, PyObject *o, Py_ssize_t len, Py_ssize_t *e) {
    return element_size_arg(fn, o, len, e, 0);
}

/* shuffle(src, element) -> bytes: src (any contiguous buffer, a whole number of elements)
 * byte-shuffled. Mirrors format/shuffle.py shuffle (frames compressed on write). */
static PyObject *py_shuffle(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer sv;
    PyObject *so, *eo, *out = NULL;
    Py_ssize_t e;
    if (!PyArg_ParseTuple(args, "OO:shuffle", &so, &eo) || buffer_arg("shuffle", "src", so, &sv, 0) < 0) return NULL;
    if (element_arg("shuffle", eo, sv.len, &e) < 0) goto done;
    out = PyBytes_FromStringAndSize(NULL, sv.len);
    if (!out) goto done;
    const unsigned char *s = sv.buf;
    unsigned char *d = (unsigned char *)PyBytes_AS_STRING(out);
    size_t m = (size_t)(sv.len / e);
    if (sv.len >= SHUFFLE_NOGIL) {
        Py_BEGIN_ALLOW_THREADS
        shuffle_run(s, d, m, (size_t)e);
        Py_END_ALLOW_THREADS
    } else {
        shuffle_run(s, d, m, (size_t)e);
    }
done:
    PyBuffer_Release(&sv);
    return out;
}

/* Plain bytes [lo, lo + ov->len) of the shuffled sv into ov (lo checked by the caller). When
 * the two overlap, src is copied first: the result is what it would be from a separate src.
 * The common part of unshuffle_into and gather_into. */
static PyObject *gather_to(Py_buffer *sv, Py_ssize_t e, Py_ssize_t lo, Py_buffer *ov) {
    const unsigned char *s = sv->buf;
    unsigned char *d = ov->buf, *copy = NULL;
    if (ov->len && sv->len && d < s + sv->len && s < d + ov->len) {
        copy = PyMem_Malloc((size_t)sv->len);
        if (!copy) return PyErr_NoMemory();
        memcpy(copy, s, (size_t)sv->len);
        s = copy;
    }
    size_t m = (size_t)(sv->len / e);
    if (ov->len >= SHUFFLE_NOGIL) {
        Py_BEGIN_ALLOW_THREADS
        gather_run(s, m, (size_t)e, (size_t)lo, d, (size_t)ov->len);
        Py_END_ALLOW_THREADS
    } else {
        gather_run(s, m, (size_t)e, (size_t)lo, d, (size_t)ov->len);
    }
    PyMem_Free(copy);
    Py_RETURN_NONE;
}

/* unshuffle_into(src, element, out): the plain bytes of the shuffled src into out (a writable
 * contiguous buffer of exactly as many bytes). Mirrors format/shuffle.py unshuffle_into
 * (frames decompressed on read). */
static PyObject *py_unshuffle_into(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer sv, ov;
    PyObject *so, *eo, *oo, *result = NULL;
    Py_ssize_t e;
    if (!PyArg_ParseTuple(args, "OOO:unshuffle_into", &so, &eo, &oo) ||
        buffer_arg("unshuffle_into", "src", so, &sv, 0) < 0)
        return NULL;
    if (buffer_arg("unshuffle_into", "out", oo, &ov, 1) < 0) {
        PyBuffer_Release(&sv);
        return NULL;
    }
    if (element_arg("unshuffle_into", eo, sv.len, &e) < 0) goto done;
    if (ov.len != sv.len) {
        PyErr_Format(PyExc_ValueError, "unshuffle_into: out holds %zd bytes; the %zd plain bytes of src need as many",
                     ov.len, sv.len);
        goto done;
    }
    result = gather_to(&sv, e, 0, &ov);
done:
    PyBuffer_Release(&sv);
    PyBuffer_Release(&ov);
    return result;
}

/* gather_into(src, element, lo, out): plain bytes [lo, lo + len(out)) of the shuffled src into
 * out (writable, contiguous). Mirrors format/shuffle.py gather_into (a point read of a
 * shuffled frame). */
static PyObject *py_gather_into(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer sv, ov;
    PyObject *so, *eo, *lo_o, *oo, *result = NULL;
    Py_ssize_t e, lo;
    if (!PyArg_ParseTuple(args, "OOOO:gather_into", &so, &eo, &lo_o, &oo) ||
        buffer_arg("gather_into", "src", so, &sv, 0) < 0)
        return NULL;
    if (buffer_arg("gather_into", "out", oo, &ov, 1) < 0) {
        PyBuffer_Release(&sv);
        return NULL;
    }
    if (element_arg("gather_into", eo, sv.len, &e) < 0 || size_arg("gather_into", "lo", lo_o, &lo) < 0) goto done;
    if (lo < 0 || ov.len > sv.len || lo > sv.len - ov.len) {
        PyErr_Format(PyExc_ValueError, "gather_into: %zd bytes from offset %R lie outside the %zd plain bytes of src",
                     ov.len, lo_o, sv.len);
        goto done;
    }
    result = gather_to(&sv, e, lo, &ov);
done:
    PyBuffer_Release(&sv);
    PyBuffer_Release(&ov);
    return result;
}

/* The largest grid gather_grid takes: as many axes as a tiled array has (format/tiles.py). */
#define GRID_MAX_AXES 16

/* A tuple of n ints >= 0 (n <= GRID_MAX_AXES) into v; -1 with an error saying which is not. */
static int grid_arg(PyObject *o, const char *name, Py_ssize_t n, Py_ssize_t *v) {
    if (!PyTuple_Check(o) || PyTuple_GET_SIZE(o) != n) {
        PyErr_Format(PyExc_TypeError, "gather_grid: %s must be a tuple of %zd ints", name, n);
        return -1;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        if (size_arg("gather_grid", name, PyTuple_GET_ITEM(o, k), &v[k]) < 0) return -1;
        if (v[k] < 0) {
            PyErr_Format(PyExc_ValueError, "gather_grid: %s must be ints >= 0", name);
            return -1;
        }
    }
    return 0;
}

/* The end of the last run of a grid (first + sum((count - 1) * stride) + run), or -1 when it
 * passes limit (no overflow on the way). */
static Py_ssize_t grid_end(Py_ssize_t first, const Py_ssize_t *counts, const Py_ssize_t *strides, Py_ssize_t n,
                           Py_ssize_t run, Py_ssize_t limit) {
    Py_ssize_t end = first;
    if (end > limit) return -1;
    for (Py_ssize_t k = 0; k < n; k++) {
        if (counts[k] > 1 && strides[k] > (limit - end) / (counts[k] - 1)) return -1;
        end += (counts[k] - 1) * strides[k];
    }
    return run > limit - end ? -1 : end + run;
}

/* gather_grid(src, element, lo, counts, strides, run, out, out_lo, out_strides): for every
 * index i below counts (C order), plain bytes [p, p + run) of the shuffled src, p = lo +
 * sum(i * strides), into out at out_lo + sum(i * out_strides) (src read as it was before out
 * is written where the two overlap; element 1: plain bytes, copied as they are; runs that
 * would write more than out holds overlap, and are refused). A block of a
 * tile read from its shuffled frame: only the bytes selected are unshuffled, straight into
 * place. Mirrors
 * format/shuffle.py gather_grid. */
static PyObject *py_gather_grid(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer sv, ov;
    PyObject *so, *eo, *lo_o, *co, *sto, *run_o, *oo, *olo_o, *osto, *result = NULL;
    Py_ssize_t e, lo, run, olo, counts[GRID_MAX_AXES], strides[GRID_MAX_AXES], ostrides[GRID_MAX_AXES];
    if (!PyArg_ParseTuple(args, "OOOOOOOOO:gather_grid", &so, &eo, &lo_o, &co, &sto, &run_o, &oo, &olo_o, &osto) ||
        buffer_arg("gather_grid", "src", so, &sv, 0) < 0)
        return NULL;
    if (buffer_arg("gather_grid", "out", oo, &ov, 1) < 0) {
        PyBuffer_Release(&sv);
        return NULL;
    }
    if (element_size_arg("gather_grid", eo, sv.len, &e, 1) < 0) goto done;
    if (!PyTuple_Check(co) || PyTuple_GET_SIZE(co) > GRID_MAX_AXES) {
        PyErr_Format(PyExc_TypeError, "gather_grid: counts must be a tuple of at most %d ints", GRID_MAX_AXES);
        goto done;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(co);
    if (grid_arg(co, "counts", n, counts) < 0 || grid_arg(sto, "strides", n, strides) < 0 ||
        grid_arg(osto, "out_strides", n, ostrides) < 0 || size_arg("gather_grid", "lo", lo_o, &lo) < 0 ||
        size_arg("gather_grid", "run", run_o, &run) < 0 || size_arg("gather_grid", "out_lo", olo_o, &olo) < 0)
        goto done;
    Py_ssize_t total = run;
    for (Py_ssize_t k = 0; k < n; k++) {
        if (!counts[k]) total = 0;
        else if (total && counts[k] > PY_SSIZE_T_MAX / total) total = PY_SSIZE_T_MAX;
        else total *= counts[k];
    }
    if (!total) {
        result = Py_None;
        Py_INCREF(result);
        goto done;
    }
    if (lo < 0 || run < 0 || olo < 0 || grid_end(lo, counts, strides, n, run, sv.len) < 0 ||
        grid_end(olo, counts, ostrides, n, run, ov.len) < 0) {
        PyErr_Format(PyExc_ValueError, "gather_grid: the grid does not fit src (%zd bytes) or out (%zd bytes)", sv.len,
                     ov.len);
        goto done;
    }
    if (total > ov.len) { /* runs that overlap in out: refused, so the work is bounded by out's size */
        PyErr_Format(PyExc_ValueError, "gather_grid: the grid writes more bytes than out holds (%zd): its runs overlap",
                     ov.len);
        goto done;
    }
    const unsigned char *s = sv.buf;
    unsigned char *d = ov.buf, *copy = NULL;
    if (d < s + sv.len && s < d + ov.len) { /* read src whole first: the result is a separate src's */
        copy = PyMem_Malloc((size_t)sv.len);
        if (!copy) {
            PyErr_NoMemory();
            goto done;
        }
        memcpy(copy, s, (size_t)sv.len);
        s = copy;
    }
    size_t m = (size_t)(sv.len / e);
    Py_ssize_t idx[GRID_MAX_AXES] = {0};
    Py_ssize_t p = lo, q = olo;
    int nogil = total >= SHUFFLE_NOGIL;
    PyThreadState *ts = nogil ? PyEval_SaveThread() : NULL;
    for (;;) {
        if (e == 1) memcpy(d + q, s + p, (size_t)run);
        else gather_run(s, m, (size_t)e, (size_t)p, d + q, (size_t)run);
        Py_ssize_t k = n - 1;
        for (; k >= 0; k--) { /* the odometer: the last axis turns fastest */
            if (++idx[k] < counts[k]) {
                p += strides[k];
                q += ostrides[k];
                break;
            }
            p -= (counts[k] - 1) * strides[k];
            q -= (counts[k] - 1) * ostrides[k];
            idx[k] = 0;
        }
        if (k < 0) break;
    }
    if (ts) PyEval_RestoreThread(ts);
    PyMem_Free(copy);
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&sv);
    PyBuffer_Release(&ov);
    return result;
}

/* ============================================================================================
 * The module
 * ============================================================================================ */

/* The module's functions, by section; msglc/util/accel.py declares them (Speedups). */
static PyMethodDef methods[] = {
    /* read */
    {"increasing", increasing, METH_O, "Whether a list of ints rises strictly (NotImplemented: not such a list)."},
    {"expand_map", (PyCFunction)(void (*)(void))expand_map, METH_FASTCALL,
     "(koffs, voffs) of a compact dict node from its first offset and lengths (NotImplemented: Python decides)."},
    {"entries_in_order", (PyCFunction)(void (*)(void))entries_in_order, METH_FASTCALL,
     "Whether a dict node's key and value offsets interleave rising (NotImplemented: Python decides)."},
    /* write */
    {"plain_values", plain_values, METH_O,
     "Whether a value holds only exact None/bool/int/float/str/bytes/list/tuple/dict values."},
    {"exact_numbers", exact_numbers, METH_VARARGS, "Whether every leaf of nested lists is exactly a float or an int."},
    {"list_index", list_index, METH_VARARGS, "Item offsets and large container items of a msgpack array."},
    {"map_index", map_index, METH_VARARGS, "Entry offsets, sorted hash records and page starts of a msgpack map body."},
    {"map_hashed", map_hashed, METH_VARARGS, "Entry offsets and key base hashes of a msgpack map body."},
    {"block_records", block_records, METH_VARARGS, "The records of a block hash index from sorted hash records."},
    /* read (the types File, Memory, BlockProbe and FastGet are added by PyInit__speedups) */
    {"page_blocks", page_blocks, METH_VARARGS, "The candidate blocks of a fingerprint in a block index page."},
    {"key_crcs", key_crcs, METH_VARARGS, "CRC-32 of the keys of a run of msgpack map entries."},
    {"find_entry", find_entry, METH_VARARGS, "Where the value of a key's entry is in a run of msgpack map entries."},
    {"span_item", (PyCFunction)(void (*)(void))span_item, METH_FASTCALL,
     "One item of a run of msgpack items, decoded."},
    {"span_items", (PyCFunction)(void (*)(void))span_items, METH_FASTCALL,
     "Some items of a run of msgpack items, decoded."},
    {"group_indices", group_indices, METH_VARARGS, "read_many's paths under a list, grouped by the item they name."},
    {"descend_value", descend_value, METH_VARARGS, "The value a path names inside one msgpack value, decoded."},
    {"span_value", (PyCFunction)(void (*)(void))span_value, METH_FASTCALL,
     "One item of a run of msgpack items, or the value a path names inside it, decoded."},
    /* both */
    {"direct_build", direct_build, METH_VARARGS, "The index region of a direct-indexed dict (node type 10)."},
    {"fuse_build", fuse_build, METH_VARARGS, "The packed slots of a binary fuse mapping hashes to values."},
    {"fuse_check", fuse_check, METH_VARARGS, "The first key a binary fuse does not map to its value, or -1."},
    {"shuffle", py_shuffle, METH_VARARGS, "The bytes of a run of fixed-size elements, byte-shuffled."},
    {"unshuffle_into", py_unshuffle_into, METH_VARARGS, "The plain bytes of byte-shuffled elements, into a buffer."},
    {"gather_into", py_gather_into, METH_VARARGS, "Some plain bytes of byte-shuffled elements, into a buffer."},
    {"gather_grid", py_gather_grid, METH_VARARGS,
     "A grid of runs of plain bytes of byte-shuffled elements, into place."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_speedups",
    .m_doc = "msglc's optional C accelerator: faster twins of Python functions that write and read archives.",
    .m_size = -1,
    .m_methods = methods,
};

/* The module: the tables of crc32_of and skip, the names FastGet reads, the types. */
PyMODINIT_FUNC PyInit__speedups(void) {
    crc_init();
    skip_init();
    str_c_read = PyUnicode_InternFromString("c_read"), str_closed = PyUnicode_InternFromString("closed");
    str_speedups = PyUnicode_InternFromString("speedups"), str_probe = PyUnicode_InternFromString("probe");
    str_kid_keys = PyUnicode_InternFromString("kid_keys"), str_views = PyUnicode_InternFromString("views");
    str_kids = PyUnicode_InternFromString("kids");
    str_koffs = PyUnicode_InternFromString("koffs"), str_voffs = PyUnicode_InternFromString("voffs");
    if (!str_c_read || !str_closed || !str_speedups || !str_probe || !str_kid_keys || !str_views || !str_kids ||
        !str_koffs || !str_voffs)
        return NULL;
    if (PyType_Ready(&BlockProbeType) < 0 || PyType_Ready(&DirectProbeType) < 0 || PyType_Ready(&FileType) < 0 ||
        PyType_Ready(&MemoryType) < 0 || PyType_Ready(&FastGetType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    if (PyModule_AddIntConstant(m, "RECORDS_KEPT", RECORDS_KEPT) < 0 ||
        PyModule_AddIntConstant(m, "FUSE_CHUNK", FUSE_CHUNK) < 0 ||
        PyModule_AddIntConstant(m, "FUSE_KEPT", FUSE_KEPT) < 0 ||
        PyModule_AddIntConstant(m, "FUSE_MAX_SEG_BITS", FUSE_MAX_SEG_BITS) < 0 ||
        PyModule_AddIntConstant(m, "API", SPEEDUPS_API) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&BlockProbeType);
    if (PyModule_AddObject(m, "BlockProbe", (PyObject *)&BlockProbeType) < 0) {
        Py_DECREF(&BlockProbeType);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&DirectProbeType);
    if (PyModule_AddObject(m, "DirectProbe", (PyObject *)&DirectProbeType) < 0) {
        Py_DECREF(&DirectProbeType);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&FileType);
    if (PyModule_AddObject(m, "File", (PyObject *)&FileType) < 0) {
        Py_DECREF(&FileType);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&MemoryType);
    if (PyModule_AddObject(m, "Memory", (PyObject *)&MemoryType) < 0) {
        Py_DECREF(&MemoryType);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&FastGetType);
    if (PyModule_AddObject(m, "FastGet", (PyObject *)&FastGetType) < 0) {
        Py_DECREF(&FastGetType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
