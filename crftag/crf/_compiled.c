/* Compiled CPU kernels for crftag.crf.kernels (module crftag.crf._compiled): Viterbi decoding and the
 * scaled forward-backward of a padded batch.
 *
 * Written by hand because a NumPy or torch step is a few calls of a few microseconds each over
 * B x K x K numbers; at training and benchmark batch sizes the calls, not the arithmetic, are the
 * cost. Built as an optional extension (setup.py): where it does not compile, crftag runs the
 * NumPy and torch loops of crftag/crf/kernels.py and viterbi.py instead. Each kernel comes in
 * float and double.
 *
 * viterbi(emissions, lengths, transitions, start, end, path, scores, B, T, K)
 *   The same algorithm as crftag.crf.viterbi._viterbi_numpy, in the same floating-point order, so the
 *   two give bit-identical paths and scores: the forward pass keeps only the best scores with the
 *   batch innermost (one contiguous row of B numbers per tag, which the compiler turns into
 *   vector max instructions), and the backtrace recomputes, for the one tag it follows at each
 *   step, which "from" tag gave that best score, taking the lowest index on ties as numpy's
 *   argmax does.
 *   emissions   (B, T, K) float32 or float64, C-contiguous
 *   lengths     (B,) int64, each in 1..T (the mask is a prefix)
 *   transitions (K, K) [from][to], start (K,), end (K,): the emissions' dtype
 *   path        (B, T) int64, written; 0 past each sentence's end
 *   scores      (B,) the emissions' dtype, written
 *
 * forward_backward(emissions, lengths, transitions, start, end, log_z, marginals, counts,
 *                  B, T, K, mode)
 *   The scaled forward-backward of crf_kernels._Forward (Rabiner 1989), one sentence at a time
 *   over its own length: alpha_t = (alpha_{t-1} W) * s_t / norm_t with W = exp(transitions -
 *   max) and s_t = exp(e_t - max_k e_t), so each step is a K x K product with no exp or log.
 *   log_z       (B,) written
 *   marginals   (B, T, K) p(y_t = k | x), 0 past each end; written when mode >= 1
 *   counts      (B, K, K) expected transition counts sum_t p(y_{t-1} = i, y_t = j | x) per
 *               sentence; written when mode == 2. Buffers not written may be empty.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
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

/* The largest finite value among n, 0 when there is none: the shift that keeps exp in range. */
#define DEFINE_FINITE_MAX(NAME, REAL)                                                          \
    static REAL NAME(const REAL *values, Py_ssize_t n) {                                       \
        int found = 0;                                                                         \
        REAL top = 0;                                                                          \
        for (Py_ssize_t i = 0; i < n; i++) {                                                   \
            const REAL v = values[i];                                                          \
            if (isfinite(v) && (!found || v > top)) {                                          \
                top = v;                                                                       \
                found = 1;                                                                     \
            }                                                                                  \
        }                                                                                      \
        return top;                                                                            \
    }

