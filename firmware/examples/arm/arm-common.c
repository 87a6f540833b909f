/*
 * ARM behaviour shared by every ARM board: exit through semihosting, crash through a jump to
 * an execute-never address, and (unless the platform has a better timer) delays on SysTick.
 */
#include "../src/hilbench.h"

/*
 * ARM semihosting (IHI 0099, "SYS_EXIT_EXTENDED (0x20)"): BKPT 0xAB with r0 = 0x20 and r1
 * pointing at {reason, subcode}. Reason ADP_Stopped_ApplicationExit (0x20026) with subcode =
 * the exit status. QEMU with -semihosting-config enable=on exits with that status; the sim
 * backend watches for BKPT 0xAB (rp2040js reports it through onBreak(0xab)).
 */
void board_exit(int code) {
  volatile uint32_t block[2];
  block[0] = 0x20026u;
  block[1] = (uint32_t)code;
  register uint32_t r0 __asm__("r0") = 0x20u;
  register volatile uint32_t *r1 __asm__("r1") = block;
  __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
  for (;;) {
  }
}

/* 0xF0000000.. is the execute-never system region on every M profile core (ARMv6-M/v7-M/v8-M
 * "System" region), so the first instruction fetch faults; with no fault handler it locks up. */
const char board_crash_description[] = "jumping to 0xfffffff0 (execute-never) with no fault handler";

void board_crash(void) {
  void (*volatile bad)(void) = (void (*)(void))0xfffffff1u; /* Thumb bit set: fetch at 0xfffffff0 */
  bad();
  for (;;) {
  }
}

#ifdef SYSTICK_HZ
/* SysTick (ARMv7-M ARM B3.3) clocked from the core (CLKSOURCE = 1); SYSTICK_HZ is the core clock
 * the board's backend models after reset (build.sh says where each number comes from). */
#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)

/* Counts 10 ms reload periods when it can: each wrap costs QEMU a timer event, and at 1 ms
 * periods a busy host falls behind (measured: 4 instead of 10 ticks per second on mps2-an385).
 * 10 ms is at most 1.68 M cycles at 168 MHz, inside SysTick's 24-bit reload. */
void delay_ms(uint32_t ms) {
  const uint32_t step_ms = (ms % 10u == 0u) ? 10u : 1u;
  SYST_RVR = SYSTICK_HZ / 1000u * step_ms - 1u;
  SYST_CVR = 0;
  SYST_CSR = 5u; /* ENABLE | CLKSOURCE=core; no interrupt */
  for (uint32_t periods = ms / step_ms; periods > 0u; periods--) {
    while ((SYST_CSR & (1u << 16)) == 0u) { /* COUNTFLAG: one reload period passed */
    }
  }
  SYST_CSR = 0;
}
#endif
