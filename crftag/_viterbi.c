/* Viterbi decoding of a padded batch on the CPU, compiled (crftag._viterbi).
 *
 * The same algorithm as crftag.crf_kernels._viterbi_numpy, in the same floating-point order, so
 * the two give bit-identical paths and scores: the forward pass keeps only the best scores with
 * the batch innermost (one contiguous row of B numbers per tag, which the compiler turns into
 * vector max instructions), and the backtrace recomputes, for the one tag it follows at each
 * step, which "from" tag gave that best score, taking the lowest index on ties as numpy's argmax
 * does. Written by hand because a NumPy step is a few calls of a few microseconds each over
 * B x K x K numbers, and at B = 32 the calls, not the arithmetic, are the cost.
 *
 * Built as an optional extension (setup.py): where it does not compile, crftag falls back to the
 * NumPy loop, with identical results.
 *
 * viterbi(emissions, lengths, transitions, start, end, path, scores, B, T, K)
 *   emissions   (B, T, K) float32 or float64, C-contiguous
 *   lengths     (B,) int64, each in 1..T (the mask is a prefix)
 *   transitions (K, K) [from][to], start (K,), end (K,): the emissions' dtype
 *   path        (B, T) int64, written; 0 past each sentence's end
 *   scores      (B,) the emissions' dtype, written
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DEFINE_VITERBI(NAME, REAL)                                                             \
    static int NAME(const REAL *emissions, const int64_t *lengths, const REAL *transitions,    \
                    const REAL *start, const REAL *end, int64_t *path, REAL *scores,           \
                    Py_ssize_t B, Py_ssize_t T, Py_ssize_t K) {                                \
        /* emitted (T, K, B) and bests (T, K, B): the batch innermost. */                      \
        REAL *emitted = malloc(sizeof(REAL) * (size_t)(T * K * B));                            \
        REAL *bests = malloc(sizeof(REAL) * (size_t)(T * K * B));                              \
        if (emitted == NULL || bests == NULL) {                                                \
            free(emitted);                                                                     \
            free(bests);                                                                       \
            return -1;                                                                         \
        }                                                                                      \
        for (Py_ssize_t b = 0; b < B; b++)                                                     \
            for (Py_ssize_t t = 0; t < T; t++)                                                 \
                for (Py_ssize_t k = 0; k < K; k++)                                             \
                    emitted[(t * K + k) * B + b] = emissions[(b * T + t) * K + k];             \
        for (Py_ssize_t k = 0; k < K; k++)                                                     \
            for (Py_ssize_t b = 0; b < B; b++)                                                 \
                bests[k * B + b] = start[k] + emitted[k * B + b];                              \
        /* Every step runs the whole batch: a sentence that has ended is extended over its     \
           padding, but its scores are read at its own last step. */                           \
        for (Py_ssize_t t = 1; t < T; t++) {                                                   \
            const REAL *previous = bests + (t - 1) * K * B;                                    \
            REAL *step = bests + t * K * B;                                                    \
            const REAL *emitted_t = emitted + t * K * B;                                       \
            for (Py_ssize_t to = 0; to < K; to++) {                                            \
                REAL *out = step + to * B;                                                     \
                const REAL move = transitions[to];                                             \
                for (Py_ssize_t b = 0; b < B; b++)                                             \
                    out[b] = previous[b] + move;                                               \
                for (Py_ssize_t from = 1; from < K; from++) {                                  \
                    const REAL *row = previous + from * B;                                     \
                    const REAL m = transitions[from * K + to];                                 \
                    for (Py_ssize_t b = 0; b < B; b++) {                                       \
                        const REAL candidate = row[b] + m;                                     \
                        out[b] = candidate > out[b] ? candidate : out[b];                      \
                    }                                                                          \
                }                                                                              \
                for (Py_ssize_t b = 0; b < B; b++)                                             \
                    out[b] += emitted_t[to * B + b];                                           \
            }                                                                                  \
        }                                                                                      \
        memset(path, 0, sizeof(int64_t) * (size_t)(B * T));                                    \
        for (Py_ssize_t b = 0; b < B; b++) {                                                   \
            const Py_ssize_t last = (Py_ssize_t)lengths[b] - 1;                                \
            const REAL *closing = bests + last * K * B;                                        \
            Py_ssize_t tag = 0;                                                                \
            REAL top = closing[b] + end[0];                                                    \
            for (Py_ssize_t k = 1; k < K; k++) {                                               \
                const REAL value = closing[k * B + b] + end[k];                                \
                if (value > top) {                                                             \
                    top = value;                                                               \
                    tag = k;                                                                   \
                }                                                                              \
            }                                                                                  \
            scores[b] = top;                                                                   \
            path[b * T + last] = tag;                                                          \
            for (Py_ssize_t t = last; t > 0; t--) {                                            \
                const REAL *previous = bests + (t - 1) * K * B;                                \
                Py_ssize_t best_from = 0;                                                      \
                REAL best = transitions[tag] + previous[b];                                    \
                for (Py_ssize_t from = 1; from < K; from++) {                                  \
                    const REAL value = transitions[from * K + tag] + previous[from * B + b];   \
                    if (value > best) {                                                        \
                        best = value;                                                          \
                        best_from = from;                                                      \
                    }                                                                          \
                }                                                                              \
                tag = best_from;                                                               \
                path[b * T + t - 1] = tag;                                                     \
            }                                                                                  \
        }                                                                                      \
        free(emitted);                                                                         \
        free(bests);                                                                           \
        return 0;                                                                              \
    }