#define DEFINE_FORWARD_BACKWARD(NAME, FINITE_MAX, REAL, EXP, LOG)                              \
    static int NAME(const REAL *emissions, const int64_t *lengths, const REAL *transitions,    \
                    const REAL *start, const REAL *end, REAL *log_z, REAL *marginals,          \
                    REAL *counts, Py_ssize_t B, Py_ssize_t T, Py_ssize_t K, int mode) {        \
        /* weights W (K, K) and its transpose, end weights; per sentence: scaled emissions s, \
           alphas, betas (T, K), norms (T); one row of scratch. */                             \
        const size_t kk = (size_t)(K * K), tk = (size_t)(T * K);                               \
        REAL *memory = malloc(sizeof(REAL) * (2 * kk + 3 * tk + (size_t)T + 2 * (size_t)K));     \
        if (memory == NULL)                                                                    \
            return -1;                                                                         \
        REAL *weights = memory, *weights_t = weights + kk, *scaled = weights_t + kk;           \
        REAL *alphas = scaled + tk, *betas = alphas + tk, *norms = betas + tk;                 \
        REAL *end_weights = norms + T, *row = end_weights + K;        \
        const REAL shift = FINITE_MAX(transitions, K * K);                                     \
        for (Py_ssize_t i = 0; i < K; i++)                                                     \
            for (Py_ssize_t j = 0; j < K; j++) {                                               \
                weights[i * K + j] = EXP(transitions[i * K + j] - shift);                      \
                weights_t[j * K + i] = weights[i * K + j];                                     \
            }                                                                                  \
        const REAL end_shift = FINITE_MAX(end, K);                                             \
        REAL end_total = 0;                                                                    \
        for (Py_ssize_t k = 0; k < K; k++) {                                                   \
            end_weights[k] = EXP(end[k] - end_shift);                                          \
            end_total += end_weights[k];                                                       \
        }                                                                                      \
        if (mode >= 1)                                                                         \
            memset(marginals, 0, sizeof(REAL) * (size_t)B * tk);                               \
        if (mode == 2)                                                                         \
            memset(counts, 0, sizeof(REAL) * (size_t)B * kk);                                  \
        for (Py_ssize_t b = 0; b < B; b++) {                                                   \
            const Py_ssize_t n = (Py_ssize_t)lengths[b];                                       \
            const REAL *e = emissions + (size_t)b * tk;                                        \
            /* Forward. Position 0 takes the start scores, scaled by its own maximum. */       \
            for (Py_ssize_t k = 0; k < K; k++)                                                 \
                row[k] = start[k] + e[k];                                                      \
            REAL total_log = FINITE_MAX(row, K);                                               \
            REAL norm = 0;                                                                     \
            for (Py_ssize_t k = 0; k < K; k++) {                                               \
                alphas[k] = EXP(row[k] - total_log);                                           \
                norm += alphas[k];                                                             \
            }                                                                                  \
            norms[0] = norm;                                                                   \
            for (Py_ssize_t k = 0; k < K; k++)                                                 \
                alphas[k] /= norm;                                                             \
            total_log += LOG(norm);                                                            \
            for (Py_ssize_t t = 1; t < n; t++) {                                               \
                const REAL *e_t = e + t * K;                                                   \
                const REAL top = FINITE_MAX(e_t, K);                                           \
                REAL *s_t = scaled + t * K, *a_t = alphas + t * K;                             \
                const REAL *a_prev = a_t - K;                                                  \
                for (Py_ssize_t j = 0; j < K; j++) {                                           \
                    s_t[j] = EXP(e_t[j] - top);                                                \
                    a_t[j] = 0;                                                                \
                }                                                                              \
                for (Py_ssize_t i = 0; i < K; i++) {                                           \
                    const REAL a = a_prev[i];                                                  \
                    const REAL *w = weights + i * K;                                           \
                    for (Py_ssize_t j = 0; j < K; j++)                                         \
                        a_t[j] += a * w[j];                                                    \
                }                                                                              \
                norm = 0;                                                                      \
                for (Py_ssize_t j = 0; j < K; j++) {                                           \
                    a_t[j] *= s_t[j];                                                          \
                    norm += a_t[j];                                                            \
                }                                                                              \
                norms[t] = norm;                                                               \
                for (Py_ssize_t j = 0; j < K; j++)                                             \
                    a_t[j] /= norm;                                                            \
                total_log += LOG(norm) + top + shift;                                          \
            }                                                                                  \
            REAL closing = 0;                                                                  \
            for (Py_ssize_t k = 0; k < K; k++)                                                 \
                closing += alphas[(n - 1) * K + k] * end_weights[k];                           \
            log_z[b] = total_log + LOG(closing) + end_shift;                                   \
            if (mode == 0)                                                                     \
                continue;                                                                      \
            /* Backward, each step normalised to sum 1 (any positive factor would do: the      \
               marginals divide by sum_k alpha_t(k) beta_t(k) at each position). */            \
            for (Py_ssize_t k = 0; k < K; k++)                                                 \
                betas[(n - 1) * K + k] = end_weights[k] / end_total;                           \
            for (Py_ssize_t t = n - 2; t >= 0; t--) {                                          \
                const REAL *b_next = betas + (t + 1) * K, *s_next = scaled + (t + 1) * K;      \
                REAL *b_t = betas + t * K;                                                     \
                for (Py_ssize_t i = 0; i < K; i++)                                             \
                    b_t[i] = 0;                                                                \
                for (Py_ssize_t j = 0; j < K; j++) {                                           \
                    const REAL f = s_next[j] * b_next[j];                                      \
                    const REAL *w = weights_t + j * K;                                         \
                    for (Py_ssize_t i = 0; i < K; i++)                                         \
                        b_t[i] += w[i] * f;                                                    \
                }                                                                              \
                REAL total = 0;                                                                \
                for (Py_ssize_t i = 0; i < K; i++)                                             \
                    total += b_t[i];                                                           \
                for (Py_ssize_t i = 0; i < K; i++)                                             \
                    b_t[i] /= total;                                                           \
            }                                                                                  \
            REAL *m = marginals + (size_t)b * tk;                                              \
            for (Py_ssize_t t = 0; t < n; t++) {                                               \
                REAL total = 0;                                                                \
                for (Py_ssize_t k = 0; k < K; k++) {                                           \
                    m[t * K + k] = alphas[t * K + k] * betas[t * K + k];                       \
                    total += m[t * K + k];                                                     \
                }                                                                              \
                for (Py_ssize_t k = 0; k < K; k++)                                             \
                    m[t * K + k] /= total;                                                     \
                if (mode == 2 && t > 0) {                                                      \
                    /* xi_t(i, j) = a_{t-1}(i) W(i, j) s_t(j) b_t(j) / (norm_t Z_t); W is      \
                       applied once at the end. */                                             \
                    const REAL scale = norms[t] * total;                                       \
                    for (Py_ssize_t j = 0; j < K; j++)                                         \
                        row[j] = scaled[t * K + j] * betas[t * K + j] / scale;                 \
                    REAL *c = counts + (size_t)b * kk;                                         \
                    for (Py_ssize_t i = 0; i < K; i++) {                                       \
                        const REAL a = alphas[(t - 1) * K + i];                                \
                        for (Py_ssize_t j = 0; j < K; j++)                                     \
                            c[i * K + j] += a * row[j];                                        \
                    }                                                                          \
                }                                                                              \
            }                                                                                  \
            if (mode == 2) {                                                                   \
                REAL *c = counts + (size_t)b * kk;                                             \
                for (Py_ssize_t i = 0; i < (Py_ssize_t)kk; i++)                                \
                    c[i] *= weights[i];                                                        \
            }                                                                                  \
        }                                                                                      \
        free(memory);                                                                          \
        return 0;                                                                              \
    }

