// One 3x3 convolution layer on one core, written by hand in IREE's data-tiled layout.
//
// The question: is IREE 3.13's register blocking for a data-tiled 3x3 convolution (a vector tile
// of 16 output columns x 16 output channels, the input channel blocks, kh and kw reduced around
// it) what keeps it at ~2/3 of this CPU's FMA peak? This program runs the same layer as
// bench/conv_chain.py's 28x28x128 chain, in IREE's packed layouts:
//   input  [C/16][H+2][W+2][16]   (padded, channel blocks of 16)
//   filter [F/16][C/16][3][3][16c][16f]
//   output [F/16][H][W][16]        (bias-free, then ReLU)
// with IREE's blocking (16 + 12 columns x 1 block, the tile loop over blocks, rows, column tiles)
// and with onnxruntime-like blockings (2-4 output-channel blocks sharing each input broadcast),
// all with AVX-512 intrinsics compiled by gcc. It checks each against a scalar reference and
// prints the best time of many runs (this VM's speed moves a lot), weights hot in cache and
// weights cycling through 8 layers' worth.
//
//     gcc -O3 -march=native bench/conv_kernel.c -o /tmp/conv_kernel && /tmp/conv_kernel
//
// Needs an x86-64 CPU with AVX-512F. Figures and what they say: docs/performance.md, "One layer shape at a time".
#include <immintrin.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CB 8  // input channel blocks (128 channels)
#define OB 8  // output channel blocks (128 channels)
#define H 28
#define W 28
#define HP (H + 2)
#define WP (W + 2)
#define LAYERS 8

static float *IN, *FW, *OUT;
#define INP(cb, h, w) (IN + (((long)(cb) * HP + (h)) * WP + (w)) * 16)
#define FIL(ob, cb, kh, kw) (FW + ((((long)(ob) * CB + (cb)) * 3 + (kh)) * 3 + (kw)) * 256)
#define OUTP(ob, h, w) (OUT + (((long)(ob) * H + (h)) * W + (w)) * 16)

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

// NB output-channel blocks x NC columns of accumulators; each input value is broadcast once and
// used by NB filter vectors. NB = 1, NC = 16 is IREE 3.13's vector tile.
#define TILE(NB, NC)                                                                         \
  static inline void tile_##NB##_##NC(int ob, int oh, int ow) {                             \
    __m512 a[NC][NB];                                                                        \
    for (int i = 0; i < NC; i++)                                                             \
      for (int j = 0; j < NB; j++) a[i][j] = _mm512_setzero_ps();                            \
    for (int cb = 0; cb < CB; cb++)                                                          \
      for (int kh = 0; kh < 3; kh++)                                                         \
        for (int kw = 0; kw < 3; kw++) {                                                     \
          const float* p = INP(cb, oh + kh, ow + kw);                                        \
          const float* f[NB];                                                                \
          for (int j = 0; j < NB; j++) f[j] = FIL(ob + j, cb, kh, kw);                       \
          for (int c = 0; c < 16; c++) {                                                     \
            __m512 v[NB];                                                                    \
            for (int j = 0; j < NB; j++) v[j] = _mm512_load_ps(f[j] + c * 16);               \
            _Pragma("GCC unroll 16") for (int i = 0; i < NC; i++) {                          \
              __m512 b = _mm512_set1_ps(p[i * 16 + c]);                                      \
              _Pragma("GCC unroll 4") for (int j = 0; j < NB; j++)                           \
                  a[i][j] = _mm512_fmadd_ps(b, v[j], a[i][j]);                               \
            }                                                                                \
          }                                                                                  \
        }                                                                                    \
    for (int i = 0; i < NC; i++)                                                             \
      for (int j = 0; j < NB; j++)                                                           \
        _mm512_store_ps(OUTP(ob + j, oh, ow + i), _mm512_max_ps(a[i][j], _mm512_setzero_ps())); \
  }
