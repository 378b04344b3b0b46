/*
 * DESIGN: unit tests for the decimal arithmetic of src/runtime/decimal.h (+ − × ÷ % and the
 * 256-bit paths behind them), against values computed independently with Python's decimal
 * module (exact at 300 digits, then quantized to the result scale with ROUND_HALF_UP, which is
 * half away from zero on the magnitude; |result| >= 10^p is an overflow, a zero divisor of / and
 * % NULL). The table was printed by the generator in the comment at its end; the operands are
 * hand-picked edges (38-digit magnitudes, ties of both signs, carries across 128 bits,
 * overflow by one digit, 1/3 and 2/3, remainders' signs) and 40 seeded random cases.
 * Threads: the main thread.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "runtime/decimal.h"

enum { OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MOD };

typedef struct dcase {
  const char *a;
  int s1;
  const char *b;
  int s2;
  int op, s, p, status;
  const char *want; /* the unscaled result at scale s (CK_DEC_OK) */
} dcase_t;

static const dcase_t cases[] = {
    {"12345", 2, "678", 1, OP_ADD, 2, 10, CK_DEC_OK, "19125"},
    {"12345", 2, "-678", 1, OP_ADD, 2, 10, CK_DEC_OK, "5565"},
    {"-5", 0, "7", 3, OP_SUB, 3, 10, CK_DEC_OK, "-5007"},
    {"99999999999999999999999999999999999999", 0, "1", 0, OP_ADD, 0, 38, CK_DEC_OVERFLOW, "0"},
    {"99999999999999999999999999999999999999", 0, "-1", 0, OP_ADD, 0, 38, CK_DEC_OK, "99999999999999999999999999999999999998"},
    {"99999999999999999999999999999999999999", 10, "99999999999999999999999999999999999999", 0, OP_ADD, 10, 38, CK_DEC_OVERFLOW, "0"},
    {"-99999999999999999999999999999999999999", 0, "99999999999999999999999999999999999999", 0, OP_SUB, 0, 38, CK_DEC_OVERFLOW, "0"},
    {"49999999999999999999999999999999999999", 0, "50000000000000000000000000000000000000", 0, OP_ADD, 0, 38, CK_DEC_OK, "99999999999999999999999999999999999999"},
    {"10000000000000000000000000000000000000", 37, "1", 0, OP_ADD, 37, 38, CK_DEC_OK, "20000000000000000000000000000000000000"},
    {"15", 1, "0", 0, OP_ADD, 0, 10, CK_DEC_OK, "2"},
    {"-15", 1, "0", 0, OP_ADD, 0, 10, CK_DEC_OK, "-2"},
    {"14999", 4, "0", 0, OP_ADD, 0, 10, CK_DEC_OK, "1"},
    {"25", 1, "1", 37, OP_SUB, 0, 38, CK_DEC_OK, "2"},
    {"25", 1, "1", 0, OP_MUL, 0, 10, CK_DEC_OK, "3"},
    {"-25", 1, "1", 0, OP_MUL, 0, 10, CK_DEC_OK, "-3"},
    {"35", 1, "1", 0, OP_MUL, 0, 10, CK_DEC_OK, "4"},
    {"123456789", 4, "987654321", 5, OP_MUL, 6, 38, CK_DEC_OK, "121932631112635"},
    {"-123456789", 4, "987654321", 5, OP_MUL, 6, 38, CK_DEC_OK, "-121932631112635"},
    {"99999999999999999999999999999999999999", 19, "99999999999999999999999999999999999999", 19, OP_MUL, 19, 38, CK_DEC_OVERFLOW, "0"},
    {"99999999999999999999999999999999999999", 20, "99999999999999999999999999999999999999", 20, OP_MUL, 2, 38, CK_DEC_OK, "99999999999999999999999999999999999998"},
    {"100000000000000000000", 0, "1000000000000000000", 0, OP_MUL, 0, 38, CK_DEC_OVERFLOW, "0"},
    {"100000000000000000000", 0, "1000000000000000000", 0, OP_MUL, 0, 37, CK_DEC_OVERFLOW, "0"},
    {"-10000000000000000007", 10, "10000000000000000003", 10, OP_MUL, 10, 38, CK_DEC_OK, "-10000000000000000010000000000"},
    {"50000000000000000000000000000000000000", 38, "3", 0, OP_MUL, 37, 38, CK_DEC_OK, "15000000000000000000000000000000000000"},
    {"50000000000000000000000000000000000000", 38, "-1", 1, OP_MUL, 38, 38, CK_DEC_OK, "-5000000000000000000000000000000000000"},
    {"1", 0, "3", 0, OP_DIV, 6, 10, CK_DEC_OK, "333333"},
    {"2", 0, "3", 0, OP_DIV, 6, 10, CK_DEC_OK, "666667"},
    {"-2", 0, "3", 0, OP_DIV, 6, 10, CK_DEC_OK, "-666667"},
    {"5", 0, "2", 0, OP_DIV, 0, 10, CK_DEC_OK, "3"},
    {"-5", 0, "2", 0, OP_DIV, 0, 10, CK_DEC_OK, "-3"},
    {"1", 0, "8", 0, OP_DIV, 2, 10, CK_DEC_OK, "13"},
    {"99999999999999999999999999999999999999", 0, "7", 0, OP_DIV, 0, 38, CK_DEC_OK, "14285714285714285714285714285714285714"},
    {"99999999999999999999999999999999999999", 0, "7", 5, OP_DIV, 0, 38, CK_DEC_OVERFLOW, "0"},
    {"1", 0, "99999999999999999999999999999999999999", 0, OP_DIV, 38, 38, CK_DEC_OK, "1"},
    {"99999999999999999999999999999999999999", 0, "3", 0, OP_DIV, 10, 38, CK_DEC_OVERFLOW, "0"},
    {"99999999999999999999999999999999999999", 10, "99999999999999999999999999999999999999", 10, OP_DIV, 18, 38, CK_DEC_OK, "1000000000000000000"},
    {"123", 2, "0", 0, OP_DIV, 2, 10, CK_DEC_NULL, "0"},
    {"1000000000000000000000000000000", 0, "3", 1, OP_DIV, 8, 38, CK_DEC_OVERFLOW, "0"},
    {"-1000000000000000000000000000000", 0, "3", 1, OP_DIV, 8, 38, CK_DEC_OVERFLOW, "0"},
    {"7", 0, "-10000000000000000000000000000000000000", 37, OP_DIV, 6, 38, CK_DEC_OK, "-7000000"},
    {"7", 0, "3", 0, OP_MOD, 0, 10, CK_DEC_OK, "1"},
    {"-7", 0, "3", 0, OP_MOD, 0, 10, CK_DEC_OK, "-1"},
    {"7", 0, "-3", 0, OP_MOD, 0, 10, CK_DEC_OK, "1"},
    {"755", 2, "2", 0, OP_MOD, 2, 10, CK_DEC_OK, "155"},
    {"-755", 2, "25", 1, OP_MOD, 2, 10, CK_DEC_OK, "-5"},
    {"99999999999999999999999999999999999999", 0, "10000000000000000000000000000000000009", 37, OP_MOD, 37, 38, CK_DEC_OK, "819"},
    {"99999999999999999999999999999999999999", 30, "7", 0, OP_MOD, 30, 38, CK_DEC_OK, "1999999999999999999999999999999"},
    {"5", 0, "0", 3, OP_MOD, 3, 10, CK_DEC_NULL, "0"},
    {"-99999999999999999999999253514177964945", 9, "77868672029", 5, OP_MUL, 18, 38, CK_DEC_OVERFLOW, "0"},
    {"169145487966471708", 13, "-65005445970701774", 4, OP_ADD, 4, 38, CK_DEC_OK, "-65005445801556286"},
    {"-6745733121618724808648763131444490647", 7, "-407993280415760554415", 15, OP_MUL, 28, 38, CK_DEC_OVERFLOW, "0"},
    {"99999999923238221821465245305762330663", 19, "-69421943768807753976351", 4, OP_MOD, 19, 38, CK_DEC_OK, "30578056154430467845114245305762330663"},
    {"-99258493596988044492880185200914150529", 18, "-78679271", 15, OP_SUB, 18, 38, CK_DEC_OK, "-99258493596988044492880185122234879529"},
    {"-72243260769025224920091402985114", 1, "-58983436934", 7, OP_DIV, 22, 38, CK_DEC_OVERFLOW, "0"},
    {"99996267082651794598148368519622080764", 20, "6941752969654611218040110645198", 11, OP_SUB, 20, 38, CK_DEC_OVERFLOW, "0"},
    {"99999999999999999993086662451072999795", 10, "-51610627016609668448296581578891870", 5, OP_MOD, 10, 38, CK_DEC_OK, "99999999999999999993086662451072999795"},
    {"-99999999999999999984210158991857780988", 0, "8465658443264232128742076645601", 4, OP_MOD, 4, 38, CK_DEC_OK, "-984574379361085731529261193360"},
    {"99905273727469570138308944914230854961", 15, "-20351158627", 17, OP_SUB, 17, 38, CK_DEC_OVERFLOW, "0"},
    {"53923525010361556625498159185581263795", 8, "71910", 13, OP_SUB, 10, 38, CK_DEC_OVERFLOW, "0"},
    {"-384715861457291136142893662697836621", 6, "159308203", 14, OP_MUL, 7, 38, CK_DEC_OK, "-6128839255435801214675274062448"},
    {"99999999999999999980950644072533304754", 5, "-107009668", 6, OP_MUL, 31, 38, CK_DEC_OVERFLOW, "0"},
    {"99999999995852590994310966425329460018", 18, "5288", 18, OP_DIV, 34, 38, CK_DEC_OVERFLOW, "0"},
    {"99999999999999999999999999991596235342", 0, "93811697025155", 7, OP_SUB, 7, 38, CK_DEC_OVERFLOW, "0"},
    {"815243302658566858878521062346681691", 18, "-88658799300184298168360083596964520", 12, OP_SUB, 18, 38, CK_DEC_OVERFLOW, "0"},
    {"36763101243347837530741", 9, "-2", 8, OP_MOD, 6, 38, CK_DEC_OK, "0"},
    {"12705495", 19, "5179244189300800046131456", 9, OP_SUB, 19, 38, CK_DEC_OK, "-51792441893008000461314559987294505"},
    {"99969143873242393799619639212350965667", 16, "-4686747589073998212393083091987", 0, OP_ADD, 15, 38, CK_DEC_OVERFLOW, "0"},
    {"1281809904036690473457114960479", 0, "88709557838454191660232694580873784255", 18, OP_SUB, 13, 38, CK_DEC_OVERFLOW, "0"},
    {"-29873248449424327753", 17, "334164649316695980710886321871270", 0, OP_ADD, 17, 38, CK_DEC_OVERFLOW, "0"},
    {"-895857076677324014357072472635733", 7, "-1988459159154944769227247773", 10, OP_ADD, 5, 38, CK_DEC_OK, "-8958570786657831735120172418630"},
    {"22718701010455239798981252836287699599", 11, "114231207281", 7, OP_SUB, 11, 38, CK_DEC_OK, "22718701010455239798980110524214889599"},
    {"99999999777602173770623980277758697057", 16, "-9921420417607892952899091100651005706", 0, OP_MOD, 10, 38, CK_DEC_OK, "99999999777602173770623980277759"},
    {"8012707087100591820162442", 3, "-92", 6, OP_DIV, 24, 38, CK_DEC_OVERFLOW, "0"},
    {"252586", 15, "-6581529337", 18, OP_DIV, 33, 38, CK_DEC_OK, "-38378010195899853055688050638860"},
    {"99999999999999999995781031418756784609", 13, "21", 17, OP_SUB, 17, 38, CK_DEC_OVERFLOW, "0"},
    {"99999999999137826087138380110312586939", 18, "8501", 5, OP_DIV, 15, 38, CK_DEC_OK, "1176332196202068298872348901427039018"},
    {"99999999999999999986982281647969678793", 9, "3906608573688538125", 13, OP_DIV, 5, 38, CK_DEC_OK, "25597650267168202896282472825"},
    {"99999999999999999999990007715010188360", 1, "-8271772", 3, OP_SUB, 3, 38, CK_DEC_OVERFLOW, "0"},
    {"8503692302307048566083958192079", 17, "8", 13, OP_MOD, 8, 38, CK_DEC_OK, "0"},
    {"-99999999999999999999999999999678693716", 0, "-2720700067217861", 13, OP_DIV, 27, 38, CK_DEC_OVERFLOW, "0"},
    {"6162906127336139772605", 11, "-23894767051", 11, OP_ADD, 9, 38, CK_DEC_OK, "61629061273122450056"},
    {"-823383919203609952000085851897239015", 3, "-51", 15, OP_DIV, 21, 38, CK_DEC_OVERFLOW, "0"},
    {"742199423963839375734112128558096433", 12, "611840277196195155908138195129", 9, OP_DIV, 38, 38, CK_DEC_OVERFLOW, "0"},
    {"7827268539582517", 17, "489515645838765896", 6, OP_ADD, 17, 38, CK_DEC_OK, "48951564583884416868539582517"},
    {"4512157853964150276158113153", 12, "3600999083005", 19, OP_DIV, 2, 38, CK_DEC_OK, "1253029437096883906363558"},
    {"56146428948385554063152131", 14, "-631380997236471306977477589197", 16, OP_ADD, 16, 38, CK_DEC_OK, "-625766354341632751571162376097"},
    {"99999904445783444709815143671973457038", 0, "638336905477085583693878937352139275", 1, OP_MOD, 0, 38, CK_DEC_OK, "36345048071842303353702082628446573"},
    {"99999999999999999999999999994179014256", 15, "38643", 16, OP_MUL, 30, 38, CK_DEC_OVERFLOW, "0"},
};