DEFINE_FINITE_MAX(finite_max_float, float)
DEFINE_FINITE_MAX(finite_max_double, double)
DEFINE_FORWARD_BACKWARD(forward_backward_float, finite_max_float, float, expf, logf)
DEFINE_FORWARD_BACKWARD(forward_backward_double, finite_max_double, double, exp, log)

/* The buffer must hold exactly `count` items of `itemsize` bytes. */
static int check_size(const Py_buffer *buffer, Py_ssize_t count, Py_ssize_t itemsize,
                      const char *name) {
    if (buffer->len != count * itemsize) {
        PyErr_Format(PyExc_ValueError, "%s has %zd bytes, expected %zd", name,
                     buffer->len, count * itemsize);
        return -1;
    }
    return 0;
}

enum { EMISSIONS, LENGTHS, TRANSITIONS, START, END, INPUTS };

/* Checks the five inputs every kernel takes (emissions, lengths, transitions, start, end) and
   returns the size of one number, 4 or 8; 0 with a ValueError set when they do not fit. */
static Py_ssize_t check_inputs(const Py_buffer *in, Py_ssize_t B, Py_ssize_t T, Py_ssize_t K) {
    const Py_ssize_t itemsize = (B > 0 && T > 0 && K > 0) ? in[EMISSIONS].len / (B * T * K) : 0;
    if (itemsize != 4 && itemsize != 8) {
        PyErr_SetString(PyExc_ValueError, "expected float32 or float64 (B, T, K) emissions");
        return 0;
    }
    if (check_size(&in[EMISSIONS], B * T * K, itemsize, "emissions") ||
        check_size(&in[LENGTHS], B, 8, "lengths") ||
        check_size(&in[TRANSITIONS], K * K, itemsize, "transitions") ||
        check_size(&in[START], K, itemsize, "start") || check_size(&in[END], K, itemsize, "end"))
        return 0;
    const int64_t *lengths = in[LENGTHS].buf;
    for (Py_ssize_t b = 0; b < B; b++) {
        if (lengths[b] < 1 || lengths[b] > T) {
            PyErr_Format(PyExc_ValueError, "sentence %zd has length %lld, not in 1..%zd", b,
                         (long long)lengths[b], T);
            return 0;
        }
    }
    return itemsize;
}

