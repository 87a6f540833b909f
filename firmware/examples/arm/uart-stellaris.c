/* LM3S6965 UART0 (PL011-compatible, LM3S6965 datasheet §13) on PA0/PA1. */
#include "../src/hilbench.h"

#define SYSCTL_RCGC1 (*(volatile uint32_t *)0x400FE104u) /* bit 0: UART0 clock */
#define SYSCTL_RCGC2 (*(volatile uint32_t *)0x400FE108u) /* bit 0: GPIOA clock */
#define GPIOA_AFSEL (*(volatile uint32_t *)0x40004420u)
#define GPIOA_DEN (*(volatile uint32_t *)0x4000451Cu)
#define UART0 0x4000C000u
#define UART_DR (*(volatile uint32_t *)(UART0 + 0x000u))
#define UART_FR (*(volatile uint32_t *)(UART0 + 0x018u)) /* bit 5: TXFF, bit 3: BUSY */
#define UART_IBRD (*(volatile uint32_t *)(UART0 + 0x024u))
#define UART_FBRD (*(volatile uint32_t *)(UART0 + 0x028u))
#define UART_LCRH (*(volatile uint32_t *)(UART0 + 0x02Cu))
#define UART_CTL (*(volatile uint32_t *)(UART0 + 0x030u))

void board_init(void) {
  SYSCTL_RCGC1 |= 1u;
  SYSCTL_RCGC2 |= 1u;
  GPIOA_AFSEL |= 3u; /* PA0 = U0Rx, PA1 = U0Tx */
  GPIOA_DEN |= 3u;
  UART_CTL = 0u;
  /* 115200 baud: divisor = SYSTICK_HZ / (16 * 115200), fraction in 1/64ths (datasheet §13.3.2). */
  const uint32_t div64 = (SYSTICK_HZ * 4u + 57600u) / 115200u;
  UART_IBRD = div64 / 64u;
  UART_FBRD = div64 % 64u;
  UART_LCRH = 0x70u; /* 8 data bits, FIFOs on */
  UART_CTL = 0x301u; /* UARTEN | TXE | RXE */
}

void uart_putc(char c) {
  while ((UART_FR & (1u << 5)) != 0u) {
  }
  UART_DR = (uint8_t)c;
}

void uart_flush(void) {
  while ((UART_FR & (1u << 3)) != 0u) {
  }
}
