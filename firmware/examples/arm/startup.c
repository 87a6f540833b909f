/*
 * Cortex-M start-up shared by every ARM board: the vector table, .data copy, .bss clear,
 * then main. No C library: the loops below stand in for memcpy/memset, which -nostdlib lacks.
 */
#include <stdint.h>

extern uint32_t __stack_top[];
extern uint32_t __data_load[], __data_start[], __data_end[], __bss_start[], __bss_end[];
int main(void);
__attribute__((noreturn)) void reset_handler(void);

/*
 * Every exception vector other than Reset points at 0xFFFFFFF0 (Thumb bit set), in the
 * execute-never System region: there are no fault handlers on purpose. A fault enters
 * HardFault, whose first instruction fetch faults again, so the core locks up. QEMU reports a
 * lockup as "Lockup: can't escalate 3 to HardFault" and exits with status 134, which is how a
 * crash becomes visible to the harness. (A vector of 0 is not enough: ARMv6-M QEMU then runs
 * the vector table as code and falls into reset_handler again.)
 */
#define FAULT 0xFFFFFFF1u

__attribute__((section(".vectors"), used)) const uintptr_t vector_table[16] = {
    (uintptr_t)__stack_top,
    (uintptr_t)reset_handler,
    FAULT, FAULT, FAULT, FAULT, FAULT, FAULT, FAULT, FAULT, FAULT, FAULT, FAULT, FAULT, FAULT, FAULT,
};

void reset_handler(void) {
  const uint32_t *src = __data_load;
  for (uint32_t *dst = __data_start; dst < __data_end;) *dst++ = *src++;
  for (uint32_t *dst = __bss_start; dst < __bss_end;) *dst++ = 0;
  (void)main();
  for (;;) {
  }
}
