/* SPDX-License-Identifier: BSD-3-Clause */
/* Formulas in the entries of C^H (voxfe/expression.h): a recursive-descent
 * parser to a postfix program, and a stack machine that carries each
 * intermediate value with its 36 partial derivatives (forward-mode automatic
 * differentiation; 37 doubles per stack slot is nothing next to a finite
 * element solve, and forward mode needs no tape). */
#include "voxfe/expression.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Nesting beyond this is refused at parse time, which bounds the parser's
 * recursion (a user typo such as 10000 '(' must not overflow the stack). */
#define MAX_DEPTH 200

typedef enum op {
  OP_NUMBER, OP_ENTRY, OP_ITER, OP_NEG, OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_POW,
  OP_SQRT, OP_LOG, OP_EXP, OP_ABS, OP_SIN, OP_COS, OP_MIN, OP_MAX
} op;

typedef struct node {
  op op;
  int position;  /* 1-based character of the token, for messages */
  double number; /* OP_NUMBER */
  int entry;     /* OP_ENTRY: 0..35 */
} node;

struct vox_expression {
  char *text;
  node *program; /* postfix */
  int n, capacity;
  int max_stack;
  unsigned char uses[36];
};

/* ---- parser --------------------------------------------------------------- */

typedef struct parser {
  vox_context *ctx;
  const char *text;
  const char *at;
  int depth;
  vox_expression *e;
  vox_status status; /* the first failure; later calls do nothing */
  char quote[96];    /* the text as messages show it */
} parser;

/* The expression as a message quotes it: whole when short, else its start
 * (the position still says where the problem is). */
static void make_quote(const char *text, char *quote, size_t size) {
  const size_t len = strlen(text), keep = size - 8;
  if (len + 3 <= size)
    snprintf(quote, size, "\"%.*s\"", (int)len, text);
  else
    snprintf(quote, size, "\"%.*s...\"", (int)keep, text);
}

static int position(const parser *p, const char *at) { return (int)(at - p->text) + 1; }

/* The one message format for parse errors. */
#define PARSE_ERROR(p, where, fmt, ...)                                                     \
  do {                                                                                      \
    if ((p)->status == VOX_OK)                                                              \
      (p)->status = vox_error((p)->ctx, VOX_ERR_INVALID_ARGUMENT,                          \
                              "expression %s: at character %d: " fmt, (p)->quote,           \
                              position(p, where), __VA_ARGS__);                             \
  } while (0)

static void skip_space(parser *p) {
  while (isspace((unsigned char)*p->at)) p->at++;
}

static void emit(parser *p, op o, const char *where, double number, int entry) {
  if (p->status != VOX_OK) return;
  vox_expression *e = p->e;
  if (e->n == e->capacity) {
    int cap = e->capacity ? 2 * e->capacity : 16;
    node *grown = realloc(e->program, (size_t)cap * sizeof *grown);
    if (!grown) {
      p->status = vox_error(p->ctx, VOX_ERR_NO_MEMORY, "out of memory for an expression");
      return;
    }
    e->program = grown, e->capacity = cap;
  }
  e->program[e->n++] = (node){.op = o, .position = position(p, where), .number = number,
                              .entry = entry};
}

/* What comes at `at`, for "expected X, got Y" messages: one character or
 * "the end". */
typedef struct token_text {
  char s[8];
} token_text;
static token_text got(const char *at) {
  token_text t;
  if (*at)
    snprintf(t.s, sizeof t.s, "'%c'", *at);
  else
    snprintf(t.s, sizeof t.s, "the end");
  return t;
}

static void expression(parser *p);
static void unary(parser *p);

static const struct {
  const char *name;
  op op;
  int arity;
} functions[] = {
    {"sqrt", OP_SQRT, 1}, {"log", OP_LOG, 1}, {"exp", OP_EXP, 1}, {"abs", OP_ABS, 1},
    {"sin", OP_SIN, 1},   {"cos", OP_COS, 1}, {"min", OP_MIN, 2}, {"max", OP_MAX, 2},
    {"pow", OP_POW, 2},
};
#define N_FUNCTIONS (sizeof functions / sizeof functions[0])

/* A decimal number: digits [. digits] [e [+-] digits], or . digits. Written
 * out rather than left to strtod, which would also take "inf", "nan" and hex. */
