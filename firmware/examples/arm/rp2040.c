/*
 * RP2040 bare metal, without the SDK, the bootrom or a boot2 stage: the sim backend loads the
 * segments, sets VTOR = 0x10000000, SP = word 0 and PC = word 1 (a real Pico would need boot2).
 * RP2040 datasheet: §2.14 RESETS, §2.16 XOSC, §2.15 CLOCKS, §4.6 TIMER, §4.2 UART (PL011).
 * Bring-up: take IO_BANK0, PADS_BANK0, TIMER and UART0 out of reset; start the 12 MHz crystal;
 * run clk_ref and clk_peri from it; give the timer its 1 us tick; route GPIO0/1 to UART0.
 */
#include "../src/hilbench.h"

#define REG(addr) (*(volatile uint32_t *)(addr))
#define CLEAR_ALIAS 0x3000u /* atomic bit-clear alias of every APB register (§2.1.2) */

#define RESETS_RESET 0x4000C000u
#define RESETS_RESET_DONE REG(0x4000C008u)
#define XOSC_CTRL REG(0x40024000u)
#define XOSC_STATUS REG(0x40024004u)
#define XOSC_STARTUP REG(0x4002400Cu)
#define CLK_REF_CTRL REG(0x40008030u)
#define CLK_REF_SELECTED REG(0x40008038u)
#define CLK_PERI_CTRL REG(0x40008048u)
#define WATCHDOG_TICK REG(0x4005802Cu)
#define TIMER_TIMERAWL REG(0x40054028u)
#define IO_BANK0_GPIO0_CTRL REG(0x40014004u)
#define IO_BANK0_GPIO1_CTRL REG(0x4001400Cu)
#define UART0 0x40034000u
#define UART_DR REG(UART0 + 0x000u)
#define UART_FR REG(UART0 + 0x018u) /* bit 5: TXFF, bit 3: BUSY */
#define UART_IBRD REG(UART0 + 0x024u)
#define UART_FBRD REG(UART0 + 0x028u)
#define UART_LCR_H REG(UART0 + 0x02Cu)
#define UART_CR REG(UART0 + 0x030u)

void board_init(void) {
  const uint32_t blocks = (1u << 5) | (1u << 8) | (1u << 21) | (1u << 22); /* io_bank0, pads_bank0, timer, uart0 */
  REG(RESETS_RESET + CLEAR_ALIAS) = blocks;
  while ((RESETS_RESET_DONE & blocks) != blocks) {
  }

  XOSC_CTRL = 0xAA0u;   /* FREQ_RANGE 1_15MHZ */
  XOSC_STARTUP = 47u;   /* ~1 ms: (12 MHz / 1000 + 128) / 256, §2.16.3 */
  XOSC_CTRL = 0xAA0u | (0xFABu << 12); /* ENABLE */
  while ((XOSC_STATUS & (1u << 31)) == 0u) { /* STABLE */
  }
  CLK_REF_CTRL = 2u; /* SRC = xosc_clksrc */
  while ((CLK_REF_SELECTED & (1u << 2)) == 0u) {
  }
  WATCHDOG_TICK = (1u << 9) | 12u; /* ENABLE, 12 clk_ref cycles = 1 us for the TIMER */
  CLK_PERI_CTRL = (1u << 11) | (4u << 5); /* ENABLE, AUXSRC = xosc_clksrc: clk_peri = 12 MHz */

  IO_BANK0_GPIO0_CTRL = 2u; /* FUNCSEL UART0 TX */
  IO_BANK0_GPIO1_CTRL = 2u; /* FUNCSEL UART0 RX */

  /* 115200 baud from 12 MHz: 12e6 / (16 * 115200) = 6.51 -> IBRD 6, FBRD round(0.51 * 64) = 33 (§4.2.7.1). */
  UART_IBRD = 6u;
  UART_FBRD = 33u;
  UART_LCR_H = 0x70u; /* WLEN 8 bits, FEN; writing LCR_H latches the divisors */
  UART_CR = 0x301u;   /* UARTEN | TXE | RXE */
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

/* TIMER counts microseconds from the watchdog tick, in the chip's (or the simulator's) time. */
void delay_ms(uint32_t ms) {
  const uint32_t start = TIMER_TIMERAWL;
  while (TIMER_TIMERAWL - start < ms * 1000u) {
  }
}