/* Decimal digits to an integer, without the code under test. */
static ck_i128 num(const char *s) {
  bool neg = *s == '-';
  ck_i128 v = 0;
  for (s += neg; *s; s++) v = v * 10 + (*s - '0');
  return neg ? -v : v;
}

static const char *const op_names[] = {"+", "-", "*", "/", "%"};

static void test_arithmetic_matches_pythons_decimal(void **state) {
  (void)state;
  int n = (int)(sizeof cases / sizeof cases[0]), bad = 0;
  for (int i = 0; i < n; i++) {
    const dcase_t *c = &cases[i];
    ck_dec_op_t o = ck_dec_op(c->s1, c->s2, c->s, c->p);
    ck_i128 a = num(c->a), b = num(c->b), r = 0;
    int st;
    switch (c->op) {
      case OP_ADD: st = ck_dec_add(&o, a, b, &r); break;
      case OP_SUB: st = ck_dec_sub(&o, a, b, &r); break;
      case OP_MUL: st = ck_dec_mul(&o, a, b, &r); break;
      case OP_DIV: st = ck_dec_div(&o, a, b, &r); break;
      default: st = ck_dec_mod(&o, a, b, &r); break;
    }
    ck_buf_t got;
    ck_buf_init(&got);
    ck_decimal_format(r, 0, &got);
    if (st != c->status || (st == CK_DEC_OK && strcmp(got.data, c->want) != 0)) {
      print_error("case %d: %s (scale %d) %s %s (scale %d) at DECIMAL(%d, %d): got status %d "
                  "value %s, want status %d value %s\n", i, c->a, c->s1, op_names[c->op], c->b,
                  c->s2, c->p, c->s, st, got.data, c->status, c->want);
      bad++;
    }
    ck_buf_fini(&got);
  }
  assert_int_equal(bad, 0);
}

