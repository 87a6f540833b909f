/*
 * An Arduino sketch for the Uno, built against Debian's Arduino core (arduino-core-avr) by
 * build.sh, never committed as an ELF (the image would hold the core's code). The tests in
 * arduino-sketch.test.ts run it on the uno simulator (avr8js) and check, in simulated time:
 *
 *   - Serial at SKETCH_BAUD (the build makes one image at 9600 and one at 115200): a banner,
 *     then BURST_LINES lines of BURST_LINE bytes sent back to back, timed against the baud rate;
 *   - millis() and delay() on timer0's overflow interrupt: "tick N millis=M" every TICK_MS;
 *   - Serial input: every line received is echoed back as "echo: <line>".
 */
#include <Arduino.h>

#ifndef SKETCH_BAUD
#error "build with -DSKETCH_BAUD=<baud> (build.sh makes 9600 and 115200)"
#endif

static const uint8_t BURST_LINES = 8;
/* 36 characters plus CR LF: 38 bytes a line, 304 for the burst. */
static const char BURST_LINE[] PROGMEM = "0123456789abcdefghijklmnopqrstuvwxyz";
static const unsigned long TICK_MS = 100;

static char received[64];
static uint8_t receivedLength = 0;

void setup() {
  Serial.begin(SKETCH_BAUD);
  Serial.print(F("hilbench arduino board=uno baud="));
  Serial.println((unsigned long)SKETCH_BAUD);
  for (uint8_t i = 0; i < BURST_LINES; i++) Serial.println((const __FlashStringHelper *)BURST_LINE);
}

/* Echoes each received line; a line longer than the buffer is echoed in pieces. */
static void echoInput() {
  while (Serial.available() > 0) {
    const int c = Serial.read();
    if (c == '\r') continue;
    if (c != '\n') received[receivedLength++] = (char)c;
    if (c == '\n' || receivedLength == sizeof received - 1) {
      received[receivedLength] = '\0';
      Serial.print(F("echo: "));
      Serial.println(received);
      receivedLength = 0;
    }
  }
}

void loop() {
  static unsigned long ticks = 0;
  delay(TICK_MS);
  ticks++;
  Serial.print(F("tick "));
  Serial.print(ticks);
  Serial.print(F(" millis="));
  Serial.println(millis());
  echoInput();
}
