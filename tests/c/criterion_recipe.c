/* The checking recipe of docs/linear.md ("Checking a product") as a consumer writes it with
 * the public header only: decode the weights (ninfer_decode_rows), take the activations as
 * the product multiplies them (ninfer_quantize_row_q8_1 for q8_1 products), sum in f64 and
 * apply linear_f32acc_v1; bf16 outputs go back to f32 with ninfer_convert. Data: real GGUF
 * rows of all-MiniLM-L6-v2 and 7 activation rows (tests/data/linear, made by
 * scripts/fixtures/linear_fixtures.py). The same check over x instead of x̂ must fail: that
 * is why the q8_1 quantizer is exported. Run from the repository root (or pass the data
 * directory as the first argument). */
#include "ninfer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;
static int checks = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    ++checks;                                                                  \
    if (!(cond)) {                                                             \
      ++failures;                                                              \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                          \
  } while (0)

static unsigned char *slurp(const char *dir, const char *name, size_t *len) {
  char path[512];
  FILE *f;
  unsigned char *buf;
  long n;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  f = fopen(path, "rb");
  if (f == NULL) {
    fprintf(stderr, "cannot open %s\n", path);
    return NULL;
  }
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  buf = (unsigned char *)malloc((size_t)n + 1);
  if (buf != NULL && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  *len = (size_t)n;
  return buf;
}

static double absd(double v) { return v < 0 ? -v : v; }

/* The largest |y − ref| / tol over all outputs, with v the activation values. */
static double worst_ratio(const float *w, const float *v, const float *y, const float *bias,
                          size_t n, size_t k, size_t m, int bf16) {
  double worst = 0;
  size_t i, j, kk;
  for (i = 0; i < m; ++i) {
    for (j = 0; j < n; ++j) {
      double ref = bias[j], s = absd(bias[j]), tol, err;
      for (kk = 0; kk < k; ++kk) {
        const double t = (double)w[j * k + kk] * (double)v[i * k + kk];
        ref += t;
        s += absd(t);
      }
      tol = (double)(k + 8) * 0x1p-23 * s + (double)(k + 8) * 0x1p-149;
      if (bf16) tol += 0x1p-8 * (absd(ref) + tol);
      err = absd((double)y[i * n + j] - ref);
      if (err / tol > worst) worst = err / tol;
    }
  }
  return worst;
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : "tests/data/linear";
  static const struct {
    const char *name;
    size_t n;
  } cases[] = {{"gguf_q8_0", 17}, {"gguf_q4_0", 17}, {"gguf_q6_k", 17}, {"gguf_iq4_nl", 9}};
  const size_t k = 768, m = 7;
  size_t xlen = 0, c;
  unsigned char *xb = slurp(dir, "real_x.f32", &xlen);
  float *x = (float *)malloc(m * k * sizeof(float));
  float *xhat = (float *)malloc(m * k * sizeof(float));
  CHECK(xb != NULL && x != NULL && xhat != NULL && xlen >= m * k * 4);
  if (xb == NULL || x == NULL || xhat == NULL || xlen < m * k * 4) goto done;
  memcpy(x, xb, m * k * sizeof(float)); /* little-endian f32, as on the test hosts */

  /* Step 2 (q8_1 profile): x̂ per activation row. */
  for (c = 0; c < m; ++c) {
    CHECK(ninfer_quantize_row_q8_1(x + c * k, k, NULL, 0, xhat + c * k, k) == NINFER_STATUS_OK);
  }

  for (c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
    char file[64];
    size_t wlen = 0, sizes[NINFER_MAX_PLANES], j;
    unsigned char *wb;
    uint32_t fmt = 0;
    ninfer_weight_view view;
    ninfer_linear *lin = NULL;
    const size_t n = cases[c].n;
    float *w = (float *)malloc(n * k * sizeof(float));
    float *y = (float *)malloc(m * n * sizeof(float));
    float *y32 = (float *)malloc(m * n * sizeof(float));
    float *bias = (float *)malloc(n * sizeof(float));
    uint16_t *ybf = (uint16_t *)malloc(m * n * sizeof(uint16_t));
    double q8_ratio, bf_ratio, exact_x_ratio;

    snprintf(file, sizeof file, "real_%s.w", cases[c].name);
    wb = slurp(dir, file, &wlen);
    CHECK(wb != NULL && w != NULL && y != NULL && y32 != NULL && bias != NULL && ybf != NULL);
    if (wb == NULL || w == NULL || y == NULL || y32 == NULL || bias == NULL || ybf == NULL) {
      free(wb), free(w), free(y), free(y32), free(bias), free(ybf);
      continue;
    }
    for (j = 0; j < n; ++j) bias[j] = ((float)j - 8.0f) * 0.03125f;
    CHECK(ninfer_format_lookup(cases[c].name, &fmt) == NINFER_STATUS_OK);
    CHECK(ninfer_layout_plane_sizes(fmt, NINFER_LAYOUT_GGUF_BLOCKS_V1, n, k, sizes,
                                    NINFER_MAX_PLANES) == NINFER_STATUS_OK);
    CHECK(sizes[0] == wlen);
    memset(&view, 0, sizeof view);
    view.format = fmt;
    view.layout = NINFER_LAYOUT_GGUF_BLOCKS_V1;
    view.rows = n;
    view.cols = k;
    view.planes[0].ptr = wb;
    view.planes[0].len = wlen;

    /* Step 1: the exactly decoded weights, in one call. */
    CHECK(ninfer_decode_rows(&view, 0, n, w, n * k * sizeof(float), NINFER_DTYPE_F32) ==
          NINFER_STATUS_OK);

    /* The product under test, f32 and bf16 outputs. */
    CHECK(ninfer_linear_prepare(&view, NINFER_DEVICE_CPU, &lin) == NINFER_STATUS_OK);
    CHECK(ninfer_linear_forward(lin, x, m * k * 4, NINFER_DTYPE_F32, m, k, bias, n, y,
                                m * n * 4, NINFER_DTYPE_F32) == NINFER_STATUS_OK);
    CHECK(ninfer_linear_forward(lin, x, m * k * 4, NINFER_DTYPE_F32, m, k, bias, n, ybf,
                                m * n * 2, NINFER_DTYPE_BF16) == NINFER_STATUS_OK);
    ninfer_linear_free(lin);
    /* Step 4: bf16 outputs back to f32. */
    CHECK(ninfer_convert(ybf, m * n * 2, NINFER_DTYPE_BF16, y32, m * n * 4, NINFER_DTYPE_F32) ==
          NINFER_STATUS_OK);

    /* Step 3: the criterion against x̂ holds; against x it does not. */
    q8_ratio = worst_ratio(w, xhat, y, bias, n, k, m, 0);
    bf_ratio = worst_ratio(w, xhat, y32, bias, n, k, m, 1);
    exact_x_ratio = worst_ratio(w, x, y, bias, n, k, m, 0);
    printf("%s: worst |y - ref| / tol = %.3g (x̂), %.3g (bf16, x̂), %.3g (x instead of x̂)\n",
           cases[c].name, q8_ratio, bf_ratio, exact_x_ratio);
    CHECK(q8_ratio <= 1.0);
    CHECK(bf_ratio <= 1.0);
    CHECK(exact_x_ratio > 1.0);
    free(wb), free(w), free(y), free(y32), free(bias), free(ybf);
  }

done:
  free(xb);
  free(x);
  free(xhat);
  printf("%d passed, %d failed\n", checks - failures, failures);
  return failures != 0;
}