static int scan_number(const char *s) {
  const char *q = s;
  int digits = 0;
  while (isdigit((unsigned char)*q)) q++, digits++;
  if (*q == '.') {
    q++;
    while (isdigit((unsigned char)*q)) q++, digits++;
  }
  if (!digits) return 0;
  if (*q == 'e' || *q == 'E') {
    const char *exp = q + 1;
    if (*exp == '+' || *exp == '-') exp++;
    if (isdigit((unsigned char)*exp)) {
      while (isdigit((unsigned char)*exp)) exp++;
      q = exp;
    }
  }
  return (int)(q - s);
}

static void function_call(parser *p, const char *name_at, size_t len) {
  size_t f = 0;
  while (f < N_FUNCTIONS && !(strlen(functions[f].name) == len &&
                              strncmp(functions[f].name, name_at, len) == 0))
    f++;
  if (f == N_FUNCTIONS) {
    PARSE_ERROR(p, name_at,
                "unknown function '%.*s'; the functions are sqrt, log, exp, abs, sin, cos, min, "
                "max and pow",
                (int)len, name_at);
    return;
  }
  p->at++; /* '(' */
  for (int a = 0; a < functions[f].arity; a++) {
    if (a > 0) {
      skip_space(p);
      if (*p->at != ',') {
        PARSE_ERROR(p, p->at, "%.*s takes %d arguments: expected ',', got %s", (int)len,
                    name_at, functions[f].arity, got(p->at).s);
        return;
      }
      p->at++;
    }
    expression(p);
    if (p->status != VOX_OK) return;
  }
  skip_space(p);
  if (*p->at != ')') {
    PARSE_ERROR(p, p->at, "%.*s takes %d argument%s: expected ')', got %s", (int)len, name_at,
                functions[f].arity, functions[f].arity > 1 ? "s" : "",
                got(p->at).s);
    return;
  }
  p->at++;
  emit(p, functions[f].op, name_at, 0, 0);
}

/* A name: C11..C66, iter, pi, or a function when '(' follows. */
static void name(parser *p) {
  const char *s = p->at;
  while (isalnum((unsigned char)*p->at) || *p->at == '_') p->at++;
  const size_t len = (size_t)(p->at - s);
  const char *after = p->at;
  skip_space(p);
  if (*p->at == '(') {
    function_call(p, s, len);
    return;
  }
  p->at = after;
  if (len == 3 && (s[0] == 'C' || s[0] == 'c') && s[1] >= '1' && s[1] <= '6' && s[2] >= '1' &&
      s[2] <= '6') {
    const int entry = 6 * (s[1] - '1') + (s[2] - '1');
    p->e->uses[entry] = 1;
    emit(p, OP_ENTRY, s, 0, entry);
  } else if (len == 4 && strncmp(s, "iter", 4) == 0) {
    emit(p, OP_ITER, s, 0, 0);
  } else if (len == 2 && strncmp(s, "pi", 2) == 0) {
    emit(p, OP_NUMBER, s, 3.14159265358979323846, 0);
  } else {
    PARSE_ERROR(p, s, "unknown name '%.*s'; expected C11 to C66 (Voigt: 1 xx, 2 yy, 3 zz, 4 xy, "
                      "5 yz, 6 zx), iter, pi or a function call",
                (int)len, s);
  }
}

static void primary(parser *p) {
  skip_space(p);
  const char *s = p->at;
  int len;
  if ((len = scan_number(s)) > 0) {
    char *end;
    const double v = strtod(s, &end);
    if (end != s + len || !isfinite(v)) {
      PARSE_ERROR(p, s, "the number '%.*s' is out of range", len, s);
      return;
    }
    p->at += len;
    emit(p, OP_NUMBER, s, v, 0);
  } else if (isalpha((unsigned char)*s) || *s == '_') {
    name(p);
  } else if (*s == '(') {
    p->at++;
    expression(p);
    if (p->status != VOX_OK) return;
    skip_space(p);
    if (*p->at != ')') {
      PARSE_ERROR(p, p->at, "expected ')' to close the '(' at character %d, got %s",
                  position(p, s), got(p->at).s);
      return;
    }
    p->at++;
  } else {
    PARSE_ERROR(p, s, "expected a number, a name or '(', got %s", got(s).s);
  }
}

/* primary [^ unary]: right-associative, and the exponent may carry a sign
 * (2^-1). */
static void power(parser *p) {
  primary(p);
  skip_space(p);
  if (p->status == VOX_OK && *p->at == '^') {
    const char *s = p->at++;
    unary(p);
    emit(p, OP_POW, s, 0, 0);
  }
}

