/* Compiled CPU kernel (module crftag.runtime._lstm) for the time loop of one bidirectional LSTM
 * layer, forward and back-propagation through time. It reads and writes plain buffers, so the
 * NumPy runtime (crftag.runtime.network) tags with its forward loop without torch, and training
 * (crftag.nn.fused_lstm) runs both loops.
 *
 * Written by hand because each step of the loop is a dozen torch or NumPy calls of a few
 * microseconds each over a few rows; on a CPU batch the calls, not the arithmetic, were most of
 * the encoder's cost. Here a step is one small matrix product per direction (register-blocked so
 * the compiler vectorises it) and one pass over the gates; the two directions run on two threads.
 * Each row's numbers are computed by the same operations in the same order whatever other rows
 * share the batch and however many threads run, so a row's result is the same to the bit.
 * Built as an optional extension (setup.py); where it does not compile, both callers run their
 * own loops instead, which compute the same functions.
 *
 * Layout: the N real positions of a padded batch, packed row after row (row b's positions are
 * start_b .. start_b + length_b - 1, start_b the sum of the lengths before it). Direction 0
 * reads a row left to right, direction 1 right to left; both write their state at the word it
 * belongs to. Gate order i, f, g, o, as in nn.LSTM.
 *
 * forward(gates, cells, states, lengths, weights_hh_t, B, H, threads, keep=True,
 *         own_thread=False)
 *   gates        (N, 2, 4H) in: x W_ih^T + b_ih + b_hh of each direction; out: the activated
 *                gates (sigmoid i, f, tanh g, sigmoid o), which the backward pass reads
 *   cells        (N, 2, H) written
 *   states       (N, 2, H) written
 *   lengths      (B,) int64, each >= 1; N is their sum
 *   weights_hh_t (2, H, 4H): each direction's W_hh transposed
 *   threads      1 or 2: how many threads the two directions share
 *   keep         false: the gates and cells are left as they were (no backward pass follows;
 *                writing them back was a third of the loop's memory traffic)
 *   own_thread   with two threads, where the partner is taken: the second one started for
 *                the call, never OpenMP's (see run_both)
 *
 * backward(grad_states, gates, cells, states, weights_hh, lengths, grad_gates, previous, B, H,
 *          threads)
 *   grad_states  (N, 2, H) dL/dh at each position from above
 *   weights_hh   (2, 4H, H)
 *   grad_gates   (N, 2, 4H) written: dL/d(gate pre-activations)
 *   previous     (N, 2, H) written: each position's h of the step before it in its direction's
 *                own time, zeros at the first step, so dL/dW_hh is one product after the loop
 *
 * float and double. The float activations use the Cephes polynomials for exp and tanh
 * (relative error about 1e-7, the rounding of a float), because the C library's are not
 * vectorised; the double ones use the C library's.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__unix__) || defined(__APPLE__)
#include <pthread.h>
#define HAVE_PTHREADS 1
#endif

/* Instruction-set paths: every hot loop is compiled once for the baseline ("generic") and, with
   GCC on x86-64, once for AVX2 + FMA ("avx2", x86-64-v3); "avx512" is the avx2 path with the
   float product in sixteen-float vectors (x86-64-v4). The best one the CPU has is taken when the
   module loads, unless CRFTAG_ISA names another; use() switches at run time, for tests.
   avx2 and avx512 give the same bits (the same fused operations in the same order); generic
   rounds each product and sum apart, where the others fuse them (FMA). */
#define GENERIC
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define X86_PATHS 1
#define AVX2 __attribute__((target("arch=x86-64-v3")))
#define AVX512 __attribute__((target("arch=x86-64-v4")))
#endif

/* The float activations work on eight numbers at a time, written with GCC's vector extensions
   because its vectoriser does not turn the branch-free scalar forms into vector code. */
/* The helpers below are always inlined, so how a 32-byte vector is passed never matters. */
#pragma GCC diagnostic ignored "-Wpsabi"
typedef float vfloat __attribute__((vector_size(32)));
typedef int32_t vint __attribute__((vector_size(32)));

static inline __attribute__((always_inline)) vfloat choose(vint mask, vfloat yes, vfloat no) {
    return (vfloat)((mask & (vint)yes) | (~mask & (vint)no));
}

/* Cephes expf: exp(x) = 2^n exp(r), |r| <= ln(2) / 2, exp(r) by a degree-6 polynomial. NaN stays
   NaN: both clamps compare false on it. */
static inline __attribute__((always_inline)) vfloat exp_vector(vfloat x) {
    const vfloat high = x - x + 88.3762626647949f, low = x - x - 87.3365447505531f;
    x = choose(x > high, high, x);
    x = choose(x < low, low, x);
    const vfloat scaled = x * 1.44269504088896341f + 0.5f; /* n = floor(scaled) */
    vfloat n = __builtin_convertvector(__builtin_convertvector(scaled, vint), vfloat);
    n = choose(n > scaled, n - 1.0f, n);
    const vfloat r = x - n * 0.693359375f + n * 2.12194440e-4f;
    vfloat y = r * 1.9875691500e-4f + 1.3981999507e-3f;
    y = y * r + 8.3334519073e-3f;
    y = y * r + 4.1665795894e-2f;
    y = y * r + 1.6666665459e-1f;
    y = y * r + 5.0000001201e-1f;
    y = y * r * r + r + 1.0f;
    const vint bits = (__builtin_convertvector(n, vint) + 127) << 23;
    return y * (vfloat)bits;
}

static inline __attribute__((always_inline)) vfloat sigmoid_vector(vfloat x) { return 1.0f / (1.0f + exp_vector(-x)); }

/* Cephes tanhf: an odd polynomial below |x| = 0.625, 1 - 2 / (exp(2|x|) + 1) above. */
static inline __attribute__((always_inline)) vfloat tanh_vector(vfloat x) {
    const vfloat z = x * x;
    vfloat p = z * -5.70498872745e-3f + 2.06390887954e-2f;
    p = p * z - 5.37397155531e-2f;
    p = p * z + 1.33314422036e-1f;
    p = p * z - 3.33332819422e-1f;
    const vfloat small = x + x * z * p;
    const vint negative = x < 0.0f;
    const vfloat magnitude = choose(negative, -x, x);
    vfloat large = 1.0f - 2.0f / (exp_vector(2.0f * magnitude) + 1.0f);
    large = choose(negative, -large, large);
    return choose(magnitude < 0.625f, small, large);
}

