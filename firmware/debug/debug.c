/*
 * debug: the program the GDB tests and docs/debug.md debug. A global the debugger reads at main,
 * a stack word it reads after one line, then one line printed once the debugger lets it run,
 * and exit 0 (docs/firmware.md conventions; an idle loop where build.sh defines
 * DEBUG_ENDS_IN_LOOP). Exact output:
 *   hilbench debug board=<board id> counter=42
 */
#include "hilbench.h"

/* 41 at main (initialised data, copied by the startup code); main makes it 42. */
volatile uint32_t debug_counter = 41;

int main(void) {
  /* A word on the stack: `print/x stack_word` reads it from the stack frame. */
  volatile uint32_t stack_word = 0x5eed;
  board_init();
  debug_counter = debug_counter + (stack_word == 0x5eed ? 1u : 0u);
  uart_puts("hilbench debug board=" BOARD_ID " counter=");
  uart_putu(debug_counter);
  uart_puts("\r\n");
  uart_flush();
#ifdef DEBUG_ENDS_IN_LOOP
  /* Boards whose backend has no exit convention (Renode runs without semihosting) idle instead. */
  for (;;) {
  }
#else
  board_exit(0);
#endif
}