static void unary(parser *p) {
  skip_space(p);
  if (++p->depth > MAX_DEPTH) {
    PARSE_ERROR(p, p->at, "nested more than %d deep", MAX_DEPTH);
    return;
  }
  const char *s = p->at;
  if (*s == '-' || *s == '+') {
    p->at++;
    unary(p);
    if (*s == '-') emit(p, OP_NEG, s, 0, 0);
  } else {
    power(p);
  }
  p->depth--;
}

static void term(parser *p) {
  unary(p);
  for (;;) {
    skip_space(p);
    const char *s = p->at;
    if (p->status != VOX_OK || (*s != '*' && *s != '/')) return;
    p->at++;
    unary(p);
    emit(p, *s == '*' ? OP_MUL : OP_DIV, s, 0, 0);
  }
}

static void expression(parser *p) {
  if (++p->depth > MAX_DEPTH) {
    PARSE_ERROR(p, p->at, "nested more than %d deep", MAX_DEPTH);
    return;
  }
  term(p);
  for (;;) {
    skip_space(p);
    const char *s = p->at;
    if (p->status != VOX_OK || (*s != '+' && *s != '-')) break;
    p->at++;
    term(p);
    emit(p, *s == '+' ? OP_ADD : OP_SUB, s, 0, 0);
  }
  p->depth--;
}

/* The deepest the evaluation stack gets: +1 per operand, -(arity-1) per
 * operation. */
static int stack_depth(const vox_expression *e) {
  int depth = 0, max = 0;
  for (int i = 0; i < e->n; i++) {
    switch (e->program[i].op) {
      case OP_NUMBER: case OP_ENTRY: case OP_ITER: depth++; break;
      case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_POW: case OP_MIN:
      case OP_MAX: depth--; break;
      default: break;
    }
    if (depth > max) max = depth;
  }
  return max;
}

void vox_expression_free(vox_expression *e) {
  if (!e) return;
  free(e->text);
  free(e->program);
  free(e);
}

vox_status vox_expression_parse(vox_context *ctx, const char *text, vox_expression **out) {
  *out = NULL;
  if (!text) return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "no expression given");
  const size_t len = strlen(text);
  if (len > VOX_EXPRESSION_MAX_LENGTH)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "expression of %zu characters; at most %d are supported", len,
                     VOX_EXPRESSION_MAX_LENGTH);
  for (size_t i = 0; i < len; i++)
    if (!isprint((unsigned char)text[i]) && !isspace((unsigned char)text[i]))
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                       "expression: at character %zu: a control or non-ASCII character", i + 1);
  vox_expression *e = calloc(1, sizeof *e);
  if (!e || !(e->text = malloc(len + 1))) {
    free(e);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory for an expression");
  }
  memcpy(e->text, text, len + 1);
  parser p = {.ctx = ctx, .text = e->text, .at = e->text, .e = e};
  make_quote(e->text, p.quote, sizeof p.quote);
  skip_space(&p);
  if (!*p.at)
    PARSE_ERROR(&p, p.at, "%s", "the expression is empty");
  else
    expression(&p);
  skip_space(&p);
  if (p.status == VOX_OK && *p.at)
    PARSE_ERROR(&p, p.at, "unexpected '%.1s' after a complete expression", p.at);
  if (p.status != VOX_OK) {
    vox_expression_free(e);
    return p.status;
  }
  e->max_stack = stack_depth(e);
  *out = e;
  return VOX_OK;
}

const char *vox_expression_text(const vox_expression *e) { return e->text; }

int vox_expression_uses(const vox_expression *e, int i, int j) {
  if (i < 1 || i > 6 || j < 1 || j > 6) return 0;
  return e->uses[6 * (i - 1) + (j - 1)];
}

/* ---- evaluation ----------------------------------------------------------- */

/* A value and its 36 partial derivatives. */
typedef struct dual {
  double v;
  double d[36];
} dual;

static const char *op_name(op o) {
  static const char *const names[] = {"a number", "an entry", "iter", "'-'",  "'+'",
                                      "'-'",      "'*'",      "'/'",  "'^'",  "sqrt",
                                      "log",      "exp",      "abs",  "sin",  "cos",
                                      "min",      "max"};
  return names[o];
}

/* y = f(x) with y' = f'(x) x' */
static void chain(dual *x, double fx, double dfx) {
  for (int k = 0; k < 36; k++) x->d[k] *= dfx;
  x->v = fx;
}