/* out[k] = f(in[k]) for k < n, eight at a time and the last few through a padded vector. */
#define DEFINE_APPLY(NAME, VECTOR, TARGET)                                                     \
    TARGET static void NAME(const float *in, float *out, Py_ssize_t n) {                       \
        Py_ssize_t k = 0;                                                                      \
        for (; k + 8 <= n; k += 8) {                                                           \
            vfloat x;                                                                          \
            memcpy(&x, in + k, sizeof x);                                                      \
            x = VECTOR(x);                                                                     \
            memcpy(out + k, &x, sizeof x);                                                     \
        }                                                                                      \
        if (k < n) {                                                                           \
            vfloat x = {0};                                                                    \
            memcpy(&x, in + k, sizeof(float) * (size_t)(n - k));                               \
            x = VECTOR(x);                                                                     \
            memcpy(out + k, &x, sizeof(float) * (size_t)(n - k));                              \
        }                                                                                      \
    }

static void sigmoid_double(const double *in, double *out, Py_ssize_t n) {
    for (Py_ssize_t k = 0; k < n; k++)
        out[k] = 1.0 / (1.0 + exp(-in[k]));
}

static void tanh_double(const double *in, double *out, Py_ssize_t n) {
    for (Py_ssize_t k = 0; k < n; k++)
        out[k] = tanh(in[k]);
}

/* Sorts row indices by length, longest first, ties by index, so that the rows still running at
   any step are a prefix of the order. */
static const int64_t *sort_lengths;
static int by_length(const void *a, const void *b) {
    const Py_ssize_t i = *(const Py_ssize_t *)a, j = *(const Py_ssize_t *)b;
    if (sort_lengths[i] != sort_lengths[j])
        return sort_lengths[i] > sort_lengths[j] ? -1 : 1;
    return (i > j) - (i < j);
}

/* What one direction's loop needs; the two directions run with one each. */
typedef struct Job {
    const void *in;       /* forward: gates; backward: grad_states */
    void *gates, *cells, *states, *grad_gates, *previous;
    const void *weights;  /* weights_hh_t (forward) or weights_hh (backward), this direction's */
    const int64_t *lengths;
    const Py_ssize_t *order, *starts;
    Py_ssize_t B, H, steps;
    int direction, status;
    int keep; /* forward: whether the gates and cells are written back for a backward pass */
    int own_thread; /* the second direction on a thread of its own rather than OpenMP's pool */
    void (*loop)(struct Job *);
} Job;

/* The packed position of sorted row i at step t of the job's direction. */
static inline Py_ssize_t position(const Job *job, Py_ssize_t i, Py_ssize_t t) {
    const Py_ssize_t b = job->order[i];
    return job->starts[b] + (job->direction ? job->lengths[b] - 1 - t : t);
}

/* C[n, M] += A[n, K] B[K, M], B row-major, A and C with row strides lda and ldc: four rows by
   sixteen columns of C at a time held in registers, so each B load feeds four FMAs. */