static void test_rescale_rounds_and_checks_precision(void **state) {
  (void)state;
  ck_i128 r;
  assert_true(ck_dec_rescale(125, 2, 1, 10, &r) && r == 13);   /* 1.25 → 1.3 */
  assert_true(ck_dec_rescale(-125, 2, 1, 10, &r) && r == -13); /* -1.25 → -1.3 */
  assert_true(ck_dec_rescale(124, 2, 1, 10, &r) && r == 12);
  assert_true(ck_dec_rescale(7, 0, 3, 4, &r) && r == 7000);
  assert_false(ck_dec_rescale(10, 0, 3, 4, &r));               /* 10.000 needs 5 digits */
  assert_false(ck_dec_rescale(num("99999999999999999999999999999999999999"), 0, 1, 38, &r));
  assert_true(ck_dec_rescale(num("99999999999999999999999999999999999995"), 1, 0, 38, &r) &&
              r == num("10000000000000000000000000000000000000"));
  assert_false(ck_dec_rescale(num("99999999999999999999999999999999999995"), 0, 0, 37, &r));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_arithmetic_matches_pythons_decimal),
      cmocka_unit_test(test_rescale_rounds_and_checks_precision),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The generator (python3; prints the table above):
# Generates the expected values of tests/unit/test_runtime_decimal_arith.c with Python's decimal
# module (ROUND_HALF_UP is half away from zero on the magnitude).
import random
from decimal import Decimal, getcontext, ROUND_HALF_UP
getcontext().prec = 300
def compute(a, s1, b, s2, op, s, p):
    A = Decimal(a).scaleb(-s1); B = Decimal(b).scaleb(-s2)
    if op in '/%' and b == 0: return 'NULL'
    R = {'+': lambda: A + B, '-': lambda: A - B, '*': lambda: A * B, '/': lambda: A / B, '%': lambda: A % B}[op]()
    q = R.quantize(Decimal(1).scaleb(-s), rounding=ROUND_HALF_UP)
    u = int(q.scaleb(s))
    if abs(u) >= 10**p: return 'OVERFLOW'
    return str(u)