static int finite_dual(const dual *x) {
  if (!isfinite(x->v)) return 0;
  for (int k = 0; k < 36; k++)
    if (!isfinite(x->d[k])) return 0;
  return 1;
}

/* a = a ^ b. With b constant (no derivative), b a^(b-1) a' needs no log, so
 * negative bases with integer exponents work; otherwise
 * a^b (b' ln a + b a' / a). */
static void power_dual(dual *a, const dual *b) {
  int b_varies = 0;
  for (int k = 0; k < 36; k++) b_varies |= b->d[k] != 0;
  const double value = pow(a->v, b->v);
  if (!b_varies) {
    /* 0^0 style corners: the derivative of a^b at a = 0 is 0 for b > 1 */
    const double da = b->v == 0 ? 0 : b->v * pow(a->v, b->v - 1);
    chain(a, value, da);
    return;
  }
  const double log_a = log(a->v);
  for (int k = 0; k < 36; k++)
    a->d[k] = value * (b->d[k] * log_a + (a->d[k] != 0 ? b->v * a->d[k] / a->v : 0));
  a->v = value;
}

vox_status vox_expression_evaluate(vox_context *ctx, const vox_expression *e,
                                   const double ch[36], int iteration, double *value,
                                   double gradient[36]) {
  dual *stack = malloc((size_t)(e->max_stack > 0 ? e->max_stack : 1) * sizeof *stack);
  if (!stack) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory for an expression");
  int top = 0; /* number of values on the stack */
  for (int i = 0; i < e->n; i++) {
    const node *nd = &e->program[i];
    dual *a = top >= 1 ? &stack[top - 1] : NULL; /* unary operand or right operand */
    dual *x = top >= 2 ? &stack[top - 2] : NULL; /* left operand of a binary operation */
    double arg = a ? a->v : 0;                   /* for the message */
    switch (nd->op) {
      case OP_NUMBER:
      case OP_ITER:
      case OP_ENTRY:
        a = &stack[top++];
        memset(a->d, 0, sizeof a->d);
        a->v = nd->op == OP_NUMBER ? nd->number : nd->op == OP_ITER ? iteration : ch[nd->entry];
        if (nd->op == OP_ENTRY) a->d[nd->entry] = 1;
        break;
      case OP_NEG: chain(a, -a->v, -1); break;
      case OP_SQRT: {
        const double s = sqrt(a->v);
        int varies = 0;
        for (int k = 0; k < 36; k++) varies |= a->d[k] != 0;
        chain(a, s, varies ? 0.5 / s : 0);
        break;
      }
      case OP_LOG: chain(a, log(a->v), 1 / a->v); break;
      case OP_EXP: chain(a, exp(a->v), exp(a->v)); break;
      case OP_ABS: chain(a, fabs(a->v), a->v > 0 ? 1 : a->v < 0 ? -1 : 0); break;
      case OP_SIN: chain(a, sin(a->v), cos(a->v)); break;
      case OP_COS: chain(a, cos(a->v), -sin(a->v)); break;
      case OP_ADD:
      case OP_SUB: {
        const double sign = nd->op == OP_ADD ? 1 : -1;
        for (int k = 0; k < 36; k++) x->d[k] += sign * a->d[k];
        x->v += sign * a->v;
        top--;
        a = x;
        break;
      }
      case OP_MUL:
        for (int k = 0; k < 36; k++) x->d[k] = x->d[k] * a->v + x->v * a->d[k];
        x->v *= a->v;
        top--;
        a = x;
        break;
      case OP_DIV:
        arg = a->v;
        for (int k = 0; k < 36; k++) x->d[k] = (x->d[k] * a->v - x->v * a->d[k]) / (a->v * a->v);
        x->v /= a->v;
        top--;
        a = x;
        break;
      case OP_POW:
        arg = x->v;
        power_dual(x, a);
        top--;
        a = x;
        break;
      case OP_MIN:
      case OP_MAX: {
        const int take_right = nd->op == OP_MIN ? a->v < x->v : a->v > x->v;
        if (take_right) *x = *a;
        top--;
        a = x;
        break;
      }
    }
    if (!finite_dual(a)) {
      free(stack);
      char quote[96];
      make_quote(e->text, quote, sizeof quote);
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                       "expression %s: %s at character %d gives a value or derivative that is "
                       "not finite (argument %g)",
                       quote, op_name(nd->op), nd->position, arg);
    }
  }
  *value = stack[0].v;
  if (gradient) memcpy(gradient, stack[0].d, sizeof stack[0].d);
  free(stack);
  return VOX_OK;
}
