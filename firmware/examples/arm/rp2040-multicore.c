/*
 * multicore: both RP2040 cores, on registers alone (no SDK), checked from core 0's UART.
 * RP2040 datasheet: §2.3.1 SIO (CPUID, FIFOs, spinlocks, divider), §2.8.2 launching core 1,
 * §2.3.2 SIO_IRQ_PROC1, Cortex-M0+ NVIC and VTOR.
 *
 *   1. launch: core 0 sends 0, 0, 1, vector table, SP, entry over the FIFO as the datasheet says
 *      (draining first, restarting on a wrong echo); core 1 answers with its CPUID; then 100
 *      FIFO round trips (core 1 returns 2n + 1).
 *   2. spinlocks: both cores add 1 to a shared counter 3000 times each, a slow read-modify-write
 *      inside spinlock 5; nothing may be lost.
 *   3. FIFO flags: core 1 stops reading; core 0 fills its FIFO (RDY drops after 8), writes a
 *      ninth (WOF), reads its empty FIFO (ROE), clears both; core 1 then sums the 8 words.
 *   4. interrupt: core 1 takes SIO_IRQ_PROC1 from its own vector table and sums in the handler
 *      what core 0 sends.
 *   5. divider: both cores divide at the same time, each checking its own results.
 * Output: one line per part, then "multicore PASS" and exit 0, or "multicore FAIL <k>" and exit 1.
 */
#include "../src/hilbench.h"

#define REG(addr) (*(volatile uint32_t *)(addr))
#define SIO 0xD0000000u
#define SIO_CPUID REG(SIO + 0x000u)
#define FIFO_ST REG(SIO + 0x050u)
#define FIFO_WR REG(SIO + 0x054u)
#define FIFO_RD REG(SIO + 0x058u)
#define FIFO_VLD 1u
#define FIFO_RDY 2u
#define FIFO_WOF 4u
#define FIFO_ROE 8u
#define DIV_SDIVIDEND REG(SIO + 0x068u)
#define DIV_SDIVISOR REG(SIO + 0x06Cu)
#define DIV_QUOTIENT REG(SIO + 0x070u)
#define DIV_REMAINDER REG(SIO + 0x074u)
#define DIV_CSR REG(SIO + 0x078u)
#define SPINLOCK(n) REG(SIO + 0x100u + 4u * (n))
#define NVIC_ISER REG(0xE000E100u)
#define NVIC_ICER REG(0xE000E180u)
#define VTOR REG(0xE000ED08u)
#define SIO_IRQ_PROC1 16u
#define FAULT 0xFFFFFFF1u

static inline void sev(void) { __asm__ volatile("sev"); }
static inline void wfe(void) { __asm__ volatile("wfe"); }
static inline void wfi(void) { __asm__ volatile("wfi"); }

/* The SDK's blocking FIFO calls: wait with WFE, signal with SEV. */
static void fifo_push(uint32_t value) {
  while (!(FIFO_ST & FIFO_RDY)) wfe();
  FIFO_WR = value;
  sev();
}
static uint32_t fifo_pop(void) {
  while (!(FIFO_ST & FIFO_VLD)) wfe();
  return FIFO_RD;
}
static void fifo_drain(void) {
  while (FIFO_ST & FIFO_VLD) (void)FIFO_RD;
}

static uint32_t failures;
static void check(const char *what, uint32_t got, uint32_t want) {
  if (got == want) return;
  failures++;
  uart_puts("FAIL ");
  uart_puts(what);
  uart_puts(" got ");
  uart_putu(got);
  uart_puts(" want ");
  uart_putu(want);
  uart_puts("\r\n");
}

/* ---- core 1 ---- */

#define CORE1_STACK_WORDS 256
static uint32_t core1_stack[CORE1_STACK_WORDS];
/* Core 1's own vector table, in RAM: VTOR needs 256-byte alignment for 48 entries. */
__attribute__((aligned(256))) static uint32_t core1_vectors[48];

static volatile uint32_t shared_counter;
#define COUNTER_ROUNDS 3000u
static volatile uint32_t irq_sum, irq_words, irq_entries;

static void add_under_lock(void) {
  for (uint32_t i = 0; i < COUNTER_ROUNDS; i++) {
    while (SPINLOCK(5) == 0) {
    }
    uint32_t value = shared_counter;
    /* Long enough that the other core runs in between, if the lock let it. */
    for (volatile uint32_t spin = 0; spin < 3u; spin++) {
    }
    shared_counter = value + 1;
    SPINLOCK(5) = 1;
  }
}

/* Quotient and remainder from this core's divider; counts results that differ from libgcc's. */
static uint32_t divide_and_check(uint32_t seed) {
  uint32_t wrong = 0;
  for (uint32_t i = 1; i <= 400u; i++) {
    int32_t dividend = (int32_t)(seed * i * 2654435761u);
    int32_t divisor = (int32_t)(i % 97u) - 48;
    if (divisor == 0) divisor = 7;
    DIV_SDIVIDEND = (uint32_t)dividend;
    DIV_SDIVISOR = (uint32_t)divisor;
    while (!(DIV_CSR & 1u)) {
    }
    int32_t remainder = (int32_t)DIV_REMAINDER;
    int32_t quotient = (int32_t)DIV_QUOTIENT;
    if (quotient != dividend / divisor || remainder != dividend % divisor) wrong++;
  }
  return wrong;
}

