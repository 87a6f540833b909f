/*
 * multicore-sdk: both RP2040 cores driven the way a Pico SDK program drives them, with the SDK's
 * function names and behaviour written out here on registers (the SDK itself is not a build
 * dependency). Where rp2040-multicore.c checks the datasheet's mechanisms one by one, this
 * checks the sequences SDK programs rely on:
 *
 *   - a RAM vector table shared by both cores (the SDK copies the table to RAM and launches core 1
 *     with core 0's VTOR), with handlers installed at run time (irq_set_exclusive_handler);
 *   - multicore_reset_core1 through the PSM's atomic set and clear aliases, read back;
 *   - multicore_launch_core1_with_stack: the 0, 0, 1, VTOR, SP, entry sequence with echo and
 *     retry, draining and SEV before each 0, SIO_IRQ_PROC0 masked during the handshake and
 *     restored after; entry through a trampoline that pops entry, stack bottom and wrapper;
 *   - multicore_fifo_push_blocking (busy wait on RDY, then SEV) and multicore_fifo_pop_blocking
 *     (WFE until VLD), with core 1 pushing more words than the FIFO holds;
 *   - a FIFO interrupt handler on core 0 that drains and clears (multicore_fifo_clear_irq);
 *   - mutex_enter_blocking / mutex_exit: a spinlock with interrupts off, WFE while another core
 *     owns the mutex, SEV on release; both cores count under it and print under it;
 *   - multicore_lockout_victim_init / multicore_lockout_start_blocking / _end_blocking (what
 *     flash_safe_execute uses): core 1 parked in its FIFO interrupt handler;
 *   - a second reset of core 1 while it runs, and a second launch.
 *
 * Output: one line per part, then "multicore-sdk PASS" and exit 0, or "multicore-sdk FAIL <k>".
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
#define SPINLOCK(n) REG(SIO + 0x100u + 4u * (n))
#define PSM_FRCE_OFF 0x40010004u
#define ATOMIC_SET 0x2000u
#define ATOMIC_CLEAR 0x3000u
#define PSM_PROC1 (1u << 16)
#define NVIC_ISER REG(0xE000E100u)
#define NVIC_ICER REG(0xE000E180u)
#define NVIC_ICPR REG(0xE000E280u)
#define VTOR REG(0xE000ED08u)
#define SIO_IRQ_PROC0 15u
#define SIO_IRQ_PROC1 16u
#define FAULT 0xFFFFFFF1u

static inline void __sev(void) { __asm__ volatile("sev"); }
static inline void __wfe(void) { __asm__ volatile("wfe"); }
static inline void tight_loop_contents(void) {}
static inline uint32_t get_core_num(void) { return SIO_CPUID; }
static inline uint32_t save_and_disable_interrupts(void) {
  uint32_t primask;
  __asm__ volatile("mrs %0, primask\n cpsid i" : "=r"(primask)::"memory");
  return primask;
}
static inline void restore_interrupts(uint32_t primask) { __asm__ volatile("msr primask, %0" ::"r"(primask) : "memory"); }

/* ---- hardware_irq: the RAM vector table both cores use ---- */

extern const uintptr_t vector_table[16];
__attribute__((aligned(256))) static uintptr_t ram_vector_table[48];

static void runtime_init_vector_table(void) {
  for (uint32_t i = 0; i < 48u; i++) ram_vector_table[i] = i < 16u ? vector_table[i] : FAULT;
  VTOR = (uint32_t)ram_vector_table;
}
static void irq_set_exclusive_handler(uint32_t irq, void (*handler)(void)) {
  ((volatile uintptr_t *)VTOR)[16u + irq] = (uintptr_t)handler;
}
static void irq_set_enabled(uint32_t irq, int enabled) {
  if (enabled) {
    NVIC_ICPR = 1u << irq;
    NVIC_ISER = 1u << irq;
  } else {
    NVIC_ICER = 1u << irq;
  }
}
static int irq_is_enabled(uint32_t irq) { return (NVIC_ISER & (1u << irq)) != 0u; }

