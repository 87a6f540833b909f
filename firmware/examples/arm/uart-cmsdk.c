/* Arm CMSDK APB UART (CMSDK TRM DDI 0479, "APB UART"): the console of the MPS2 FPGA images.
 * UART_BASE is 0x40004000 (AN385/386/500) or the Secure alias 0x50200000 (AN505). */
#include "../src/hilbench.h"

#define UART_DATA (*(volatile uint32_t *)(UART_BASE + 0x00u))
#define UART_STATE (*(volatile uint32_t *)(UART_BASE + 0x04u)) /* bit 0: TX buffer full */
#define UART_CTRL (*(volatile uint32_t *)(UART_BASE + 0x08u))  /* bit 0: TX enable, bit 1: RX enable */
#define UART_BAUDDIV (*(volatile uint32_t *)(UART_BASE + 0x10u))

void board_init(void) {
  UART_BAUDDIV = SYSTICK_HZ / 115200u; /* >= 16 as the TRM requires; QEMU does not model baud */
  UART_CTRL = 3u;
}

void uart_putc(char c) {
  while ((UART_STATE & 1u) != 0u) {
  }
  UART_DATA = (uint8_t)c;
}

void uart_flush(void) {
  while ((UART_STATE & 1u) != 0u) {
  }
}
