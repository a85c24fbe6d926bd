/* SPDX-License-Identifier: BSD-3-Clause */
/* User-defined objectives in C^H (engine/expression.c): values against the
 * same formulas written in C, gradients against closed forms and central
 * finite differences, operator precedence, and the messages of bad
 * formulas (the position they name). */
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "voxfe/expression.h"

static vox_context *ctx;

/* A symmetric positive definite C^H with distinct entries, so that a
 * derivative put on the wrong entry shows. */
static void sample_ch(double ch[36]) {
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 6; j++)
      ch[6 * i + j] = i == j ? 1.0 + 0.1 * i : 0.05 + 0.01 * (i + 1) * (j + 1);
  ch[6 * 0 + 1] = 0.31, ch[6 * 1 + 0] = 0.31; /* C12 */
  ch[6 * 0 + 2] = 0.27, ch[6 * 2 + 0] = 0.27; /* C13 */
  ch[6 * 1 + 2] = 0.23, ch[6 * 2 + 1] = 0.23; /* C23 */
}

static double eval(const char *text, const double ch[36], int iteration, double grad[36]) {
  vox_expression *e = NULL;
  double v = NAN;
  CHECK_OK(ctx, vox_expression_parse(ctx, text, &e));
  if (e) CHECK_OK(ctx, vox_expression_evaluate(ctx, e, ch, iteration, &v, grad));
  vox_expression_free(e);
  return v;
}

#define C(i, j) ch[6 * ((i)-1) + ((j)-1)]

/* Zhang et al. 2023 eq. 19 and 20: values and their constant gradients. */
static void test_bulk_and_shear(void) {
  double ch[36], g[36];
  sample_ch(ch);
  double v = eval("-(C11 + C22 + C33 + 2*(C12 + C13 + C23)) / 9", ch, 1, g);
  CHECK_CLOSE(v, -(C(1, 1) + C(2, 2) + C(3, 3) + 2 * (C(1, 2) + C(1, 3) + C(2, 3))) / 9, 1e-15);
  for (int k = 0; k < 36; k++) {
    const int i = k / 6 + 1, j = k % 6 + 1;
    const double want = i == j && i <= 3 ? -1.0 / 9 : i < j && j <= 3 ? -2.0 / 9 : 0;
    CHECK_CLOSE(g[k], want, 1e-15);
  }
  v = eval("-(C44 + C55 + C66) / 3", ch, 1, g);
  CHECK_CLOSE(v, -(C(4, 4) + C(5, 5) + C(6, 6)) / 3, 1e-15);
  for (int k = 0; k < 36; k++)
    CHECK_CLOSE(g[k], (k == 21 || k == 28 || k == 35) ? -1.0 / 3 : 0, 1e-15);
  /* lower case and the lower triangle name their own entries */
  v = eval("c21 + 3*C12", ch, 1, g);
  CHECK_CLOSE(v, 4 * C(1, 2), 1e-15);
  CHECK_CLOSE(g[6], 1, 0);
  CHECK_CLOSE(g[1], 3, 0);
}

/* Zhang et al. 2023 eq. 21 (with beta^iter) and eq. 22, against the formulas in C
 * and their gradients against central differences. */
static void check_against_differences(const char *text, const double ch0[36], int iteration) {
  double ch[36], g[36];
  memcpy(ch, ch0, sizeof ch);
  vox_expression *e = NULL;
  CHECK_OK(ctx, vox_expression_parse(ctx, text, &e));
  if (!e) return;
  double v;
  CHECK_OK(ctx, vox_expression_evaluate(ctx, e, ch, iteration, &v, g));
  for (int k = 0; k < 36; k++) {
    const double h = 1e-6 * (fabs(ch0[k]) > 1 ? fabs(ch0[k]) : 1);
    double vp, vm;
    ch[k] = ch0[k] + h;
    CHECK_OK(ctx, vox_expression_evaluate(ctx, e, ch, iteration, &vp, NULL));
    ch[k] = ch0[k] - h;
    CHECK_OK(ctx, vox_expression_evaluate(ctx, e, ch, iteration, &vm, NULL));
    ch[k] = ch0[k];
    const double fd = (vp - vm) / (2 * h);
    if (!(fabs(g[k] - fd) <= 1e-7 * (1 + fabs(fd)))) {
      fprintf(stderr, "%s: d/dC%d%d = %.12g, finite difference %.12g\n", text, k / 6 + 1,
              k % 6 + 1, g[k], fd);
      check_failures++;
    }
  }
  vox_expression_free(e);
}

