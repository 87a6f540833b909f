/*
 * compute, compute-dual: integer work for `npm run bench` (perf/multicore.bench.ts): a CRC-32
 * computed bit by bit over a xorshift stream, printed as hex. With -DBOTH_CORES, core 1 is
 * launched (datasheet §2.8.2) and does the same work at the same time; core 0 prints both sums.
 * Without it core 1 stays in the boot ROM, waiting. Output:
 * "hilbench compute board=<id>\r\ncrc <hex>[ <hex>]\r\n", then exit 0.
 */
#include "../src/hilbench.h"

#define REG(addr) (*(volatile uint32_t *)(addr))
#define FIFO_ST REG(0xD0000050u)
#define FIFO_WR REG(0xD0000054u)
#define FIFO_RD REG(0xD0000058u)

/*
 * Rounds of work: about 300 000 instructions per core, in 30 ms at the 12 MHz board_init leaves.
 * A const volatile in flash under its own symbol, so the bench can set a longer run in its copy of
 * the image (perf/compute-image.ts, decision 0735) while tests and CI run this short one.
 */
__attribute__((used)) const volatile uint32_t compute_rounds = 4000u;

static uint32_t crc_of_stream(uint32_t seed) {
  uint32_t x = seed, crc = 0xFFFFFFFFu;
  const uint32_t rounds = compute_rounds;
  for (uint32_t i = 0; i < rounds; i++) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    crc ^= x & 0xFFu;
    for (uint32_t bit = 0; bit < 8u; bit++) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

static void puthex(uint32_t value) {
  for (int i = 7; i >= 0; i--) uart_putc("0123456789abcdef"[(value >> (4 * i)) & 0xFu]);
}

#ifdef BOTH_CORES
static void push(uint32_t value) {
  while (!(FIFO_ST & 2u)) __asm__ volatile("wfe");
  FIFO_WR = value;
  __asm__ volatile("sev");
}
static uint32_t pop(void) {
  while (!(FIFO_ST & 1u)) __asm__ volatile("wfe");
  return FIFO_RD;
}
static uint32_t core1_stack[128];
static void core1_main(void) {
  push(crc_of_stream(0x1234567u));
  for (;;) __asm__ volatile("wfe");
}
extern const uintptr_t vector_table[];
static void launch_core1(void) {
  const uint32_t sequence[] = {0, 0, 1, (uint32_t)vector_table, (uint32_t)&core1_stack[128], (uint32_t)core1_main};
  uint32_t seq = 0;
  do {
    if (sequence[seq] == 0) {
      while (FIFO_ST & 1u) (void)FIFO_RD;
      __asm__ volatile("sev");
    }
    push(sequence[seq]);
    seq = pop() == sequence[seq] ? seq + 1 : 0;
  } while (seq < 6u);
}
#endif

int main(void) {
  board_init();
  uart_puts("hilbench compute board=" BOARD_ID "\r\n");
#ifdef BOTH_CORES
  launch_core1();
#endif
  uint32_t crc = crc_of_stream(0x1234567u);
  uart_puts("crc ");
  puthex(crc);
#ifdef BOTH_CORES
  uart_putc(' ');
  puthex(pop());
#endif
  uart_puts("\r\n");
  uart_flush();
  board_exit(0);
}
