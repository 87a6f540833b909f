/*
 * Arduino Uno (ATmega328P at 16 MHz, datasheet DS40002061): USART0 at 115200 baud with U2X0
 * (UBRR0 = 16, the Arduino core's setting, 2.1 % error), delays from avr-libc's cycle-counted
 * _delay_ms, and the hilbench mailbox for exit and crash, because an AVR has neither
 * semihosting nor fault exceptions:
 *
 *   GPIOR1 (data address 0x4A) <- argument (the exit code)
 *   GPIOR2 (data address 0x4B) <- command: 0xE7 = exit with GPIOR1, 0xC5 = crash
 *
 * The general-purpose I/O registers do nothing on real silicon, so the same image runs on an
 * Uno; the sim backend puts a write hook on 0x4B (avr8js cpu.writeHooks[0x4B]).
 */
#include <avr/interrupt.h>
#include <avr/io.h>
#include <util/delay.h>

#include "../src/hilbench.h"

#define MAILBOX_EXIT 0xE7u
#define MAILBOX_CRASH 0xC5u

void board_init(void) {
  UCSR0A = 1u << U2X0;
  UBRR0 = 16u; /* 16 MHz / (8 * (16 + 1)) = 117647 baud ~ 115200 */
  UCSR0C = (1u << UCSZ01) | (1u << UCSZ00); /* 8N1 */
  UCSR0B = (1u << TXEN0) | (1u << RXEN0);
}

void uart_putc(char c) {
  while ((UCSR0A & (1u << UDRE0)) == 0u) {
  }
  UCSR0A |= 1u << TXC0; /* clear TX complete (write 1) so uart_flush can wait for this byte */
  UDR0 = (uint8_t)c;
}

void uart_flush(void) {
  while ((UCSR0A & (1u << TXC0)) == 0u) {
  }
}

void delay_ms(uint32_t ms) {
  while (ms-- > 0u) _delay_ms(1);
}

void board_exit(int code) {
  cli();
  GPIOR1 = (uint8_t)code;
  GPIOR2 = MAILBOX_EXIT;
  for (;;) {
  }
}

const char board_crash_description[] = "jumping to word address 0x7ff0, beyond the 16 Ki-word flash";

void board_crash(void) {
  cli();
  GPIOR1 = 0u;
  GPIOR2 = MAILBOX_CRASH;
  /* On silicon the 14-bit PC wraps into erased flash and the program restarts from 0 (an AVR has
   * no fault to take); the sim sees the mailbox write first and the PC leave program memory. */
  void (*volatile bad)(void) = (void (*)(void))0x7ff0u;
  bad();
  for (;;) {
  }
}
