/*
 * nRF51822 (nRF51 Series Reference Manual v3.0): UART0 on the micro:bit's USB bridge pins
 * (TX P0.24, RX P0.25) and TIMER0 for delays. The nRF51's Cortex-M0 has no SysTick, so
 * delays use TIMER0 at 1 MHz (16 MHz HFCLK / 2^4) and its capture task.
 */
#include "../src/hilbench.h"

#define REG(addr) (*(volatile uint32_t *)(addr))
#define UART0 0x40002000u
#define UART_STARTTX REG(UART0 + 0x008u)
#define UART_TXDRDY REG(UART0 + 0x11Cu)
#define UART_ENABLE REG(UART0 + 0x500u)
#define UART_PSELTXD REG(UART0 + 0x50Cu)
#define UART_PSELRXD REG(UART0 + 0x514u)
#define UART_TXD REG(UART0 + 0x51Cu)
#define UART_BAUDRATE REG(UART0 + 0x524u)
#define TIMER0 0x40008000u
#define TIMER_START REG(TIMER0 + 0x000u)
#define TIMER_CAPTURE0 REG(TIMER0 + 0x040u)
#define TIMER_MODE REG(TIMER0 + 0x504u)
#define TIMER_BITMODE REG(TIMER0 + 0x508u)
#define TIMER_PRESCALER REG(TIMER0 + 0x510u)
#define TIMER_CC0 REG(TIMER0 + 0x540u)

void board_init(void) {
  UART_PSELTXD = 24u;
  UART_PSELRXD = 25u;
  UART_BAUDRATE = 0x01D7E000u; /* 115200 */
  UART_ENABLE = 4u;
  UART_STARTTX = 1u;
  TIMER_MODE = 0u;      /* timer */
  TIMER_BITMODE = 3u;   /* 32 bit */
  TIMER_PRESCALER = 4u; /* 16 MHz / 16 = 1 MHz */
  TIMER_START = 1u;
}

void uart_putc(char c) {
  UART_TXD = (uint8_t)c;
  while (UART_TXDRDY == 0u) {
  }
  UART_TXDRDY = 0u;
}

void uart_flush(void) { /* uart_putc already waits for TXDRDY of every byte */ }

static uint32_t now_micros(void) {
  TIMER_CAPTURE0 = 1u;
  return TIMER_CC0;
}

void delay_ms(uint32_t ms) {
  const uint32_t start = now_micros();
  while (now_micros() - start < ms * 1000u) {
  }
}