#define DEFINE_GEMM(NAME, REAL, TARGET)                                                        \
    TARGET static void NAME(Py_ssize_t n, Py_ssize_t K, Py_ssize_t M, const REAL *A,           \
                            Py_ssize_t lda, const REAL *Bm, REAL *C, Py_ssize_t ldc) {         \
        enum { COLS = 16 };                                                                    \
        Py_ssize_t r = 0;                                                                      \
        for (; r + 4 <= n; r += 4) {                                                           \
            const REAL *a0 = A + r * lda, *a1 = a0 + lda, *a2 = a1 + lda, *a3 = a2 + lda;      \
            REAL *c0 = C + r * ldc, *c1 = c0 + ldc, *c2 = c1 + ldc, *c3 = c2 + ldc;            \
            Py_ssize_t j = 0;                                                                  \
            for (; j + COLS <= M; j += COLS) {                                                 \
                REAL s0[COLS], s1[COLS], s2[COLS], s3[COLS];                                   \
                for (int q = 0; q < COLS; q++) {                                               \
                    s0[q] = c0[j + q];                                                         \
                    s1[q] = c1[j + q];                                                         \
                    s2[q] = c2[j + q];                                                         \
                    s3[q] = c3[j + q];                                                         \
                }                                                                              \
                for (Py_ssize_t k = 0; k < K; k++) {                                           \
                    const REAL *b = Bm + k * M + j;                                            \
                    const REAL x0 = a0[k], x1 = a1[k], x2 = a2[k], x3 = a3[k];                 \
                    for (int q = 0; q < COLS; q++) {                                           \
                        s0[q] += x0 * b[q];                                                    \
                        s1[q] += x1 * b[q];                                                    \
                        s2[q] += x2 * b[q];                                                    \
                        s3[q] += x3 * b[q];                                                    \
                    }                                                                          \
                }                                                                              \
                for (int q = 0; q < COLS; q++) {                                               \
                    c0[j + q] = s0[q];                                                         \
                    c1[j + q] = s1[q];                                                         \
                    c2[j + q] = s2[q];                                                         \
                    c3[j + q] = s3[q];                                                         \
                }                                                                              \
            }                                                                                  \
            for (Py_ssize_t k = 0; k < K && j < M; k++) {                                      \
                const REAL *b = Bm + k * M;                                                    \
                for (Py_ssize_t q = j; q < M; q++) {                                           \
                    c0[q] += a0[k] * b[q];                                                     \
                    c1[q] += a1[k] * b[q];                                                     \
                    c2[q] += a2[k] * b[q];                                                     \
                    c3[q] += a3[k] * b[q];                                                     \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
        for (; r < n; r++) {                                                                   \
            const REAL *a = A + r * lda;                                                       \
            REAL *c = C + r * ldc;                                                             \
            for (Py_ssize_t k = 0; k < K; k++) {                                               \
                const REAL *b = Bm + k * M;                                                    \
                const REAL x = a[k];                                                           \
                for (Py_ssize_t q = 0; q < M; q++)                                             \
                    c[q] += x * b[q];                                                          \
            }                                                                                  \
        }                                                                                      \
    }

/* The float product with explicit vectors of eight floats (AVX2), or of sixteen where the CPU
   has AVX-512: GCC keeps the scalar version's accumulators on the stack. A panel keeps ROWS
   rows by VECS vectors of C's columns in registers; each step over k loads VECS vectors of B and
   broadcasts one number of A per row. Every number of C is the same chain of products added
   in order of k, fused (FMA) on both, whatever the panel's shape or width, so the shape and
   the width are chosen for speed alone. */
typedef float vfloat16 __attribute__((vector_size(64)));

#define DEFINE_PANEL(NAME, VECTOR, ROWS, VECS, TARGET)                                         \
    static inline __attribute__((always_inline)) TARGET void NAME(                             \
        Py_ssize_t K, Py_ssize_t M, const float *A, Py_ssize_t lda, const float *Bm, float *C, \
        Py_ssize_t ldc) {                                                                      \
        enum { LANES = sizeof(VECTOR) / sizeof(float) };                                       \
        VECTOR sums[ROWS][VECS], b[VECS];                                                      \
        for (int r = 0; r < ROWS; r++)                                                         \
            for (int v = 0; v < VECS; v++)                                                     \
                memcpy(&sums[r][v], C + r * ldc + LANES * v, sizeof(VECTOR));                  \
        for (Py_ssize_t k = 0; k < K; k++) {                                                   \
            for (int v = 0; v < VECS; v++)                                                     \
                memcpy(&b[v], Bm + k * M + LANES * v, sizeof(VECTOR));                         \
            for (int r = 0; r < ROWS; r++) {                                                   \
                const VECTOR x = (VECTOR){0} + A[r * lda + k];                                 \
                for (int v = 0; v < VECS; v++)                                                 \
                    sums[r][v] += x * b[v];                                                    \
            }                                                                                  \
        }                                                                                      \
        for (int r = 0; r < ROWS; r++)                                                         \
            for (int v = 0; v < VECS; v++)                                                     \
                memcpy(C + r * ldc + LANES * v, &sums[r][v], sizeof(VECTOR));                  \
    }

/* ROWS rows of C, their first `columns` columns (a multiple of sixteen): WIDTH columns at a
   time in the panel WIDE, then sixteen at a time in NARROW. */
#define DEFINE_COLUMNS(NAME, WIDE, WIDTH, NARROW, TARGET)                                      \
    static inline __attribute__((always_inline)) TARGET void NAME(                             \
        Py_ssize_t columns, Py_ssize_t K, Py_ssize_t M, const float *A, Py_ssize_t lda,        \
        const float *Bm, float *C, Py_ssize_t ldc) {                                           \
        Py_ssize_t j = 0;                                                                      \
        for (; j + WIDTH <= columns; j += WIDTH)                                               \
            WIDE(K, M, A, lda, Bm + j, C + j, ldc);                                            \
        for (; j + 16 <= columns; j += 16)                                                     \
            NARROW(K, M, A, lda, Bm + j, C + j, ldc);                                          \
    }

/* C[n, M] += A[n, K] B[K, M] in float, as gemm_double computes it: six rows at a time over all
   columns a multiple of sixteen, the last n % 6 rows together in wider panels (one row by
   sixteen columns is only two chains of additions, each waiting for the last, where a core
   runs a dozen at once), then the columns left over one number at a time. ROWS1 .. ROWS6 are
   DEFINE_COLUMNS functions for that many rows. */
#define DEFINE_GEMM_FLOAT(NAME, TARGET, ROWS1, ROWS2, ROWS3, ROWS4, ROWS5, ROWS6)              \
    TARGET static void NAME(Py_ssize_t n, Py_ssize_t K, Py_ssize_t M, const float *A,          \
                            Py_ssize_t lda, const float *Bm, float *C, Py_ssize_t ldc) {       \
        const Py_ssize_t full = n - n % 6, columns = M - M % 16;                               \
        for (Py_ssize_t r = 0; r < full; r += 6)                                               \
            ROWS6(columns, K, M, A + r * lda, lda, Bm, C + r * ldc, ldc);                      \
        const float *last_a = A + full * lda;                                                  \
        float *last_c = C + full * ldc;                                                        \
        switch (n - full) {                                                                    \
        case 5: ROWS5(columns, K, M, last_a, lda, Bm, last_c, ldc); break;                     \
        case 4: ROWS4(columns, K, M, last_a, lda, Bm, last_c, ldc); break;                     \
        case 3: ROWS3(columns, K, M, last_a, lda, Bm, last_c, ldc); break;                     \
        case 2: ROWS2(columns, K, M, last_a, lda, Bm, last_c, ldc); break;                     \
        case 1: ROWS1(columns, K, M, last_a, lda, Bm, last_c, ldc); break;                     \
        }                                                                                      \
        for (Py_ssize_t r = 0; r < n && columns < M; r++) {                                    \
            const float *a = A + r * lda;                                                      \
            float *c = C + r * ldc;                                                            \
            for (Py_ssize_t k = 0; k < K; k++)                                                 \
                for (Py_ssize_t q = columns; q < M; q++)                                       \
                    c[q] += a[k] * Bm[k * M + q];                                              \
        }                                                                                      \
    }

#define NO_TARGET
DEFINE_PANEL(block6, vfloat, 6, 2, NO_TARGET)
DEFINE_PANEL(block5, vfloat, 5, 2, NO_TARGET)
DEFINE_PANEL(block4, vfloat, 4, 2, NO_TARGET)
DEFINE_PANEL(block3, vfloat, 3, 2, NO_TARGET)
DEFINE_PANEL(block2, vfloat, 2, 2, NO_TARGET)
DEFINE_PANEL(block1, vfloat, 1, 2, NO_TARGET)
DEFINE_PANEL(wide3, vfloat, 3, 4, NO_TARGET)
DEFINE_PANEL(wide2, vfloat, 2, 6, NO_TARGET)
DEFINE_PANEL(wide1, vfloat, 1, 8, NO_TARGET)
DEFINE_COLUMNS(rows6, block6, 16, block6, NO_TARGET)
DEFINE_COLUMNS(rows5, block5, 16, block5, NO_TARGET)
DEFINE_COLUMNS(rows4, block4, 16, block4, NO_TARGET)
DEFINE_COLUMNS(rows3, wide3, 32, block3, NO_TARGET)
DEFINE_COLUMNS(rows2, wide2, 48, block2, NO_TARGET)
DEFINE_COLUMNS(rows1, wide1, 64, block1, NO_TARGET)
DEFINE_GEMM_FLOAT(gemm_float_generic, GENERIC, rows1, rows2, rows3, rows4, rows5, rows6)

#ifdef X86_PATHS
DEFINE_GEMM_FLOAT(gemm_float_avx2, AVX2, rows1, rows2, rows3, rows4, rows5, rows6)
/* Sixteen-float vectors pay for four rows or more; for fewer, loading B is the bound and the
   eight-float panels do better. */
DEFINE_PANEL(block6_16, vfloat16, 6, 2, AVX512)
DEFINE_PANEL(block5_16, vfloat16, 5, 2, AVX512)
DEFINE_PANEL(block4_16, vfloat16, 4, 2, AVX512)
DEFINE_PANEL(narrow6_16, vfloat16, 6, 1, AVX512)
DEFINE_PANEL(narrow5_16, vfloat16, 5, 1, AVX512)
DEFINE_PANEL(narrow4_16, vfloat16, 4, 1, AVX512)
DEFINE_COLUMNS(rows6_16, block6_16, 32, narrow6_16, AVX512)
DEFINE_COLUMNS(rows5_16, block5_16, 32, narrow5_16, AVX512)
DEFINE_COLUMNS(rows4_16, block4_16, 32, narrow4_16, AVX512)
DEFINE_GEMM_FLOAT(gemm_float_avx512, AVX512, rows1, rows2, rows3, rows4_16, rows5_16, rows6_16)
#endif

/* One direction's forward loop. Per step: the running rows' pre-activations gathered into a
   contiguous block, the recurrent product added, the gates activated and the cell and state
   updated, then everything scattered to the rows' packed positions. */
#define DEFINE_FORWARD(NAME, GEMM, REAL, SIGMOID, TANH, TARGET)                                \
    TARGET static void NAME##_step(Py_ssize_t n, Py_ssize_t H, REAL *block, REAL *cell,        \
                                   REAL *state, int first) {                                   \
        for (Py_ssize_t i = 0; i < n; i++) {                                                   \
            REAL *g = block + i * 4 * H, *c = cell + i * H, *h = state + i * H;                \
            SIGMOID(g, g, 2 * H);                                                              \
            TANH(g + 2 * H, g + 2 * H, H);                                                     \
            SIGMOID(g + 3 * H, g + 3 * H, H);                                                  \
            if (first)                                                                         \
                for (Py_ssize_t k = 0; k < H; k++)                                             \
                    c[k] = g[k] * g[2 * H + k];                                                \
            else                                                                               \
                for (Py_ssize_t k = 0; k < H; k++)                                             \
                    c[k] = g[H + k] * c[k] + g[k] * g[2 * H + k];                              \
            TANH(c, h, H);                                                                     \
            for (Py_ssize_t k = 0; k < H; k++)                                                 \
                h[k] *= g[3 * H + k];                                                          \
        }                                                                                      \
    }                                                                                          \
    static void NAME(Job *job) {                                                               \
        const Py_ssize_t H = job->H, B = job->B, d = job->direction;                           \
        REAL *block = malloc(sizeof(REAL) * (size_t)(B * 4 * H));                              \
        REAL *cell = malloc(sizeof(REAL) * (size_t)(B * H));                                   \
        REAL *state = malloc(sizeof(REAL) * (size_t)(B * H));                                  \
        if (block == NULL || cell == NULL || state == NULL) {                                  \
            job->status = -1;                                                                  \
        } else {                                                                               \
            const REAL *in = job->in;                                                          \
            REAL *gates = job->gates, *cells = job->cells, *states = job->states;              \
            Py_ssize_t n = B;                                                                  \
            for (Py_ssize_t t = 0; t < job->steps; t++) {                                      \
                while (n > 0 && job->lengths[job->order[n - 1]] <= t)                          \
                    n--;                                                                       \
                for (Py_ssize_t i = 0; i < n; i++)                                             \
                    memcpy(block + i * 4 * H, in + (position(job, i, t) * 2 + d) * 4 * H,      \
                           sizeof(REAL) * (size_t)(4 * H));                                    \
                if (t)                                                                         \
                    GEMM(n, H, 4 * H, state, H, job->weights, block, 4 * H);                   \
                NAME##_step(n, H, block, cell, state, t == 0);                                 \
                for (Py_ssize_t i = 0; i < n; i++) {                                           \
                    const Py_ssize_t p = position(job, i, t) * 2 + d;                          \
                    if (job->keep) {                                                           \
                        memcpy(gates + p * 4 * H, block + i * 4 * H,                           \
                               sizeof(REAL) * (size_t)(4 * H));                                \
                        memcpy(cells + p * H, cell + i * H, sizeof(REAL) * (size_t)H);         \
                    }                                                                          \
                    memcpy(states + p * H, state + i * H, sizeof(REAL) * (size_t)H);           \
                }                                                                              \
            }                                                                                  \
            job->status = 0;                                                                   \
        }                                                                                      \
        free(block);                                                                           \
        free(cell);                                                                            \
        free(state);                                                                           \
    }

/* One direction's back-propagation through time. dh and dc hold, for the running rows (a
   prefix of the order), dL/dh_t through step t + 1 and dL/dc_t through c_{t+1}; a row joins
   with zeros at its last step. */
#define DEFINE_BACKWARD(NAME, GEMM, REAL, TANH, TARGET)                                        \
    TARGET static void NAME##_step(Py_ssize_t n, Py_ssize_t H, const Job *job, Py_ssize_t t,   \
                                   REAL *dh, REAL *dc, REAL *block) {                          \
        const Py_ssize_t d = job->direction;                                                   \
        const REAL *grad_states = job->in, *gates = job->gates, *cells = job->cells;           \
        const REAL *states = job->states;                                                      \
        REAL *grad_gates = job->grad_gates, *previous = job->previous;                         \
        REAL *tanh_cell = block + n * 4 * H; /* H spare numbers after the block's n rows */    \
        REAL *zeros = block + job->B * 4 * H + H; /* and H zeros at the end: c before step 0 */ \
        for (Py_ssize_t i = 0; i < n; i++) {                                                   \
            const Py_ssize_t p = position(job, i, t) * 2 + d;                                  \
            const Py_ssize_t before = t ? position(job, i, t - 1) * 2 + d : -1;                \
            const REAL *g = gates + p * 4 * H, *c = cells + p * H, *above = grad_states + p * H; \
            const REAL *previous_cell = before >= 0 ? cells + before * H : zeros;              \
            REAL *out = block + i * 4 * H, *dhi = dh + i * H, *dci = dc + i * H;               \
            TANH(c, tanh_cell, H);                                                             \
            for (Py_ssize_t k = 0; k < H; k++) {                                               \
                const REAL ig = g[k], fg = g[H + k], gg = g[2 * H + k], og = g[3 * H + k];     \
                const REAL total = above[k] + dhi[k];                                          \
                const REAL cell_grad = total * og * (1 - tanh_cell[k] * tanh_cell[k]) + dci[k]; \
                out[k] = cell_grad * gg * ig * (1 - ig);                                       \
                out[H + k] = cell_grad * previous_cell[k] * fg * (1 - fg);                     \
                out[2 * H + k] = cell_grad * ig * (1 - gg * gg);                               \
                out[3 * H + k] = total * tanh_cell[k] * og * (1 - og);                         \
                dci[k] = cell_grad * fg;                                                       \
                dhi[k] = 0;                                                                    \
            }                                                                                  \
            memcpy(grad_gates + p * 4 * H, out, sizeof(REAL) * (size_t)(4 * H));               \
            if (before >= 0)                                                                   \
                memcpy(previous + p * H, states + before * H, sizeof(REAL) * (size_t)H);       \
            else                                                                               \
                memset(previous + p * H, 0, sizeof(REAL) * (size_t)H);                         \
        }                                                                                      \
    }                                                                                          \
    static void NAME(Job *job) {                                                               \
        const Py_ssize_t H = job->H, B = job->B;                                               \
        REAL *block = calloc((size_t)((B * 4 + 2) * H), sizeof(REAL));                         \
        REAL *dh = calloc((size_t)(B * H), sizeof(REAL));                                      \
        REAL *dc = calloc((size_t)(B * H), sizeof(REAL));                                      \
        if (block == NULL || dh == NULL || dc == NULL) {                                       \
            job->status = -1;                                                                  \
        } else {                                                                               \
            Py_ssize_t n = 0;                                                                  \
            for (Py_ssize_t t = job->steps - 1; t >= 0; t--) {                                 \
                while (n < B && job->lengths[job->order[n]] > t)                               \
                    n++;                                                                       \
                NAME##_step(n, H, job, t, dh, dc, block);                                      \
                if (t)                                                                         \
                    GEMM(n, 4 * H, H, block, 4 * H, job->weights, dh, H);                      \
            }                                                                                  \
            job->status = 0;                                                                   \
        }                                                                                      \
        free(block);                                                                           \
        free(dh);                                                                              \
        free(dc);                                                                              \
    }

/* One instruction-set path's loops, their names ending in _PATH. */
#define DEFINE_PATH(PATH, TARGET, GEMM_FLOAT)                                                  \
    DEFINE_APPLY(sigmoid_float_##PATH, sigmoid_vector, TARGET)                                 \
    DEFINE_APPLY(tanh_float_##PATH, tanh_vector, TARGET)                                       \
    DEFINE_GEMM(gemm_double_##PATH, double, TARGET)                                            \
    DEFINE_FORWARD(forward_float_##PATH, GEMM_FLOAT, float, sigmoid_float_##PATH,              \
                   tanh_float_##PATH, TARGET)                                                  \
    DEFINE_FORWARD(forward_double_##PATH, gemm_double_##PATH, double, sigmoid_double,          \
                   tanh_double, TARGET)                                                        \
    DEFINE_BACKWARD(backward_float_##PATH, GEMM_FLOAT, float, tanh_float_##PATH, TARGET)       \
    DEFINE_BACKWARD(backward_double_##PATH, gemm_double_##PATH, double, tanh_double, TARGET)

DEFINE_PATH(generic, GENERIC, gemm_float_generic)
#ifdef X86_PATHS
DEFINE_PATH(avx2, AVX2, gemm_float_avx2)
DEFINE_PATH(avx512, AVX2, gemm_float_avx512)
#endif

typedef void (*Loop)(Job *);
typedef struct Path {
    const char *name;
    Loop forward_float, forward_double, backward_float, backward_double;
} Path;

#define PATH_ENTRY(PATH) \
    {#PATH, forward_float_##PATH, forward_double_##PATH, backward_float_##PATH, backward_double_##PATH}
static const Path paths[] = {
    PATH_ENTRY(generic),
#ifdef X86_PATHS
    PATH_ENTRY(avx2),
    PATH_ENTRY(avx512),
#endif
};
enum { PATH_COUNT = sizeof paths / sizeof paths[0] };
static const Path *path = &paths[0]; /* the one the loops take */

/* Whether this CPU runs paths[index]. */
static int cpu_runs(int index) {
#ifdef X86_PATHS
    __builtin_cpu_init();
#if __GNUC__ >= 12
    const int v3 = __builtin_cpu_supports("x86-64-v3"), v4 = __builtin_cpu_supports("x86-64-v4");
#else
    const int v3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                   __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2");
    const int v4 = v3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                   __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
                   __builtin_cpu_supports("avx512vl");
#endif
    return index == 0 || (index == 1 && v3) || (index == 2 && v4);
#else
    return index == 0;
#endif
}

/* The index of the path called `name` that this CPU runs, or -1. */
static int find_path(const char *name) {
    for (int index = 0; index < PATH_COUNT; index++)
        if (strcmp(paths[index].name, name) == 0 && cpu_runs(index))
            return index;
    return -1;
}

/* The partner: one thread of the module's own that runs the second direction of each call.
 * OpenMP's pool gave a choice of two costs. Its waiting threads either spin for a core between
 * parallel regions (libgomp's default: beside other busy processes they hold the cores that the
 * other process's threads wait for) or sleep at once (OMP_WAIT_POLICY=PASSIVE, which the crftag
 * command sets: each region then waits for a sleeping thread to wake, twice, which cost 7% of a
 * training epoch here and a third on some CPUs). The partner spins only while the machine has a
 * core for every runnable thread, which it reads from /proc/loadavg (its fourth field counts the
 * runnable threads, its own and its caller's among them) at most every CHECK_NS, and for at most
 * SPIN_NS; then it sleeps on a condition variable. The caller waits for it in the same way.
 * A process forked after using it starts a new one (pthread_atfork), where OpenMP's pool would
 * hang. The partner serves one call at a time; a call that finds it taken runs on OpenMP's pool,
 * as before, with the same numbers. */
#ifdef HAVE_PTHREADS
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <emmintrin.h>
#define RELAX() _mm_pause()
#elif defined(__aarch64__)
#define RELAX() __asm__ __volatile__("yield")
#else
#define RELAX() ((void)0)
#endif

enum { SPIN_NS = 5000000, CHECK_NS = 20000, RELAX_ROUNDS = 64 };

static struct {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    atomic_uint posted;   /* jobs handed to the partner so far */
    atomic_uint finished; /* jobs it has finished */
    atomic_flag taken;    /* a call is using it */
    Job *job;
    int started;          /* the thread runs in this process */
    int spins;            /* whether waits may spin: two or more cores and /proc/loadavg read */
    int loadavg;          /* /proc/loadavg open, or -1 */
    long cores;
} partner = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, ATOMIC_FLAG_INIT,
             NULL, 0, 0, -1, 0};
static int use_partner = 1; /* pool("partner") or pool("openmp") */

static long long now_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long long)now.tv_sec * 1000000000LL + now.tv_nsec;
}

/* Whether more threads are runnable than the machine has cores (or it cannot be read). */
static int machine_busy(void) {
    char text[160];
    const ssize_t size = pread(partner.loadavg, text, sizeof text - 1, 0);
    if (size <= 0)
        return 1;
    text[size] = '\0';
    const char *slash = strchr(text, '/'); /* "0.52 0.58 0.59 3/201 4242": runnable/all */
    if (slash == NULL)
        return 1;
    const char *digits = slash;
    while (digits > text && digits[-1] >= '0' && digits[-1] <= '9')
        digits--;
    return digits == slash || strtol(digits, NULL, 10) > partner.cores;
}

/* Spins until *counter equals target while the machine has cores to spare, for at most SPIN_NS;
   returns whether it got there. */
static int spin_until(atomic_uint *counter, unsigned target) {
    const long long start = now_ns();
    long long checked = start;
    if (machine_busy())
        return 0;
    for (;;) {
        for (int round = 0; round < RELAX_ROUNDS; round++) {
            if (atomic_load_explicit(counter, memory_order_acquire) == target)
                return 1;
            RELAX();
        }
        const long long now = now_ns();
        if (now - start > SPIN_NS)
            return 0;
        if (now - checked > CHECK_NS) {
            if (machine_busy())
                return 0;
            checked = now;
        }
    }
}

/* Waits until *counter equals target: spinning while that is fair, then asleep. */
static void await_count(atomic_uint *counter, unsigned target) {
    if (partner.spins && spin_until(counter, target))
        return;
    pthread_mutex_lock(&partner.lock);
    while (atomic_load(counter) != target)
        pthread_cond_wait(&partner.changed, &partner.lock);
    pthread_mutex_unlock(&partner.lock);
}

/* Sets *counter to value and wakes whoever sleeps on it. */
static void announce(atomic_uint *counter, unsigned value) {
    pthread_mutex_lock(&partner.lock);
    atomic_store(counter, value);
    pthread_cond_broadcast(&partner.changed);
    pthread_mutex_unlock(&partner.lock);
}

static void *partner_main(void *unused) {
    (void)unused;
    for (unsigned done = 0;; done++) {
        await_count(&partner.posted, done + 1);
        partner.job->loop(partner.job);
        announce(&partner.finished, done + 1);
    }
    return NULL;
}

/* In a forked child the thread is gone and the lock may be held: begin afresh. */
static void partner_forgotten(void) {
    pthread_mutex_init(&partner.lock, NULL);
    pthread_cond_init(&partner.changed, NULL);
    atomic_store(&partner.posted, 0);
    atomic_store(&partner.finished, 0);
    atomic_flag_clear(&partner.taken);
    partner.started = 0;
}

static int start_partner(void) {
    static int registered = 0;
    if (!registered && pthread_atfork(NULL, NULL, partner_forgotten) != 0)
        return -1;
    registered = 1;
    long usable = 1;
#ifdef __linux__
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) == 0)
        usable = CPU_COUNT(&allowed);
    if (partner.loadavg < 0)
        partner.loadavg = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
#endif
    partner.cores = sysconf(_SC_NPROCESSORS_ONLN);
    /* With one usable core a spinning thread would hold the core its partner needs. */
    partner.spins = usable >= 2 && partner.loadavg >= 0;
    pthread_attr_t attributes;
    pthread_t thread;
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    const int failed = pthread_create(&thread, &attributes, partner_main, NULL);
    pthread_attr_destroy(&attributes);
    partner.started = !failed;
    return failed ? -1 : 0;
}

/* Runs jobs[0] here and jobs[1] on the partner; -1 where the partner is taken or cannot start. */
static int run_with_partner(Job *jobs) {
    if (atomic_flag_test_and_set(&partner.taken))
        return -1;
    if (!partner.started && start_partner() != 0) {
        atomic_flag_clear(&partner.taken);
        return -1;
    }
    partner.job = &jobs[1];
    const unsigned ticket = atomic_load(&partner.posted) + 1;
    announce(&partner.posted, ticket);
    jobs[0].loop(&jobs[0]);
    await_count(&partner.finished, ticket);
    atomic_flag_clear(&partner.taken);
    return 0;
}
#endif

static void *run_job(void *job) {
    ((Job *)job)->loop(job);
    return NULL;
}

/* Runs the two directions' loops: with two threads, the second direction on the partner (above);
   where it is taken or pool("openmp") was chosen, on OpenMP's pool (torch's own: both load the
   same libgomp), or with own_thread, which the NumPy runtime asks for, on a thread started for
   the call (OpenMP's pool hangs in a process forked after using it). */
static int run_both(Job *jobs, int threads) {
#ifdef HAVE_PTHREADS
    if (threads == 2 && use_partner && run_with_partner(jobs) == 0)
        return jobs[0].status || jobs[1].status;
    pthread_t helper;
    if (threads == 2 && jobs[1].own_thread &&
        pthread_create(&helper, NULL, run_job, &jobs[1]) == 0) {
        jobs[0].loop(&jobs[0]);
        pthread_join(helper, NULL);
        return jobs[0].status || jobs[1].status;
    }
#endif
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static, 1)
#else
    (void)threads;
#endif
    for (int d = 0; d < 2; d++)
        jobs[d].loop(&jobs[d]);
    return jobs[0].status || jobs[1].status;
}

/* The buffer must hold exactly `count` items of `itemsize` bytes. */
static int check_size(const Py_buffer *buffer, Py_ssize_t count, Py_ssize_t itemsize,
                      const char *name) {
    if (buffer->len != count * itemsize) {
        PyErr_Format(PyExc_ValueError, "%s has %zd bytes, expected %zd", name, buffer->len,
                     count * itemsize);
        return -1;
    }
    return 0;
}

/* Checks the lengths (B,) and returns N, their sum, and the longest; -1 with a ValueError set
   when one is below 1. */
static Py_ssize_t check_lengths(const Py_buffer *lengths, Py_ssize_t B, Py_ssize_t *steps) {
    if (B < 1) {
        PyErr_SetString(PyExc_ValueError, "expected at least one row");
        return -1;
    }
    if (check_size(lengths, B, 8, "lengths"))
        return -1;
    const int64_t *values = lengths->buf;
    Py_ssize_t total = 0;
    *steps = 0;
    for (Py_ssize_t b = 0; b < B; b++) {
        if (values[b] < 1) {
            PyErr_Format(PyExc_ValueError, "row %zd has length %lld, expected at least 1", b,
                         (long long)values[b]);
            return -1;
        }
        total += (Py_ssize_t)values[b];
        *steps = values[b] > *steps ? (Py_ssize_t)values[b] : *steps;
    }
    return total;
}

static PyObject *release(Py_buffer *buffers, int count, PyObject *result) {
    for (int i = 0; i < count; i++)
        PyBuffer_Release(&buffers[i]);
    return result;
}

/* Fills what both directions' jobs share: the row order by length and the rows' starts, in
   one allocation that finish() frees; NULL when there is no memory for it. */
static Py_ssize_t *prepare(Job *jobs, const int64_t *lengths, Py_ssize_t B, Py_ssize_t H,
                           Py_ssize_t steps) {
    Py_ssize_t *order = malloc(sizeof(Py_ssize_t) * (size_t)(2 * B)), *starts = order + B;
    if (order == NULL)
        return NULL;
    Py_ssize_t start = 0;
    for (Py_ssize_t b = 0; b < B; b++) {
        order[b] = b;
        starts[b] = start;
        start += (Py_ssize_t)lengths[b];
    }
    sort_lengths = lengths; /* under the GIL: no other call sorts at the same time */
    qsort(order, (size_t)B, sizeof(Py_ssize_t), by_length);
    for (int d = 0; d < 2; d++) {
        jobs[d].lengths = lengths;
        jobs[d].order = order;
        jobs[d].starts = starts;
        jobs[d].B = B;
        jobs[d].H = H;
        jobs[d].steps = steps;
        jobs[d].direction = d;
        jobs[d].status = 0;
        jobs[d].keep = 1;
        jobs[d].own_thread = 0;
    }
    return order;
}

/* Runs both jobs without the GIL, then frees the order and releases the buffers. */
static PyObject *finish(Job *jobs, Py_ssize_t *order, int threads, Py_buffer *buffers,
                        int count) {
    int status;
    Py_BEGIN_ALLOW_THREADS;
    status = run_both(jobs, threads < 1 ? 1 : threads > 2 ? 2 : threads);
    Py_END_ALLOW_THREADS;
    free(order);
    return release(buffers, count, status == 0 ? Py_NewRef(Py_None) : PyErr_NoMemory());
}

static PyObject *forward(PyObject *self, PyObject *args) {
    enum { GATES, CELLS, STATES, LENGTHS, WEIGHTS, COUNT };
    Py_buffer in[COUNT];
    Py_ssize_t B, H, steps;
    int threads, keep = 1, own_thread = 0;
    (void)self;
    if (!PyArg_ParseTuple(args, "w*w*w*y*y*nni|pp", &in[GATES], &in[CELLS], &in[STATES],
                          &in[LENGTHS], &in[WEIGHTS], &B, &H, &threads, &keep, &own_thread))
        return NULL;
    const Py_ssize_t N = check_lengths(&in[LENGTHS], B, &steps);
    const Py_ssize_t itemsize = N > 0 && H > 0 ? in[GATES].len / (N * 8 * H) : 0;
    if (N < 0 || (itemsize != 4 && itemsize != 8) ||
        check_size(&in[GATES], N * 8 * H, itemsize, "gates") ||
        check_size(&in[CELLS], N * 2 * H, itemsize, "cells") ||
        check_size(&in[STATES], N * 2 * H, itemsize, "states") ||
        check_size(&in[WEIGHTS], 2 * H * 4 * H, itemsize, "weights_hh_t")) {
        if (N >= 0 && !PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "expected float32 or float64 (N, 2, 4H) gates");
        return release(in, COUNT, NULL);
    }
    Job jobs[2];
    Py_ssize_t *order = prepare(jobs, in[LENGTHS].buf, B, H, steps);
    if (order == NULL)
        return release(in, COUNT, PyErr_NoMemory());
    for (int d = 0; d < 2; d++) {
        jobs[d].in = jobs[d].gates = in[GATES].buf;
        jobs[d].cells = in[CELLS].buf;
        jobs[d].states = in[STATES].buf;
        jobs[d].weights = (const char *)in[WEIGHTS].buf + d * H * 4 * H * itemsize;
        jobs[d].loop = itemsize == 4 ? path->forward_float : path->forward_double;
        jobs[d].keep = keep;
        jobs[d].own_thread = own_thread;
    }
    return finish(jobs, order, threads, in, COUNT);
}

static PyObject *backward(PyObject *self, PyObject *args) {
    enum { GRAD_STATES, GATES, CELLS, STATES, WEIGHTS, LENGTHS, GRAD_GATES, PREVIOUS, COUNT };
    Py_buffer in[COUNT];
    Py_ssize_t B, H, steps;
    int threads;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*w*w*nni", &in[GRAD_STATES], &in[GATES], &in[CELLS],
                          &in[STATES], &in[WEIGHTS], &in[LENGTHS], &in[GRAD_GATES],
                          &in[PREVIOUS], &B, &H, &threads))
        return NULL;
    const Py_ssize_t N = check_lengths(&in[LENGTHS], B, &steps);
    const Py_ssize_t itemsize = N > 0 && H > 0 ? in[GATES].len / (N * 8 * H) : 0;
    if (N < 0 || (itemsize != 4 && itemsize != 8) ||
        check_size(&in[GRAD_STATES], N * 2 * H, itemsize, "grad_states") ||
        check_size(&in[GATES], N * 8 * H, itemsize, "gates") ||
        check_size(&in[CELLS], N * 2 * H, itemsize, "cells") ||
        check_size(&in[STATES], N * 2 * H, itemsize, "states") ||
        check_size(&in[WEIGHTS], 2 * 4 * H * H, itemsize, "weights_hh") ||
        check_size(&in[GRAD_GATES], N * 8 * H, itemsize, "grad_gates") ||
        check_size(&in[PREVIOUS], N * 2 * H, itemsize, "previous")) {
        if (N >= 0 && !PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "expected float32 or float64 (N, 2, 4H) gates");
        return release(in, COUNT, NULL);
    }
    Job jobs[2];
    Py_ssize_t *order = prepare(jobs, in[LENGTHS].buf, B, H, steps);
    if (order == NULL)
        return release(in, COUNT, PyErr_NoMemory());
    for (int d = 0; d < 2; d++) {
        jobs[d].in = in[GRAD_STATES].buf;
        jobs[d].gates = in[GATES].buf;
        jobs[d].cells = in[CELLS].buf;
        jobs[d].states = in[STATES].buf;
        jobs[d].grad_gates = in[GRAD_GATES].buf;
        jobs[d].previous = in[PREVIOUS].buf;
        jobs[d].weights = (const char *)in[WEIGHTS].buf + d * 4 * H * H * itemsize;
        jobs[d].loop = itemsize == 4 ? path->backward_float : path->backward_double;
    }
    return finish(jobs, order, threads, in, COUNT);
}