static void core1_fifo_irq(void) {
  irq_entries++;
  while (FIFO_ST & FIFO_VLD) {
    irq_sum += FIFO_RD;
    irq_words++;
  }
}

static void core1_main(void) {
  /* 1. who am I, then echo 2n + 1 */
  fifo_push(SIO_CPUID);
  for (uint32_t i = 0; i < 100u; i++) fifo_push(2u * fifo_pop() + 1u);
  /* 2. spinlock counter */
  (void)fifo_pop();
  add_under_lock();
  fifo_push(1);
  /* 3. wait (not reading) until core 0 releases spinlock 7, then sum the 8 words it left */
  while (SPINLOCK(7) == 0) {
  }
  SPINLOCK(7) = 1;
  uint32_t sum = 0;
  for (uint32_t i = 0; i < 8u; i++) sum += fifo_pop();
  fifo_push(sum);
  /* 4. the FIFO interrupt: sum in the handler until 10 words came */
  VTOR = (uint32_t)core1_vectors;
  NVIC_ISER = 1u << SIO_IRQ_PROC1;
  fifo_push(2);
  while (irq_words < 10u) wfi();
  NVIC_ICER = 1u << SIO_IRQ_PROC1;
  fifo_push(irq_sum);
  fifo_push(irq_entries > 0u);
  /* 5. divider, at the same time as core 0 */
  (void)fifo_pop();
  fifo_push(divide_and_check(3u));
  for (;;) wfe();
}

/* ---- core 0 ---- */

/* Datasheet §2.8.2: the launch sequence, echoed word by word by core 1's boot ROM. */
static void launch_core1(void (*entry)(void), uint32_t *stack_top, uint32_t *vector_table) {
  const uint32_t sequence[] = {0, 0, 1, (uint32_t)vector_table, (uint32_t)stack_top, (uint32_t)entry};
  uint32_t seq = 0;
  do {
    uint32_t cmd = sequence[seq];
    if (cmd == 0) {
      fifo_drain();
      sev();
    }
    fifo_push(cmd);
    uint32_t response = fifo_pop();
    seq = cmd == response ? seq + 1 : 0;
  } while (seq < sizeof sequence / sizeof sequence[0]);
}

int main(void) {
  board_init();
  uart_puts("hilbench multicore board=" BOARD_ID "\r\n");

  for (uint32_t i = 0; i < 48u; i++) core1_vectors[i] = FAULT;
  core1_vectors[0] = (uint32_t)&core1_stack[CORE1_STACK_WORDS];
  core1_vectors[1] = (uint32_t)core1_main;
  core1_vectors[16 + SIO_IRQ_PROC1] = (uint32_t)core1_fifo_irq;

  /* Held until part 3, so that core 1 stops there. */
  while (SPINLOCK(7) == 0) {
  }

  /* 1 */
  check("core 0 CPUID", SIO_CPUID, 0);
  launch_core1(core1_main, &core1_stack[CORE1_STACK_WORDS], core1_vectors);
  check("core 1 CPUID", fifo_pop(), 1);
  uint32_t wrong = 0;
  for (uint32_t i = 0; i < 100u; i++) {
    fifo_push(i);
    if (fifo_pop() != 2u * i + 1u) wrong++;
  }
  check("ping-pong", wrong, 0);
  uart_puts("launch ok, fifo ping-pong 100\r\n");

  /* 2 */
  fifo_push(0);
  add_under_lock();
  (void)fifo_pop();
  check("spinlock counter", shared_counter, 2u * COUNTER_ROUNDS);
  uart_puts("spinlock counter ");
  uart_putu(shared_counter);
  uart_puts("\r\n");

  /* 3: core 1 spins on spinlock 7 (held since the start) and reads nothing meanwhile */
  fifo_drain();
  for (uint32_t i = 1; i <= 8u; i++) FIFO_WR = i;
  check("RDY after 8 words", FIFO_ST & FIFO_RDY, 0);
  FIFO_WR = 99; /* lost */
  check("WOF", FIFO_ST & FIFO_WOF, FIFO_WOF);
  (void)FIFO_RD; /* core 0's own FIFO is empty */
  check("ROE", FIFO_ST & FIFO_ROE, FIFO_ROE);
  FIFO_ST = FIFO_WOF | FIFO_ROE;
  check("flags cleared", FIFO_ST & (FIFO_WOF | FIFO_ROE), 0);
  SPINLOCK(7) = 1;
  sev();
  check("sum of 8 words", fifo_pop(), 36);
  uart_puts("fifo flags ok\r\n");

  /* 4 */
  check("core 1 interrupt ready", fifo_pop(), 2);
  for (uint32_t i = 1; i <= 10u; i++) fifo_push(i);
  check("interrupt sum", fifo_pop(), 55);
  check("interrupt taken", fifo_pop(), 1);
  uart_puts("core 1 fifo interrupt sum 55\r\n");

  /* 5 */
  fifo_push(5);
  uint32_t core0_wrong = divide_and_check(11u);
  uint32_t core1_wrong = fifo_pop();
  check("core 0 divider", core0_wrong, 0);
  check("core 1 divider", core1_wrong, 0);
  uart_puts("divider per core ok\r\n");

  if (failures) {
    uart_puts("multicore FAIL ");
    uart_putu(failures);
    uart_puts("\r\n");
    uart_flush();
    board_exit(1);
  }
  uart_puts("multicore PASS\r\n");
  uart_flush();
  board_exit(0);
}