static void test_poisson_objectives(void) {
  double ch[36], g[36];
  sample_ch(ch);
  const char *eq21 = "C12 + C13 + C23 - 0.8^iter * (C11 + C22 + C33)";
  double v = eval(eq21, ch, 3, g);
  CHECK_CLOSE(v, C(1, 2) + C(1, 3) + C(2, 3) - pow(0.8, 3) * (C(1, 1) + C(2, 2) + C(3, 3)),
              1e-15);
  CHECK_CLOSE(g[0], -pow(0.8, 3), 1e-15);
  const char *eq22 = "log(1 + 0.6*(C12 + C23 + C31)/(C11 + C22 + C33)) - (C11 + C22 + C33)^0.5";
  v = eval(eq22, ch, 1, g);
  const double tr = C(1, 1) + C(2, 2) + C(3, 3), off = C(1, 2) + C(2, 3) + C(3, 1);
  CHECK_CLOSE(v, log(1 + 0.6 * off / tr) - sqrt(tr), 1e-14);
  /* closed form: d/dC12 = 0.6 / tr / (1 + 0.6 off / tr) */
  CHECK_CLOSE(g[1], 0.6 / tr / (1 + 0.6 * off / tr), 1e-14);
  CHECK_CLOSE(g[6 * 2 + 0], 0.6 / tr / (1 + 0.6 * off / tr), 1e-14); /* C31 */
  CHECK_CLOSE(g[6 * 0 + 2], 0, 0);                                    /* C13 is not named */
  check_against_differences(eq21, ch, 4);
  check_against_differences(eq22, ch, 1);
}

/* Every function and operator, with derivatives through every argument. */
static void test_functions(void) {
  double ch[36];
  sample_ch(ch);
  const char *formulas[] = {
      "sqrt(C11*C22 - C12^2)",
      "exp(-C44) * sin(C55) + cos(C66 / C11)",
      "abs(C12 - C13) + abs(C13 - C12)",
      "min(C11, C22) * max(C44, C55) - min(C23, 2*C23)",
      "pow(C11, C22) + C33^C44 + C12^3 + (C14 - 1)^2",
      "C11 / (C22 - C12) / C33 - -C44 + +C55",
      "log(C11) * pi + iter * C66",
  };
  for (size_t i = 0; i < sizeof formulas / sizeof *formulas; i++)
    check_against_differences(formulas[i], ch, 2);
  CHECK_CLOSE(eval("sqrt(C11*C22 - C12^2)", ch, 1, NULL),
              sqrt(C(1, 1) * C(2, 2) - C(1, 2) * C(1, 2)), 1e-15);
  CHECK_CLOSE(eval("min(C11, C22) * max(C44, C55)", ch, 1, NULL), C(1, 1) * C(5, 5), 1e-15);
  CHECK_CLOSE(eval("pow(C11, C22)", ch, 1, NULL), pow(C(1, 1), C(2, 2)), 1e-15);
}