DEFINE_VITERBI(viterbi_float, float)
DEFINE_VITERBI(viterbi_double, double)

/* The buffer must hold exactly `count` items of `itemsize` bytes. */
static int check_size(const Py_buffer *buffer, Py_ssize_t count, Py_ssize_t itemsize,
                      const char *name) {
    if (buffer->len != count * itemsize) {
        PyErr_Format(PyExc_ValueError, "viterbi: %s has %zd bytes, expected %zd", name,
                     buffer->len, count * itemsize);
        return -1;
    }
    return 0;
}

static PyObject *viterbi(PyObject *self, PyObject *args) {
    Py_buffer emissions, lengths, transitions, start, end, path, scores;
    Py_ssize_t B, T, K;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*w*w*nnn", &emissions, &lengths, &transitions, &start,
                          &end, &path, &scores, &B, &T, &K))
        return NULL;
    PyObject *result = NULL;
    const Py_ssize_t itemsize = (B > 0 && T > 0 && K > 0) ? emissions.len / (B * T * K) : 0;
    if (B <= 0 || T <= 0 || K <= 0 || (itemsize != 4 && itemsize != 8)) {
        PyErr_SetString(PyExc_ValueError, "viterbi: expected float32 or float64 (B, T, K) data");
        goto done;
    }
    if (check_size(&emissions, B * T * K, itemsize, "emissions") ||
        check_size(&lengths, B, 8, "lengths") ||
        check_size(&transitions, K * K, itemsize, "transitions") ||
        check_size(&start, K, itemsize, "start") || check_size(&end, K, itemsize, "end") ||
        check_size(&path, B * T, 8, "path") || check_size(&scores, B, itemsize, "scores"))
        goto done;
    const int64_t *length_values = lengths.buf;
    for (Py_ssize_t b = 0; b < B; b++) {
        if (length_values[b] < 1 || length_values[b] > T) {
            PyErr_Format(PyExc_ValueError, "viterbi: sentence %zd has length %lld, not in 1..%zd",
                         b, (long long)length_values[b], T);
            goto done;
        }
    }
    int status;
    Py_BEGIN_ALLOW_THREADS;
    if (itemsize == 4)
        status = viterbi_float(emissions.buf, length_values, transitions.buf, start.buf, end.buf,
                               path.buf, scores.buf, B, T, K);
    else
        status = viterbi_double(emissions.buf, length_values, transitions.buf, start.buf,
                                end.buf, path.buf, scores.buf, B, T, K);
    Py_END_ALLOW_THREADS;
    if (status != 0) {
        PyErr_NoMemory();
        goto done;
    }
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&emissions);
    PyBuffer_Release(&lengths);
    PyBuffer_Release(&transitions);
    PyBuffer_Release(&start);
    PyBuffer_Release(&end);
    PyBuffer_Release(&path);
    PyBuffer_Release(&scores);
    return result;
}

static PyMethodDef methods[] = {
    {"viterbi", viterbi, METH_VARARGS,
     "viterbi(emissions, lengths, transitions, start, end, path, scores, B, T, K): best paths "
     "into path (B, T) int64 and their scores into scores (B,)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_viterbi", "Compiled CPU Viterbi for crftag.crf_kernels.", -1,
    methods,
};

PyMODINIT_FUNC PyInit__viterbi(void) { return PyModule_Create(&module); }
