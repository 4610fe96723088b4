/* Optional accelerator for indexing huge dicts (msglc/indexer.py has the same logic in Python).
 *
 * map_index(buf, start, n, base, threshold, page_bits) walks the n entries of a msgpack map
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
 */
#define PY_SSIZE_T_CLEAN
/* What msglc/util/accel.py expects (API there): raised whenever a function is added or changes,
 * so that a stale build is set aside instead of failing at a call. */
#define SPEEDUPS_API 2
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint32_t crc_table[256];

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[i] = c;
    }
}

static uint32_t crc32_of(const unsigned char *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    while (n--) c = crc_table[(c ^ *p++) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

static uint64_t be(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v = (v << 8) | p[i];
    return v;
}

/* Past the one msgpack object at p, or NULL if it does not fit before end. */
static const unsigned char *skip(const unsigned char *p, const unsigned char *end) {
    uint64_t remaining = 1;
    while (remaining) {
        if (p >= end) return NULL;
        unsigned char m = *p++;
        uint64_t len = 0;
        int hdr = 0;
        remaining--;
        if (m <= 0x7f || m >= 0xe0 || m == 0xc0 || m == 0xc2 || m == 0xc3) continue;
        if ((m & 0xf0) == 0x80) { remaining += 2u * (m & 0x0f); continue; }
        if ((m & 0xf0) == 0x90) { remaining += m & 0x0f; continue; }
        if ((m & 0xe0) == 0xa0) { len = m & 0x1f; }
        else switch (m) {
            case 0xc4: case 0xd9: hdr = 1; break;
            case 0xc5: case 0xda: hdr = 2; break;
            case 0xc6: case 0xdb: hdr = 4; break;
            case 0xc7: hdr = 1; len = 1; break; /* ext: one type byte after the length */
            case 0xc8: hdr = 2; len = 1; break;
            case 0xc9: hdr = 4; len = 1; break;
            case 0xca: len = 4; break;
            case 0xcb: len = 8; break;
            case 0xcc: case 0xd0: len = 1; break;
            case 0xcd: case 0xd1: len = 2; break;
            case 0xce: case 0xd2: len = 4; break;
            case 0xcf: case 0xd3: len = 8; break;
            case 0xd4: len = 2; break;
            case 0xd5: len = 3; break;
            case 0xd6: len = 5; break;
            case 0xd7: len = 9; break;
            case 0xd8: len = 17; break;
            case 0xdc: case 0xde: case 0xdd: case 0xdf: {
                int size = (m == 0xdc || m == 0xde) ? 2 : 4;
                if (end - p < size) return NULL;
                uint64_t count = be(p, size);
                remaining += (m == 0xde || m == 0xdf) ? 2 * count : count;
                p += size;
                continue;
            }
            default: return NULL;
        }
        if (hdr) {
            if (end - p < hdr) return NULL;
            len += be(p, hdr);
            p += hdr;
        }
        if ((uint64_t)(end - p) < len) return NULL;
        p += len;
    }
    return p;
}

/* Does the value [v, end) get a TOC node of its own when long: an array, a map or a NumPy
 * array (extension type 78)? As format.gets_node. */
static int gets_node(const unsigned char *v, const unsigned char *end) {
    unsigned char m = *v;
    if ((m & 0xe0) == 0x80 || m == 0xdc || m == 0xdd || m == 0xde || m == 0xdf) return 1;
    int type_at = m == 0xc7 ? 2 : m == 0xc8 ? 3 : m == 0xc9 ? 5 : 0;
    return type_at && end - v > type_at && v[type_at] == 78;
}

static void put_le(unsigned char *out, uint64_t v, int width) {
    for (int i = 0; i < width; i++) out[i] = (unsigned char)(v >> (8 * i));
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static PyObject *map_index(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view;
    Py_ssize_t start, n, base, threshold;
    int page_bits;
    if (!PyArg_ParseTuple(args, "y*nnnni", &view, &start, &n, &base, &threshold, &page_bits)) return NULL;
    PyObject *result = NULL, *big = NULL;
    uint64_t *offs = NULL, *recs = NULL;
    uint32_t *crcs = NULL, *firsts = NULL;
    const unsigned char *buf = view.buf, *end = buf + view.len, *p;
    /* every entry takes at least two bytes, and pages never outnumber entries: this bounds
       every allocation below by the buffer's size */
    if (start < 0 || start > view.len || base < 0 || base > start || n < 0 || (uint64_t)n > 0xFFFFFFFFu ||
        (uint64_t)n > (uint64_t)(view.len - start) / 2 || page_bits < 0 || page_bits > 31 || ((Py_ssize_t)1 << page_bits) > (n > 1 ? n : 1)) {
        PyErr_SetString(PyExc_ValueError, "map_index: arguments out of range");
        goto done;
    }
    size_t pages = (size_t)1 << page_bits;
    offs = malloc(sizeof(uint64_t) * (n + 1));
    recs = malloc(sizeof(uint64_t) * (n ? n : 1));
    crcs = malloc(sizeof(uint32_t) * (n ? n : 1));
    firsts = calloc(pages + 1, sizeof(uint32_t));
    big = PyList_New(0);
    if (!offs || !recs || !crcs || !firsts || !big) { PyErr_NoMemory(); goto done; }
    p = buf + start;
    for (Py_ssize_t e = 0; e < n; e++) {
        const unsigned char *key = p, *value;
        offs[e] = (uint64_t)(key - buf - base);
        if (!(value = skip(key, end)) || !(p = skip(value, end))) {
            PyErr_SetString(PyExc_ValueError, "map_index: malformed msgpack");
            goto done;
        }
        crcs[e] = crc32_of(key, (size_t)(value - key));
        if (p - value > threshold && gets_node(value, p)) {
            PyObject *item = Py_BuildValue("(nnn)", e, (Py_ssize_t)(value - buf - base), (Py_ssize_t)(p - buf - base));
            if (!item || PyList_Append(big, item) < 0) { Py_XDECREF(item); goto done; }
            Py_DECREF(item);
        }
    }
    offs[n] = (uint64_t)(p - buf - base);
    /* counting sort by page, then each page in ascending (crc, entry) order */
    for (Py_ssize_t e = 0; e < n; e++) firsts[(page_bits ? crcs[e] >> (32 - page_bits) : 0) + 1]++;
    for (size_t q = 0; q < pages; q++) firsts[q + 1] += firsts[q];
    {
        uint32_t *fill = malloc(sizeof(uint32_t) * pages);
        if (!fill) { PyErr_NoMemory(); goto done; }
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
                while (j && seg[j - 1] > v) { seg[j] = seg[j - 1]; j--; }
                seg[j] = v;
            }
        } else {
            qsort(seg, count, sizeof(uint64_t), cmp_u64);
        }
    }
    int width = offs[n] < ((uint64_t)1 << 32) ? 4 : 8;
    PyObject *offs_b = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n + 1) * width);
    PyObject *recs_b = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)n * 8);
    PyObject *firsts_b = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(pages + 1) * 4);
    if (offs_b && recs_b && firsts_b) {
        unsigned char *o = (unsigned char *)PyBytes_AS_STRING(offs_b);
        unsigned char *r = (unsigned char *)PyBytes_AS_STRING(recs_b);
        unsigned char *f = (unsigned char *)PyBytes_AS_STRING(firsts_b);
        for (Py_ssize_t e = 0; e <= n; e++) put_le(o + e * width, offs[e], width);
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

/* list_index(buf, start, n, base, threshold) -> (offs, big): the n items of a msgpack array
 * whose first item is at buf[start]: offs, n + 1 little-endian u64 item starts relative to
 * base (the last is the end); big, [(item, start, end)] for the items longer than threshold
 * that get a node (gets_node), relative to base. As indexer.item_layout + big_children,
 * without a Python object per item. */
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
            if (!entry || PyList_Append(big, entry) < 0) { Py_XDECREF(entry); goto done; }
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

/* block_records(records, page_bits, block_bits, block_width) -> bytes: the records of a block
 * index (format.hash_index.block_records) from n little-endian u64 records crc << 32 | entry:
 * per record, the fingerprint byte (the 8 crc bits after the page bits) and entry >> block_bits
 * as block_width little-endian bytes. */
static PyObject *block_records(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view;
    int page_bits, block_bits, width;
    if (!PyArg_ParseTuple(args, "y*iii", &view, &page_bits, &block_bits, &width)) return NULL;
    PyObject *out = NULL;
    if (view.len % 8 || page_bits < 0 || page_bits > 31 || block_bits < 0 || block_bits > 31 || width < 1 || width > 4) {
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

/* page_blocks(records, size, fp, blocks) -> [(block, count), ...]: the blocks named by the
 * records (size bytes each: a fingerprint byte, then a little-endian block number) whose
 * fingerprint is fp, in record order, each with how many of them name it; ValueError naming
 * the record's index if one names a block >= blocks. */
/* The candidates of fingerprint fp among the n records at r (size bytes each): the distinct
 * blocks in record order into seen[], how many records name each into counts[] (both room
 * for n), deduped through slots[] (cap entries, a power of two >= 2n). Returns how many, or
 * -1 - i when record i names a block >= blocks. */
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
        if (slots[q] < 0) { slots[q] = found; seen[found] = block; counts[found++] = 0; }
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

static int candidates_init(Candidates *c, Py_ssize_t n) {
    c->cap = 16;  /* an open-addressing table block -> candidate, twice the records: linear in a crafted page too */
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

static void candidates_free(Candidates *c) {
    if (c->seen != c->seen_s) {
        free(c->seen);
        free(c->counts);
        free(c->slots);
    }
}

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
        PyErr_Format(PyExc_ValueError, "record %zd names block %llu of %zd", -1 - found, (unsigned long long)block, blocks);
        goto done;
    }
    out = PyList_New(found);
    if (!out) goto done;
    for (Py_ssize_t j = 0; j < found; j++) {
        PyObject *item = Py_BuildValue("(Kn)", (unsigned long long)c.seen[j], c.counts[j]);
        if (!item) { Py_CLEAR(out); goto done; }
        PyList_SET_ITEM(out, j, item);
    }
done:
    candidates_free(&c);
    PyBuffer_Release(&view);
    return out;
}

/* key_crcs(block, count) -> [crc32 of each key]: the keys of the count entries (key, value,
 * ...) that make block, hashed without decoding (nesting costs no recursion); ValueError if
 * the block is not exactly count entries. */
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
        if (!crc) { Py_CLEAR(out); goto done; }
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

/* find_entry(block, count, key) -> (start, end) | None: the value of the entry whose key is
 * encoded exactly as key, among the count entries (key, value, ...) that make block; None if
 * none is, and ValueError if block is not exactly count entries (items are skipped, never
 * decoded; the whole block is walked, as the pure-Python path decodes it whole). */
/* Walk the count entries (key, value, ...) that must make [buf, end) exactly; *at and *stop
 * get the value of the entry whose key is encoded as key (NULL if none). -1 if they do not
 * make it. */
static int walk_entries(const unsigned char *buf, const unsigned char *end, Py_ssize_t count, const unsigned char *key,
                        Py_ssize_t klen, const unsigned char **at, const unsigned char **stop) {
    const unsigned char *p = buf, *v, *q;
    *at = *stop = NULL;
    if (count < 0) return -1;
    for (Py_ssize_t e = 0; e < count; e++) {  /* the whole block is walked: it must be count entries */
        if (!(v = skip(p, end)) || !(q = skip(v, end))) return -1;
        if (!*at && v - p == klen && memcmp(p, key, (size_t)klen) == 0) {
            *at = v;
            *stop = q;
        }
        p = q;
    }
    return p == end ? 0 : -1;
}

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

/* BlockProbe(pages, offs, width, kids, records_at, n, page_bits, blocks, block_bits, span_lo, span_hi):
 * one dict's block index (format/hash_index.py, BlockIndex) with its page table and block
 * offsets in memory; probe.find(read, base, key, h) looks the key up with read(offset, size)
 * for the page's records and each candidate block: (offset, value bytes), or None for a key
 * the dict does not hold. It returns NotImplemented for anything unusual (a checksum that
 * fails, bounds that do not fit, a block around a large value, a miss the records do not
 * explain): the Python path then answers, with its errors. kids: sorted native u64 pairs
 * (start, end) of the entries whose value has a node of its own. */
typedef struct {
    PyObject_HEAD
    PyObject *pages, *offs, *kids;  /* bytes */
    Py_ssize_t records_at, n, blocks, span_lo, span_hi, nkids;
    int width, page_bits, block_bits, size;
} BlockProbe;

static void probe_dealloc(BlockProbe *self) {
    Py_XDECREF(self->pages);
    Py_XDECREF(self->offs);
    Py_XDECREF(self->kids);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static uint64_t le(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static PyObject *probe_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    PyObject *pages, *offs, *kids;
    int width, page_bits, block_bits;
    Py_ssize_t records_at, n, blocks, span_lo, span_hi;
    if (kw && PyDict_GET_SIZE(kw)) {
        PyErr_SetString(PyExc_TypeError, "BlockProbe takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "SSiSnnininn", &pages, &offs, &width, &kids, &records_at, &n, &page_bits, &blocks,
                          &block_bits, &span_lo, &span_hi))
        return NULL;
    Py_ssize_t size = 1;
    while (size < 8 && (blocks - 1) >> (8 * size)) size++;  /* block_width(): the fewest bytes that hold the largest */
    if ((width != 4 && width != 8) || page_bits < 0 || page_bits > 31 || block_bits < 0 || block_bits > 30 || n < 0 ||
        blocks < 1 || size > 4 || PyBytes_GET_SIZE(pages) != (((Py_ssize_t)1 << page_bits) + 1) * 8 ||
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
    return (PyObject *)self;
}

/* read(offset, size) as a new reference whose buffer view gets exactly size bytes; NULL with
 * an exception set if read raised, NULL without one if it returned something else. */
static PyObject *probe_read(PyObject *read, Py_ssize_t offset, Py_ssize_t size, Py_buffer *view) {
    PyObject *args[2] = {PyLong_FromSsize_t(offset), PyLong_FromSsize_t(size)};
    PyObject *got = NULL;
    if (args[0] && args[1]) got = PyObject_Vectorcall(read, args, 2, NULL);
    Py_XDECREF(args[0]);
    Py_XDECREF(args[1]);
    if (!got) return NULL;
    if (PyObject_GetBuffer(got, view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        Py_DECREF(got);
        return NULL;
    }
    if (view->len != size) {
        PyBuffer_Release(view);
        Py_DECREF(got);
        return NULL;
    }
    return got;
}

/* Does the block [start, stop) hold a large value's entry? */
static int probe_kid_inside(BlockProbe *self, uint64_t start, uint64_t stop) {
    const uint64_t *k = (const uint64_t *)PyBytes_AS_STRING(self->kids);
    Py_ssize_t lo = 0, hi = self->nkids;
    while (lo < hi) {  /* the first kid starting at or after start */
        Py_ssize_t mid = (lo + hi) / 2;
        if (k[2 * mid] < start) lo = mid + 1; else hi = mid;
    }
    return lo < self->nkids && k[2 * lo] < stop;
}

/* How many of the count entries of [p, end) have a key whose CRC-32 falls in the page and
 * has the fingerprint of the records (a miss must find as many as the records name). */
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

static PyObject *probe_find(BlockProbe *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "find(read, base, key, h)");
        return NULL;
    }
    PyObject *read = args[0];
    Py_ssize_t base = PyLong_AsSsize_t(args[1]);
    unsigned long hl = PyLong_AsUnsignedLong(args[3]);
    if (PyErr_Occurred()) return NULL;
    if (!PyBytes_Check(args[2]) || hl > 0xFFFFFFFFul) {
        PyErr_SetString(PyExc_TypeError, "find: key must be bytes and h a CRC-32");
        return NULL;
    }
    const unsigned char *key = (const unsigned char *)PyBytes_AS_STRING(args[2]);
    Py_ssize_t klen = PyBytes_GET_SIZE(args[2]);
    uint32_t h = (uint32_t)hl;
    int bits = self->page_bits, size = self->size, width = self->width, bb = self->block_bits;
    uint32_t page = bits ? h >> (32 - bits) : 0;
    int fp = (int)((uint32_t)((uint64_t)h << bits) >> 24);
    const unsigned char *slot = (const unsigned char *)PyBytes_AS_STRING(self->pages) + 8 * (size_t)page;
    uint64_t first = le(slot, 4), crc = le(slot + 4, 4), end = le(slot + 8, 4);
    if (!(first <= end && end <= (uint64_t)self->n)) Py_RETURN_NOTIMPLEMENTED;
    Py_buffer view;
    Py_ssize_t nrecs = (Py_ssize_t)(end - first);
    PyObject *recs = probe_read(read, self->records_at + size * (Py_ssize_t)first, size * nrecs, &view);
    if (!recs) {
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_NOTIMPLEMENTED;
    }
    Candidates c = {.seen = NULL};
    Py_ssize_t found = -1;
    if (crc32_of(view.buf, (size_t)view.len) == crc && candidates_init(&c, nrecs) == 0)
        found = fp_blocks(view.buf, nrecs, size, fp, (uint64_t)self->blocks, c.seen, c.counts, c.slots, c.cap);
    PyBuffer_Release(&view);
    Py_DECREF(recs);
    PyObject *result = NULL;
    if (found < 0) {
        if (!PyErr_Occurred()) result = Py_NewRef(Py_NotImplemented);
        goto done;
    }
    const unsigned char *offs = (const unsigned char *)PyBytes_AS_STRING(self->offs);
    for (Py_ssize_t j = 0; j < found; j++) {
        uint64_t block = c.seen[j];
        uint64_t start = le(offs + block * width, width), stop = le(offs + (block + 1) * width, width);
        if (!((uint64_t)self->span_lo <= start && start < stop && stop <= (uint64_t)self->span_hi) ||
            probe_kid_inside(self, start, stop)) {
            result = Py_NewRef(Py_NotImplemented);
            goto done;
        }
        Py_ssize_t entries = self->n - (Py_ssize_t)(block << bb);
        if (entries > ((Py_ssize_t)1 << bb)) entries = (Py_ssize_t)1 << bb;
        PyObject *data = probe_read(read, base + (Py_ssize_t)start, (Py_ssize_t)(stop - start), &view);
        if (!data) {
            if (!PyErr_Occurred()) result = Py_NewRef(Py_NotImplemented);
            goto done;
        }
        const unsigned char *buf = view.buf, *bend = buf + view.len, *at, *vend;
        int ok = walk_entries(buf, bend, entries, key, klen, &at, &vend) == 0;
        int answered = 1;  /* result holds the answer, or NULL with the error (no memory) */
        if (ok && at) {
            result = Py_BuildValue("(ny#)", base + (Py_ssize_t)start + (at - buf), (const char *)at, (Py_ssize_t)(vend - at));
        } else if (!ok || sharing_keys(buf, bend, entries, bits, page, fp) != c.counts[j]) {
            result = Py_NewRef(Py_NotImplemented);  /* not its entries, or other keys than the records say */
        } else {
            answered = 0;  /* a clean miss in this block: on to the next candidate */
        }
        PyBuffer_Release(&view);
        Py_DECREF(data);
        if (answered) goto done;
    }
    result = Py_NewRef(Py_None);
done:
    candidates_free(&c);
    return result;
}

static PyMethodDef probe_methods[] = {
    {"find", (PyCFunction)(void (*)(void))probe_find, METH_FASTCALL, "(offset, value bytes) of a key, None, or NotImplemented."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject BlockProbeType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "msglc._speedups.BlockProbe",
    .tp_basicsize = sizeof(BlockProbe),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A block index's lookups in C (see find).",
    .tp_new = probe_new,
    .tp_dealloc = (destructor)probe_dealloc,
    .tp_methods = probe_methods,
};

/* exact_numbers(seq, depth): True if seq is a list/tuple nested depth levels deep (lists or
 * tuples at every level) whose leaves are all exactly float or int. False otherwise (the
 * caller then runs its full type check). Only reads ob_type pointers: a few ns per leaf. */
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

/* plain_values(obj): True if obj holds only values of exactly the types msglc stores as
 * they are: None, bool, int, float, str, bytes, list, tuple and dict with exactly-str or
 * exactly-int keys, at most PLAIN_DEPTH levels deep. False otherwise (the caller then runs its
 * full type check, which also accepts subclasses, enum members and NumPy values and names
 * what it refuses). Reads type pointers only and runs no Python code. */
#define PLAIN_DEPTH 200
static int plain(PyObject *o, int depth) {
    PyTypeObject *t = Py_TYPE(o);
    if (t == &PyFloat_Type || t == &PyLong_Type || t == &PyUnicode_Type || t == &PyBool_Type || o == Py_None || t == &PyBytes_Type)
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

static PyMethodDef methods[] = {
    {"list_index", list_index, METH_VARARGS, "Item offsets and large container items of a msgpack array."},
    {"plain_values", plain_values, METH_O, "Whether a value holds only exact None/bool/int/float/str/bytes/list/tuple/dict values."},
    {"map_index", map_index, METH_VARARGS, "Entry offsets, sorted hash records and page starts of a msgpack map body."},
    {"block_records", block_records, METH_VARARGS, "The records of a block hash index from sorted hash records."},
    {"page_blocks", page_blocks, METH_VARARGS, "The candidate blocks of a fingerprint in a block index page."},
    {"key_crcs", key_crcs, METH_VARARGS, "CRC-32 of the keys of a run of msgpack map entries."},
    {"find_entry", find_entry, METH_VARARGS, "Where the value of a key's entry is in a run of msgpack map entries."},
    {"exact_numbers", exact_numbers, METH_VARARGS, "Whether every leaf of nested lists is exactly a float or an int."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_speedups", "Optional accelerator for msglc's writer.", -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__speedups(void) {
    crc_init();
    if (PyType_Ready(&BlockProbeType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    if (PyModule_AddIntConstant(m, "API", SPEEDUPS_API) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&BlockProbeType);
    if (PyModule_AddObject(m, "BlockProbe", (PyObject *)&BlockProbeType) < 0) {
        Py_DECREF(&BlockProbeType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
