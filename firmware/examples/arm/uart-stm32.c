/*
 * STM32 USART (same SR/DR/BRR/CR1 layout on F1 RM0041 §23, F2 RM0033 §24 and F4 RM0090 §30).
 * Clocks and pins differ per family: STM32_F1 (USART1 on PA9/PA10, GPIO CRH) or STM32_F2F4
 * with USART_NUMBER 1 (PA9/PA10, AF7) or 2 (PA2/PA3, AF7). BRR is set for 115200 baud at the
 * clock the chip runs on after reset (HSI: 8 MHz on F1, 16 MHz on F2/F4), passed as USART_CLOCK_HZ.
 */
#include "../src/hilbench.h"

#define REG(addr) (*(volatile uint32_t *)(addr))

#if defined(STM32_F1)
#define USART_BASE 0x40013800u
#elif defined(STM32_F2F4) && USART_NUMBER == 1
#define USART_BASE 0x40011000u
#elif defined(STM32_F2F4) && USART_NUMBER == 2
#define USART_BASE 0x40004400u
#else
#error "define STM32_F1, or STM32_F2F4 with USART_NUMBER 1 or 2"
#endif

#define USART_SR REG(USART_BASE + 0x00u) /* bit 7: TXE, bit 6: TC */
#define USART_DR REG(USART_BASE + 0x04u)
#define USART_BRR REG(USART_BASE + 0x08u)
#define USART_CR1 REG(USART_BASE + 0x0Cu) /* bit 13: UE, bit 3: TE, bit 2: RE */

void board_init(void) {
#if defined(STM32_F1)
  REG(0x40021018u) |= (1u << 14) | (1u << 2) | 1u; /* RCC_APB2ENR: USART1EN, IOPAEN, AFIOEN */
  REG(0x40010804u) = (REG(0x40010804u) & ~0xF0u) | 0xB0u; /* GPIOA_CRH: PA9 alternate push-pull, 50 MHz */
#else
  REG(0x40023830u) |= 1u; /* RCC_AHB1ENR: GPIOAEN */
#if USART_NUMBER == 1
  REG(0x40023844u) |= 1u << 4; /* RCC_APB2ENR: USART1EN */
  REG(0x40020000u) = (REG(0x40020000u) & ~(0xFu << 18)) | (0xAu << 18); /* GPIOA_MODER: PA9, PA10 alternate */
  REG(0x40020024u) = (REG(0x40020024u) & ~0xFF0u) | 0x770u;             /* GPIOA_AFRH: AF7 */
#else
  REG(0x40023840u) |= 1u << 17; /* RCC_APB1ENR: USART2EN */
  REG(0x40020000u) = (REG(0x40020000u) & ~(0xFu << 4)) | (0xAu << 4); /* GPIOA_MODER: PA2, PA3 alternate */
  REG(0x40020020u) = (REG(0x40020020u) & ~0xFF00u) | 0x7700u;         /* GPIOA_AFRL: AF7 */
#endif
#endif
  USART_BRR = (USART_CLOCK_HZ + 57600u) / 115200u;
  USART_CR1 = (1u << 13) | (1u << 3) | (1u << 2);
}

void uart_putc(char c) {
  while ((USART_SR & (1u << 7)) == 0u) {
  }
  USART_DR = (uint8_t)c;
}

void uart_flush(void) {
  while ((USART_SR & (1u << 6)) == 0u) {
  }
}