/* pool([name]): which threads the second direction takes, "partner" or "openmp"; given a name,
   that one from then on. */
static PyObject *pool(PyObject *self, PyObject *args) {
    const char *name = NULL;
    (void)self;
    if (!PyArg_ParseTuple(args, "|s", &name))
        return NULL;
#ifdef HAVE_PTHREADS
    if (name != NULL && strcmp(name, "partner") != 0 && strcmp(name, "openmp") != 0)
        return PyErr_Format(PyExc_ValueError, "no pool %s: partner or openmp", name);
    if (name != NULL)
        use_partner = strcmp(name, "partner") == 0;
    return PyUnicode_FromString(use_partner ? "partner" : "openmp");
#else
    if (name != NULL && strcmp(name, "openmp") != 0)
        return PyErr_Format(PyExc_ValueError, "no pool %s here: openmp only", name);
    return PyUnicode_FromString("openmp");
#endif
}

/* The names of the paths this CPU runs, from the baseline up. */
static PyObject *available(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    PyObject *names = PyList_New(0);
    for (int index = 0; names != NULL && index < PATH_COUNT; index++) {
        if (!cpu_runs(index))
            continue;
        PyObject *name = PyUnicode_FromString(paths[index].name);
        if (name == NULL || PyList_Append(names, name) < 0)
            Py_CLEAR(names);
        Py_XDECREF(name);
    }
    return names;
}

