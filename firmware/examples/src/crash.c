/*
 * crash: prints one line naming the fault it is about to cause, then causes it.
 * Exact output: "hilbench crash board=<board id>: <board_crash_description>\r\n".
 */
#include "hilbench.h"

int main(void) {
  board_init();
  uart_puts("hilbench crash board=" BOARD_ID ": ");
  uart_puts(board_crash_description);
  uart_puts("\r\n");
  uart_flush();
  board_crash();
}