/* ---- pico_multicore: the FIFO ---- */

static inline int multicore_fifo_rvalid(void) { return (FIFO_ST & FIFO_VLD) != 0u; }
static inline int multicore_fifo_wready(void) { return (FIFO_ST & FIFO_RDY) != 0u; }
static void multicore_fifo_push_blocking(uint32_t data) {
  while (!multicore_fifo_wready()) tight_loop_contents();
  FIFO_WR = data;
  __sev();
}
static uint32_t multicore_fifo_pop_blocking(void) {
  while (!multicore_fifo_rvalid()) __wfe();
  return FIFO_RD;
}
static void multicore_fifo_drain(void) {
  while (multicore_fifo_rvalid()) (void)FIFO_RD;
}
/* Clears the sticky WOF and ROE flags (the SDK writes 0xff). */
static void multicore_fifo_clear_irq(void) { FIFO_ST = 0xFFu; }

/* ---- pico_multicore: reset and launch ---- */

static void multicore_reset_core1(void) {
  REG(PSM_FRCE_OFF + ATOMIC_SET) = PSM_PROC1;
  while (!(REG(PSM_FRCE_OFF) & PSM_PROC1)) tight_loop_contents();
  /* Out of reset, core 1's ROM drains its FIFO and writes a 0 to core 0's. */
  REG(PSM_FRCE_OFF + ATOMIC_CLEAR) = PSM_PROC1;
}

static void multicore_launch_core1_raw(void (*entry)(void), uint32_t *sp, uint32_t vector_table_address) {
  /* A FIFO handler core 0 has installed must not see the handshake. */
  int enabled = irq_is_enabled(SIO_IRQ_PROC0);
  irq_set_enabled(SIO_IRQ_PROC0, 0);
  const uint32_t cmd_sequence[] = {0, 0, 1, vector_table_address, (uint32_t)sp, (uint32_t)entry};
  uint32_t seq = 0;
  do {
    uint32_t cmd = cmd_sequence[seq];
    if (!cmd) {
      multicore_fifo_drain();
      __sev();
    }
    multicore_fifo_push_blocking(cmd);
    uint32_t response = multicore_fifo_pop_blocking();
    seq = cmd == response ? seq + 1 : 0;
  } while (seq < sizeof cmd_sequence / sizeof cmd_sequence[0]);
  irq_set_enabled(SIO_IRQ_PROC0, enabled);
}

/* Core 1 starts here with SP at the three words the launch pushed: entry, stack bottom, wrapper. */
__attribute__((naked)) static void core1_trampoline(void) { __asm__ volatile("pop {r0, r1, pc}"); }

static int core1_wrapper(int (*entry)(void), void *stack_base) {
  (void)stack_base;
  return entry();
}

static void multicore_launch_core1_with_stack(int (*entry)(void), uint32_t *stack_bottom, uint32_t stack_size_bytes) {
  uint32_t *stack_ptr = stack_bottom + stack_size_bytes / sizeof(uint32_t);
  stack_ptr -= 3;
  stack_ptr[0] = (uintptr_t)entry;
  stack_ptr[1] = (uintptr_t)stack_bottom;
  stack_ptr[2] = (uintptr_t)core1_wrapper;
  multicore_launch_core1_raw(core1_trampoline, stack_ptr, VTOR);
}

/* ---- pico_sync: a mutex on a spinlock ---- */

typedef struct {
  uint32_t spin_lock;
  volatile int32_t owner; /* -1: free, else the owning core */
} mutex_t;

