/*
 * The small board API every example program is written against. Each platform file
 * (one file under arm/ per UART family, avr/uno.c) implements it; the programs in src/ only print,
 * wait, exit and crash through it, so one program text runs on every board.
 *
 * BOARD_ID (a string) is set by build.sh with -DBOARD_ID="\"<board id>\"".
 */
#ifndef HILBENCH_H
#define HILBENCH_H

#include <stdint.h>

#ifndef BOARD_ID
#error "BOARD_ID must be defined by the build (build.sh passes -DBOARD_ID=\"<id>\")"
#endif

/* Brings up clocks and the board's console UART (the one its backend captures). */
void board_init(void);
/* Writes one byte to the console UART, waiting while its transmit FIFO is full. */
void uart_putc(char c);
/* Waits until every byte written so far has left the transmitter. */
void uart_flush(void);
/* Busy-waits about `ms` milliseconds of the board's time base (hardware timer, not a loop count). */
void delay_ms(uint32_t ms);
/* Ends the program with `code` the way the board's backend can see (see docs/firmware.md). */
__attribute__((noreturn)) void board_exit(int code);
/* Faults the way the board's backend reports as a crash (see docs/firmware.md). */
__attribute__((noreturn)) void board_crash(void);
/* Text printed by the crash program just before board_crash, saying what it will do. */
extern const char board_crash_description[];

void uart_puts(const char *s);
void uart_putu(uint32_t value);

#endif
