/*
 * float-heavy: soft float and double through the boot ROM's SF and SD tables (datasheet
 * §2.8.3.2), as Pico SDK programs do, for `npm run bench` (perf/multicore.bench.ts): a damped
 * oscillator stepped in float and in double, with a square root each step. Output:
 * "hilbench float-heavy board=<id>\r\nfloat <hex> double <hex>\r\n", then exit 0.
 */
#include "../src/hilbench.h"

typedef void *(*rom_table_lookup_fn)(const uint16_t *table, uint32_t code);
typedef uint32_t (*f2_fn)(uint32_t, uint32_t);
typedef uint32_t (*f1_fn)(uint32_t);
typedef uint64_t (*d2_fn)(uint64_t, uint64_t);
typedef uint64_t (*d1_fn)(uint64_t);

/*
 * Steps: about 20 000 ROM calls and 95 000 instructions, in 35 ms at the 12 MHz board_init leaves.
 * A const volatile in flash under its own symbol, so the bench can set a longer run in its copy of
 * the image (perf/image-word.ts, decision 0820) while tests and CI run this short one.
 */
__attribute__((used)) const volatile uint32_t float_steps = 800u;

static uint32_t rom_hword(uintptr_t address) {
  uint32_t value;
  __asm__ volatile("ldrh %0, [%1]" : "=l"(value) : "l"(address));
  return value;
}
static uint32_t *rom_data(char c1, char c2) {
  rom_table_lookup_fn lookup = (rom_table_lookup_fn)(uintptr_t)rom_hword(0x18);
  return lookup((const uint16_t *)(uintptr_t)rom_hword(0x16), (uint32_t)c1 | ((uint32_t)c2 << 8));
}

static void puthex(uint64_t value, int digits) {
  for (int i = digits - 1; i >= 0; i--) uart_putc("0123456789abcdef"[(value >> (4 * i)) & 0xfu]);
}

int main(void) {
  board_init();
  uart_puts("hilbench float-heavy board=" BOARD_ID "\r\n");
  uint32_t *sf = rom_data('S', 'F');
  uint32_t *sd = rom_data('S', 'D');
  f2_fn fadd = (f2_fn)sf[0], fsub = (f2_fn)sf[1], fmul = (f2_fn)sf[2];
  f1_fn fsqrt = (f1_fn)sf[6];
  d2_fn dadd = (d2_fn)sd[0], dsub = (d2_fn)sd[1], dmul = (d2_fn)sd[2];
  d1_fn dsqrt = (d1_fn)sd[6];
  /* x' = x + v dt, v' = v - (x + v/8) dt, dt = 1/64; IEEE-754 bit patterns. */
  uint32_t x = 0x3f800000u, v = 0, dt = 0x3c800000u, damp = 0x3e000000u, root = 0;
  uint64_t X = 0x3ff0000000000000ull, V = 0, DT = 0x3f90000000000000ull, DAMP = 0x3fc0000000000000ull, ROOT = 0;
  const uint32_t steps = float_steps;
  for (uint32_t i = 0; i < steps; i++) {
    uint32_t nx = fadd(x, fmul(v, dt));
    v = fsub(v, fmul(fadd(x, fmul(v, damp)), dt));
    x = nx;
    root = fadd(root, fsqrt(fmul(x, x)));
    uint64_t NX = dadd(X, dmul(V, DT));
    V = dsub(V, dmul(dadd(X, dmul(V, DAMP)), DT));
    X = NX;
    ROOT = dadd(ROOT, dsqrt(dmul(X, X)));
  }
  uart_puts("float ");
  puthex(root, 8);
  uart_puts(" double ");
  puthex(ROOT, 16);
  uart_puts("\r\n");
  uart_flush();
  board_exit(0);
}
