#include "hilbench.h"

void uart_puts(const char *s) {
  while (*s != '\0') uart_putc(*s++);
}

/* Decimal without printf: a newlib-free build has no formatter, and this is all we print. */
void uart_putu(uint32_t value) {
  char digits[10];
  int n = 0;
  do {
    digits[n++] = (char)('0' + value % 10u);
    value /= 10u;
  } while (value != 0u);
  while (n > 0) uart_putc(digits[--n]);
}