/* use([name]): the path the loops take; given a name, they take that one from then on. */
static PyObject *use(PyObject *self, PyObject *args) {
    const char *name = NULL;
    (void)self;
    if (!PyArg_ParseTuple(args, "|s", &name))
        return NULL;
    if (name != NULL) {
        const int index = find_path(name);
        if (index < 0)
            return PyErr_Format(PyExc_ValueError, "no instruction-set path %s on this CPU", name);
        path = &paths[index];
    }
    return PyUnicode_FromString(path->name);
}

static PyMethodDef methods[] = {
    {"forward", forward, METH_VARARGS,
     "forward(gates, cells, states, lengths, weights_hh_t, B, H, threads, keep=True, "
     "own_thread=False): both directions' loops, on up to two threads (the second one the "
     "partner, else OpenMP's pool, or with own_thread one started for the call); states "
     "written, and with "
     "keep the gates activated in place and the cells written."},
    {"pool", pool, METH_VARARGS,
     "pool([name]): the threads the second direction takes, 'partner' (the module's own thread, "
     "which spins only while the machine has a core to spare) or 'openmp'; given a name, that "
     "one."},
    {"available", available, METH_NOARGS,
     "available(): the instruction-set paths this CPU runs, from the baseline up."},
    {"use", use, METH_VARARGS,
     "use([name]): the instruction-set path the loops take; given a name, take that one."},
    {"backward", backward, METH_VARARGS,
     "backward(grad_states, gates, cells, states, weights_hh, lengths, grad_gates, previous, B, "
     "H, threads): the gradient of every gate pre-activation, and each position's previous "
     "state."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_lstm", "Compiled CPU BiLSTM time loops (crftag/runtime/_lstm.c).", -1,
    methods,
};

/* The best path this CPU runs, or the one CRFTAG_ISA names; a name this CPU does not run is
   reported and the best one taken. CRFTAG_LOOP_POOL=openmp: the second direction on OpenMP's
   pool rather than the partner (the reference benchmarks/contention.py measures against). */
PyMODINIT_FUNC PyInit__lstm(void) {
    for (int index = 0; index < PATH_COUNT; index++)
        if (cpu_runs(index))
            path = &paths[index];
    const char *wanted = getenv("CRFTAG_ISA");
    if (wanted != NULL && *wanted != '\0') {
        const int index = find_path(wanted);
        if (index >= 0)
            path = &paths[index];
        else
            PySys_FormatStderr("crftag: warning: CRFTAG_ISA=%s is not an instruction-set path "
                               "of this CPU; taking %s\n", wanted, path->name);
    }
#ifdef HAVE_PTHREADS
    const char *pool_name = getenv("CRFTAG_LOOP_POOL");
    if (pool_name != NULL && strcmp(pool_name, "openmp") == 0)
        use_partner = 0;
#endif
    return PyModule_Create(&module);
}