TILE(1, 16)
TILE(1, 12)
TILE(2, 14)
TILE(2, 7)
TILE(4, 7)

static void conv_iree(void) {  // 28 columns = a 16-column tile and a 12-column tile
  for (int ob = 0; ob < OB; ob++)
    for (int oh = 0; oh < H; oh++) {
      tile_1_16(ob, oh, 0);
      tile_1_12(ob, oh, 16);
    }
}
#define CONV(NB, NC)                                        \
  static void conv_##NB##_##NC(void) {                      \
    for (int ob = 0; ob < OB; ob += NB)                     \
      for (int oh = 0; oh < H; oh++)                        \
        for (int ow = 0; ow < W; ow += NC) tile_##NB##_##NC(ob, oh, ow); \
  }
CONV(2, 14)
CONV(2, 7)
CONV(4, 7)

static float reference(int f, int oh, int ow) {
  double s = 0;
  for (int c = 0; c < CB * 16; c++)
    for (int kh = 0; kh < 3; kh++)
      for (int kw = 0; kw < 3; kw++)
        s += (double)INP(c / 16, oh + kh, ow + kw)[c % 16] * FIL(f / 16, c / 16, kh, kw)[(c % 16) * 16 + f % 16];
  return s > 0 ? (float)s : 0.0f;
}

int main(void) {
  IN = aligned_alloc(64, (long)CB * HP * WP * 16 * 4);
  OUT = aligned_alloc(64, (long)OB * H * W * 16 * 4);
  float* weights = aligned_alloc(64, (long)LAYERS * OB * CB * 9 * 256 * 4);
  srand(1);
  for (long i = 0; i < (long)CB * HP * WP * 16; i++) IN[i] = rand() / (float)RAND_MAX;
  for (long i = 0; i < (long)LAYERS * OB * CB * 9 * 256; i++) weights[i] = rand() / (float)RAND_MAX - 0.5f;
  const double flop = 2.0 * H * W * (OB * 16) * (CB * 16) * 9;
  void (*fns[4])(void) = {conv_iree, conv_2_14, conv_2_7, conv_4_7};
  const char* names[4] = {"1 block x 16+12 columns (IREE 3.13's)", "2 blocks x 14 columns",
                          "2 blocks x 7 columns", "4 blocks x 7 columns"};
  FW = weights;
  for (int k = 0; k < 4; k++) {  // correctness: every output of layer 0 against the reference
    fns[k]();
    double err = 0;
    for (int f = 0; f < OB * 16; f++)
      for (int oh = 0; oh < H; oh++)
        for (int ow = 0; ow < W; ow++)
          err = fmax(err, fabs(OUTP(f / 16, oh, ow)[f % 16] - reference(f, oh, ow)));
    if (err > 1e-2) {
      printf("%s: max abs error %g against the reference\n", names[k], err);
      return 1;
    }
  }
  printf("28x28x128 -> 128, 3x3, one thread; best of many runs, ms a layer and GFLOP/s\n");
  printf("| blocking | weights hot | weights of %d layers cycling |\n|---|---:|---:|\n", LAYERS);
  for (int k = 0; k < 4; k++) {
    double hot = 1e9, cold = 1e9;
    for (int r = 0; r < 15; r++) {
      FW = weights;
      fns[k]();
      double t0 = now();
      for (int n = 0; n < 8; n++) fns[k]();
      double t = (now() - t0) / 8;
      if (t < hot) hot = t;
      t0 = now();
      for (int l = 0; l < LAYERS; l++) {
        FW = weights + (long)l * OB * CB * 9 * 256;
        fns[k]();
      }
      t = (now() - t0) / LAYERS;
      if (t < cold) cold = t;
    }
    printf("| %s | %.3f (%.0f) | %.3f (%.0f) |\n", names[k], hot * 1e3, flop / hot / 1e9,
           cold * 1e3, flop / cold / 1e9);
  }
  return 0;
}