static uint32_t spin_lock_blocking(uint32_t n) {
  uint32_t save = save_and_disable_interrupts();
  while (SPINLOCK(n) == 0u) tight_loop_contents();
  return save;
}
static void spin_unlock(uint32_t n, uint32_t save) {
  SPINLOCK(n) = 0;
  restore_interrupts(save);
}
static void mutex_enter_blocking(mutex_t *mtx) {
  int32_t caller = (int32_t)get_core_num();
  for (;;) {
    uint32_t save = spin_lock_blocking(mtx->spin_lock);
    if (mtx->owner < 0) {
      mtx->owner = caller;
      spin_unlock(mtx->spin_lock, save);
      return;
    }
    /* Owned by the other core: sleep until its mutex_exit signals. */
    spin_unlock(mtx->spin_lock, save);
    __wfe();
  }
}
static void mutex_exit(mutex_t *mtx) {
  uint32_t save = spin_lock_blocking(mtx->spin_lock);
  mtx->owner = -1;
  spin_unlock(mtx->spin_lock, save);
  __sev();
}

/* ---- pico_multicore: lockout ---- */

#define LOCKOUT_MAGIC_START 0x73a8831eu
#define LOCKOUT_MAGIC_END (LOCKOUT_MAGIC_START ^ ~0u)

/* Core 1's SIO_IRQ_PROC1 handler: on the start word, answer and stay here, interrupts off, until the end word. */
static void multicore_lockout_handler(void) {
  multicore_fifo_clear_irq();
  while (multicore_fifo_rvalid()) {
    if (FIFO_RD == LOCKOUT_MAGIC_START) {
      uint32_t save = save_and_disable_interrupts();
      multicore_fifo_push_blocking(LOCKOUT_MAGIC_START);
      while (multicore_fifo_pop_blocking() != LOCKOUT_MAGIC_END) tight_loop_contents();
      multicore_fifo_push_blocking(LOCKOUT_MAGIC_END);
      restore_interrupts(save);
      break;
    }
  }
}
static void multicore_lockout_victim_init(void) {
  irq_set_exclusive_handler(SIO_IRQ_PROC0 + get_core_num(), multicore_lockout_handler);
  irq_set_enabled(SIO_IRQ_PROC0 + get_core_num(), 1);
}
static void multicore_lockout_handshake(uint32_t magic) {
  uint32_t irq = SIO_IRQ_PROC0 + get_core_num();
  int enabled = irq_is_enabled(irq);
  if (enabled) irq_set_enabled(irq, 0);
  for (;;) {
    multicore_fifo_push_blocking(magic);
    if (multicore_fifo_pop_blocking() == magic) break;
  }
  if (enabled) irq_set_enabled(irq, 1);
}
static void multicore_lockout_start_blocking(void) { multicore_lockout_handshake(LOCKOUT_MAGIC_START); }
static void multicore_lockout_end_blocking(void) { multicore_lockout_handshake(LOCKOUT_MAGIC_END); }

/* ---- the program ---- */

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

static mutex_t stdio_mutex = {.spin_lock = 10, .owner = -1};
static mutex_t counter_mutex = {.spin_lock = 11, .owner = -1};
static volatile uint32_t shared_counter;
#define COUNTER_ROUNDS 400u
#define PUSHED_WORDS 12u
static volatile uint32_t core1_loops;
static volatile uint32_t irq_words, irq_sum;

static uint32_t core1_stack[256];

static void add_under_mutex(void) {
  for (uint32_t i = 0; i < COUNTER_ROUNDS; i++) {
    mutex_enter_blocking(&counter_mutex);
    uint32_t value = shared_counter;
    for (volatile uint32_t spin = 0; spin < 3u; spin++) {
    }
    shared_counter = value + 1u;
    mutex_exit(&counter_mutex);
  }
}