M38 = 10**38 - 1
cases = [
 # + and -: scales aligned, 128-bit and 256-bit paths, overflow at p
 (12345, 2, 678, 1, '+', 2, 10), (12345, 2, -678, 1, '+', 2, 10), (-5, 0, 7, 3, '-', 3, 10),
 (M38, 0, 1, 0, '+', 0, 38), (M38, 0, -1, 0, '+', 0, 38), (M38, 10, M38, 0, '+', 10, 38),
 (-M38, 0, M38, 0, '-', 0, 38), (M38 // 2, 0, M38 // 2 + 1, 0, '+', 0, 38),
 (10**37, 37, 1, 0, '+', 37, 38), (15, 1, 0, 0, '+', 0, 10), (-15, 1, 0, 0, '+', 0, 10),
 (14999, 4, 0, 0, '+', 0, 10), (25, 1, 1, 37, '-', 0, 38),
 # *: exact, rounded to a smaller scale (ties both signs), 256-bit products, overflow
 (25, 1, 1, 0, '*', 0, 10), (-25, 1, 1, 0, '*', 0, 10), (35, 1, 1, 0, '*', 0, 10),
 (123456789, 4, 987654321, 5, '*', 6, 38), (-123456789, 4, 987654321, 5, '*', 6, 38),
 (M38, 19, M38, 19, '*', 19, 38), (M38, 20, M38, 20, '*', 2, 38), (10**20, 0, 10**18, 0, '*', 0, 38),
 (10**20, 0, 10**18, 0, '*', 0, 37), (-(10**19) - 7, 10, 10**19 + 3, 10, '*', 10, 38),
 (5 * 10**37, 38, 3, 0, '*', 37, 38), (5 * 10**37, 38, -1, 1, '*', 38, 38),
 # /: rounded quotients, ties, 1/3 and 2/3, 256-bit numerators, overflow, by zero
 (1, 0, 3, 0, '/', 6, 10), (2, 0, 3, 0, '/', 6, 10), (-2, 0, 3, 0, '/', 6, 10),
 (5, 0, 2, 0, '/', 0, 10), (-5, 0, 2, 0, '/', 0, 10), (1, 0, 8, 0, '/', 2, 10),
 (M38, 0, 7, 0, '/', 0, 38), (M38, 0, 7, 5, '/', 0, 38), (1, 0, M38, 0, '/', 38, 38),
 (M38, 0, 3, 0, '/', 10, 38), (M38, 10, M38, 10, '/', 18, 38), (123, 2, 0, 0, '/', 2, 10),
 (10**30, 0, 3, 1, '/', 8, 38), (-(10**30), 0, 3, 1, '/', 8, 38), (7, 0, -(10**37), 37, '/', 6, 38),
 # %: sign of the dividend, mixed scales, 256-bit alignment, by zero
 (7, 0, 3, 0, '%', 0, 10), (-7, 0, 3, 0, '%', 0, 10), (7, 0, -3, 0, '%', 0, 10),
 (755, 2, 2, 0, '%', 2, 10), (-755, 2, 25, 1, '%', 2, 10), (M38, 0, 10**37 + 9, 37, '%', 37, 38),
 (M38, 30, 7, 0, '%', 30, 38), (5, 0, 0, 3, '%', 3, 10),
]
rnd = random.Random(13)
for _ in range(40):
    op = rnd.choice(['+', '-', '*', '/', '%'])
    s1, s2 = rnd.randint(0, 20), rnd.randint(0, 20)
    a = rnd.randint(-(10**rnd.randint(1, 38)) + 1, 10**rnd.randint(1, 38) - 1) % (10**38)
    a = a if rnd.random() < 0.5 else -a
    b = rnd.randint(1, 10**rnd.randint(1, 38) - 1) * rnd.choice([1, -1])
    if op == '/': s = rnd.randint(s1 - s2 if s1 > s2 else 0, 38 - 0) if s1 - s2 <= 38 else 38
    else: s = rnd.randint(0, 38)
    if op == '/' and s - s1 + s2 < 0: s = s1 - s2
    if op in '+-%': s = max(s1, s2) if rnd.random() < 0.7 else rnd.randint(0, max(s1, s2))
    cases.append((a, s1, b, s2, op, min(s, 38), 38))
names = {'+': 'ADD', '-': 'SUB', '*': 'MUL', '/': 'DIV', '%': 'MOD'}
for a, s1, b, s2, op, s, p in cases:
    r = compute(a, s1, b, s2, op, s, p)
    st = 'OK' if r not in ('NULL', 'OVERFLOW') else r
    print('    {"%d", %d, "%d", %d, OP_%s, %d, %d, CK_DEC_%s, "%s"},' % (a, s1, b, s2, names[op], s, p, st, r if st == 'OK' else '0'))
*/