/* Precedence and associativity, on constants. */
static void test_precedence(void) {
  double ch[36] = {0};
  struct {
    const char *text;
    double value;
  } cases[] = {
      {"-2^2", -4},        {"2^3^2", 512},      {"2^-1", 0.5},   {"1 - 2 - 3", -4},
      {"8 / 4 / 2", 1},    {"2 + 3 * 4", 14},   {"(2 + 3) * 4", 20}, {"-(-3)", 3},
      {"1.5e2 + .5", 150.5}, {"2E-1", 0.2},     {"  7  ", 7},    {"iter^2", 9},
      {"min(3, max(1, 2))", 2}, {"abs(-2.5)", 2.5}, {"exp(log(5))", 5}, {"cos(pi)", -1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    CHECK_CLOSE(eval(cases[i].text, ch, 3, NULL), cases[i].value, 1e-14);
}

/* Bad formulas fail with one line naming the character where they go wrong. */
static void test_bad_expressions(void) {
  struct {
    const char *text;
    const char *message; /* a part of the message */
  } cases[] = {
      {"", "at character 1: the expression is empty"},
      {"   ", "at character 4: the expression is empty"},
      {"C11 +", "at character 6: expected a number, a name or '(', got the end"},
      {"C11 + * 2", "at character 7: expected a number, a name or '(', got '*'"},
      {"C71 + 1", "at character 1: unknown name 'C71'"},
      {"C1 + 1", "at character 1: unknown name 'C1'"},
      {"2 * beta", "at character 5: unknown name 'beta'"},
      {"foo(1)", "at character 1: unknown function 'foo'"},
      {"min(1)", "at character 6: min takes 2 arguments: expected ',', got ')'"},
      {"sqrt(1, 2)", "at character 7: sqrt takes 1 argument: expected ')', got ','"},
      {"(C11 + C22", "at character 11: expected ')' to close the '(' at character 1, got the end"},
      {"C11)", "at character 4: unexpected ')' after a complete expression"},
      {"1 2", "at character 3: unexpected '2'"},
      {"1e", "at character 2: unexpected 'e'"},
      {"sqrt C11", "at character 1: unknown name 'sqrt'"},
      {"C11 $ 2", "at character 5: unexpected '$'"},
      {"1e999", "at character 1: the number '1e999' is out of range"},
      {"inf", "unknown name 'inf'"},
      {"C11 # x", "at character 5"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    vox_expression *e = (vox_expression *)1;
    vox_status st = vox_expression_parse(ctx, cases[i].text, &e);
    CHECK(st == VOX_ERR_INVALID_ARGUMENT);
    CHECK(e == NULL);
    const char *m = vox_context_message(ctx);
    if (!strstr(m, cases[i].message) || strchr(m, '\n')) {
      fprintf(stderr, "\"%s\": message '%s' lacks '%s'\n", cases[i].text, m, cases[i].message);
      check_failures++;
    }
  }
  /* nesting is bounded (no stack overflow on a runaway formula) */
  char deep[1002];
  memset(deep, '(', 1000);
  deep[1000] = '1', deep[1001] = 0;
  vox_expression *e = NULL;
  CHECK(vox_expression_parse(ctx, deep, &e) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(strstr(vox_context_message(ctx), "nested more than") != NULL);
  char minus[1002];
  memset(minus, '-', 1000);
  minus[1000] = '1', minus[1001] = 0;
  CHECK(vox_expression_parse(ctx, minus, &e) == VOX_ERR_INVALID_ARGUMENT);
  /* a long but flat formula is fine: 1+1+...+1 */
  char *flat = malloc(4001);
  for (int i = 0; i < 2000; i++) flat[2 * i] = '1', flat[2 * i + 1] = '+';
  flat[3999] = 0;
  double ch[36] = {0};
  CHECK_CLOSE(eval(flat, ch, 1, NULL), 2000, 0);
  free(flat);
  char control[] = "C11 +\x01 2";
  CHECK(vox_expression_parse(ctx, control, &e) == VOX_ERR_INVALID_ARGUMENT);
}

/* Values or derivatives that are not finite fail at evaluation, naming the
 * operation. */
static void test_domain_errors(void) {
  double ch[36];
  sample_ch(ch);
  struct {
    const char *text;
    const char *message;
  } cases[] = {
      {"log(C12 - C21)", "log at character 1"},
      {"C11 / (C12 - C21)", "'/' at character 5"},
      {"sqrt(C12 - C21)", "sqrt at character 1"},
      {"(C12 - C11)^C22", "'^' at character 12"},
      {"exp(1000 * C11)", "exp at character 1"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    vox_expression *e = NULL;
    CHECK_OK(ctx, vox_expression_parse(ctx, cases[i].text, &e));
    double v, g[36];
    CHECK(vox_expression_evaluate(ctx, e, ch, 1, &v, g) == VOX_ERR_INVALID_ARGUMENT);
    if (!strstr(vox_context_message(ctx), cases[i].message)) {
      fprintf(stderr, "\"%s\": message '%s' lacks '%s'\n", cases[i].text,
              vox_context_message(ctx), cases[i].message);
      check_failures++;
    }
    vox_expression_free(e);
  }
  /* sqrt(0) of a constant and integer powers of negative numbers are fine */
  CHECK_CLOSE(eval("sqrt(0) + (C12 - C11)^2", ch, 1, NULL), pow(C(1, 2) - C(1, 1), 2), 1e-15);
}

static void test_uses(void) {
  vox_expression *e = NULL;
  CHECK_OK(ctx, vox_expression_parse(ctx, "C12 + c66", &e));
  CHECK(vox_expression_uses(e, 1, 2) && vox_expression_uses(e, 6, 6));
  CHECK(!vox_expression_uses(e, 2, 1) && !vox_expression_uses(e, 7, 1));
  CHECK(strcmp(vox_expression_text(e), "C12 + c66") == 0);
  vox_expression_free(e);
}

int main(void) {
  if (vox_context_create(&ctx) != VOX_OK) return 1;
  test_bulk_and_shear();
  test_poisson_objectives();
  test_functions();
  test_precedence();
  test_bad_expressions();
  test_domain_errors();
  test_uses();
  vox_context_destroy(ctx);
  CHECK_DONE();
}