static int core1_entry(void) {
  mutex_enter_blocking(&stdio_mutex);
  uart_puts("core 1 up, cpuid ");
  uart_putu(get_core_num());
  uart_puts("\r\n");
  mutex_exit(&stdio_mutex);
  /* More words than the FIFO holds: the push waits for core 0's interrupt handler to drain. */
  for (uint32_t i = 1; i <= PUSHED_WORDS; i++) multicore_fifo_push_blocking(i);
  (void)multicore_fifo_pop_blocking();
  add_under_mutex();
  multicore_fifo_push_blocking(1);
  multicore_lockout_victim_init();
  multicore_fifo_push_blocking(2);
  for (;;) core1_loops++;
  return 0;
}

static int core1_second_entry(void) {
  multicore_fifo_push_blocking(0x5EED0000u | get_core_num());
  return 0;
}

/* Core 0's FIFO handler. The ROM's hello 0 after a reset of core 1 may still be waiting when the
 * handler is enabled (on the chip depending on how soon the ROM writes it), so 0s are not counted. */
static void core0_fifo_irq(void) {
  while (multicore_fifo_rvalid()) {
    uint32_t word = FIFO_RD;
    if (word == 0u) continue;
    irq_sum += word;
    irq_words++;
  }
  multicore_fifo_clear_irq();
}

int main(void) {
  board_init();
  runtime_init_vector_table();
  uart_puts("hilbench multicore-sdk board=" BOARD_ID "\r\n");

  /* 1: from a known state, with core 0's FIFO handler installed before the launch */
  multicore_reset_core1();
  irq_set_exclusive_handler(SIO_IRQ_PROC0, core0_fifo_irq);
  irq_set_enabled(SIO_IRQ_PROC0, 1);
  multicore_launch_core1_with_stack(core1_entry, core1_stack, sizeof core1_stack);
  check("PROC0 irq restored after the launch", irq_is_enabled(SIO_IRQ_PROC0), 1);

  /* 2: core 1 prints, then pushes 12 words; core 0's handler takes them */
  while (irq_words < PUSHED_WORDS) __wfe();
  irq_set_enabled(SIO_IRQ_PROC0, 0);
  check("words", irq_words, PUSHED_WORDS);
  check("sum", irq_sum, PUSHED_WORDS * (PUSHED_WORDS + 1u) / 2u);
  mutex_enter_blocking(&stdio_mutex);
  uart_puts("fifo irq on core 0: ");
  uart_putu(irq_words);
  uart_puts(" words, sum ");
  uart_putu(irq_sum);
  uart_puts("\r\n");
  mutex_exit(&stdio_mutex);

  /* 3: both cores count under a mutex */
  multicore_fifo_push_blocking(0);
  add_under_mutex();
  check("core 1 counted", multicore_fifo_pop_blocking(), 1);
  check("mutex counter", shared_counter, 2u * COUNTER_ROUNDS);
  uart_puts("mutex counter ");
  uart_putu(shared_counter);
  uart_puts("\r\n");

  /* 4: lockout: core 1 counts until core 0 locks it out */
  check("victim ready", multicore_fifo_pop_blocking(), 2);
  while (core1_loops < 1000u) tight_loop_contents();
  multicore_lockout_start_blocking();
  uint32_t held = core1_loops;
  for (volatile uint32_t spin = 0; spin < 2000u; spin++) {
  }
  check("core 1 held", core1_loops, held);
  multicore_lockout_end_blocking();
  while (core1_loops == held) tight_loop_contents();
  uart_puts("lockout: core 1 held, then released\r\n");

  /* 5: reset core 1 while it runs, and launch it again */
  multicore_reset_core1();
  multicore_launch_core1_with_stack(core1_second_entry, core1_stack, sizeof core1_stack);
  check("relaunched core 1", multicore_fifo_pop_blocking(), 0x5EED0001u);
  uart_puts("core 1 reset and relaunched\r\n");

  if (failures) {
    uart_puts("multicore-sdk FAIL ");
    uart_putu(failures);
    uart_puts("\r\n");
    uart_flush();
    board_exit(1);
  }
  uart_puts("multicore-sdk PASS\r\n");
  uart_flush();
  board_exit(0);
}