static PyObject *release(Py_buffer *buffers, int count, PyObject *result) {
    for (int i = 0; i < count; i++)
        PyBuffer_Release(&buffers[i]);
    return result;
}

static PyObject *viterbi(PyObject *self, PyObject *args) {
    Py_buffer in[INPUTS + 2]; /* then path, scores */
    Py_ssize_t B, T, K;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*w*w*nnn", &in[0], &in[1], &in[2], &in[3], &in[4],
                          &in[5], &in[6], &B, &T, &K))
        return NULL;
    const Py_ssize_t itemsize = check_inputs(in, B, T, K);
    if (itemsize == 0 || check_size(&in[INPUTS], B * T, 8, "path") ||
        check_size(&in[INPUTS + 1], B, itemsize, "scores"))
        return release(in, INPUTS + 2, NULL);
    int status;
    Py_BEGIN_ALLOW_THREADS;
    if (itemsize == 4)
        status = viterbi_float(in[EMISSIONS].buf, in[LENGTHS].buf, in[TRANSITIONS].buf,
                               in[START].buf, in[END].buf, in[INPUTS].buf, in[INPUTS + 1].buf,
                               B, T, K);
    else
        status = viterbi_double(in[EMISSIONS].buf, in[LENGTHS].buf, in[TRANSITIONS].buf,
                                in[START].buf, in[END].buf, in[INPUTS].buf, in[INPUTS + 1].buf,
                                B, T, K);
    Py_END_ALLOW_THREADS;
    return release(in, INPUTS + 2, status == 0 ? Py_NewRef(Py_None) : PyErr_NoMemory());
}

static PyObject *forward_backward(PyObject *self, PyObject *args) {
    Py_buffer in[INPUTS + 3]; /* then log_z, marginals, counts */
    Py_ssize_t B, T, K;
    int mode;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*w*w*w*nnni", &in[0], &in[1], &in[2], &in[3], &in[4],
                          &in[5], &in[6], &in[7], &B, &T, &K, &mode))
        return NULL;
    const Py_ssize_t itemsize = check_inputs(in, B, T, K);
    if (itemsize != 0 && (mode < 0 || mode > 2)) {
        PyErr_Format(PyExc_ValueError, "forward_backward: mode %d is not 0, 1 or 2", mode);
        return release(in, INPUTS + 3, NULL);
    }
    /* The outputs a mode does not write may be any size. */
    if (itemsize == 0 || check_size(&in[INPUTS], B, itemsize, "log_z") ||
        (mode >= 1 && check_size(&in[INPUTS + 1], B * T * K, itemsize, "marginals")) ||
        (mode == 2 && check_size(&in[INPUTS + 2], B * K * K, itemsize, "counts")))
        return release(in, INPUTS + 3, NULL);
    int status;
    Py_BEGIN_ALLOW_THREADS;
    if (itemsize == 4)
        status = forward_backward_float(in[EMISSIONS].buf, in[LENGTHS].buf, in[TRANSITIONS].buf,
                                        in[START].buf, in[END].buf, in[INPUTS].buf,
                                        in[INPUTS + 1].buf, in[INPUTS + 2].buf, B, T, K, mode);
    else
        status = forward_backward_double(in[EMISSIONS].buf, in[LENGTHS].buf,
                                         in[TRANSITIONS].buf, in[START].buf, in[END].buf,
                                         in[INPUTS].buf, in[INPUTS + 1].buf, in[INPUTS + 2].buf,
                                         B, T, K, mode);
    Py_END_ALLOW_THREADS;
    return release(in, INPUTS + 3, status == 0 ? Py_NewRef(Py_None) : PyErr_NoMemory());
}

static PyMethodDef methods[] = {
    {"viterbi", viterbi, METH_VARARGS,
     "viterbi(emissions, lengths, transitions, start, end, path, scores, B, T, K): best paths "
     "into path (B, T) int64 and their scores into scores (B,)."},
    {"forward_backward", forward_backward, METH_VARARGS,
     "forward_backward(emissions, lengths, transitions, start, end, log_z, marginals, counts, B, "
     "T, K, mode): log Z (B,), and with mode 1 the marginals (B, T, K), with mode 2 also the "
     "expected transition counts (B, K, K)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_compiled", "Compiled CPU CRF kernels for crftag.crf.kernels.", -1,
    methods,
};

PyMODINIT_FUNC PyInit__compiled(void) { return PyModule_Create(&module); }
