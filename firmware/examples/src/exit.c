/*
 * exit: prints one line, then ends with status 3 through the board's exit convention
 * (semihosting SYS_EXIT_EXTENDED on ARM, the GPIOR mailbox on AVR; docs/firmware.md).
 * Exact output: "hilbench exit board=<board id> code=3\r\n".
 */
#include "hilbench.h"

int main(void) {
  board_init();
  uart_puts("hilbench exit board=" BOARD_ID " code=3\r\n");
  uart_flush();
  board_exit(3);
}
