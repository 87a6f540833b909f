/*
 * hello: the banner names the board, then one numbered tick every 100 ms of board time, for ever.
 * Exact output (CR LF line ends):
 *   hilbench hello board=<board id>
 *   tick 1
 *   tick 2
 *   ...
 */
#include "hilbench.h"

int main(void) {
  board_init();
  uart_puts("hilbench hello board=" BOARD_ID "\r\n");
  for (uint32_t n = 1;; n++) {
    delay_ms(100);
    uart_puts("tick ");
    uart_putu(n);
    uart_puts("\r\n");
  }
}
