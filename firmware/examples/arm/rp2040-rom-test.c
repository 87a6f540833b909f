/*
 * rom-test: an RP2040 image with a boot2 stage that looks the boot ROM's functions up by their
 * two-letter codes exactly as the RP2040 datasheet §2.8.3 describes (16-bit pointers at 0x14,
 * 0x16 and 0x18, codes c1 | c2 << 8) and checks what they return on the device: bit helpers,
 * memory helpers, a flash erase/program round trip, and the soft float and double tables
 * against results computed on the host (rp2040-rom-cases.h).
 * Output: "hilbench rom-test board=pico rom=v<version>\r\n", one "FAIL ..." line per failed
 * check, then "rom-test PASS <n> checks\r\n" and exit 0, or "rom-test FAIL <k> of <n>" and exit 1.
 */
#include "../src/hilbench.h"

typedef void *(*rom_table_lookup_fn)(const uint16_t *table, uint32_t code);
typedef uint64_t (*rom_call_fn)(uint64_t a, uint64_t b);

/* A halfword of the ROM; in assembly because gcc 12 treats a constant pointer below 4096 as null. */
static uint32_t rom_hword(uintptr_t address) {
  uint32_t value;
  __asm__ volatile("ldrh %0, [%1]" : "=l"(value) : "l"(address));
  return value;
}
static uint32_t rom_byte(uintptr_t address) {
  uint32_t value;
  __asm__ volatile("ldrb %0, [%1]" : "=l"(value) : "l"(address));
  return value;
}

#define ROM_CODE(c1, c2) ((uint32_t)(c1) | ((uint32_t)(c2) << 8))
static void *rom_lookup(uintptr_t table_pointer, uint32_t code) {
  rom_table_lookup_fn lookup = (rom_table_lookup_fn)(uintptr_t)rom_hword(0x18);
  return lookup((const uint16_t *)(uintptr_t)rom_hword(table_pointer), code);
}
static void *rom_func(char c1, char c2) { return rom_lookup(0x14, ROM_CODE(c1, c2)); }
static void *rom_data(char c1, char c2) { return rom_lookup(0x16, ROM_CODE(c1, c2)); }

static uint32_t checks, failures;

static void puthex(uint64_t value, int digits) {
  for (int i = digits - 1; i >= 0; i--) uart_putc("0123456789abcdef"[(value >> (4 * i)) & 0xf]);
}
static void check(const char *name, uint64_t got, uint64_t want) {
  checks++;
  if (got == want) return;
  failures++;
  uart_puts("FAIL ");
  uart_puts(name);
  uart_puts(" got 0x");
  puthex(got, 16);
  uart_puts(" want 0x");
  puthex(want, 16);
  uart_puts("\r\n");
}

enum rom_kind { EXACT32, EXACT64, NAN32, NAN64, NEAR32, NEAR64 };
struct rom_case {
  const char *name;
  char table;
  uint8_t offset;
  uint64_t a, b, want;
  enum rom_kind kind;
};
#include "rp2040-rom-cases.h"

/* Within 2 units in the last place (same sign): what the ROM's CORDIC functions are held to. */
static int near(uint64_t got, uint64_t want) { return (got > want ? got - want : want - got) <= 2; }

static void check_soft_tables(void) {
  uint32_t *sf = rom_data('S', 'F');
  uint32_t *sd = rom_data('S', 'D');
  check("SF table present", sf != 0, 1);
  check("SD table present", sd != 0, 1);
  if (!sf || !sd) return;
  /* The SDK reads the table size in words from the byte two before the table. */
  check("SF table size", rom_byte((uintptr_t)sf - 2) * 4u >= 0x80u, 1);
  for (uint32_t i = 0; i < sizeof rom_cases / sizeof rom_cases[0]; i++) {
    const struct rom_case *c = &rom_cases[i];
    rom_call_fn fn = (rom_call_fn)(c->table == 'F' ? sf : sd)[c->offset / 4];
    uint64_t got = fn(c->a, c->b);
    switch (c->kind) {
      case EXACT32: check(c->name, (uint32_t)got, c->want); break;
      case EXACT64: check(c->name, got, c->want); break;
      /* Any NaN: exponent all ones and a non-zero fraction. */
      case NAN32: check(c->name, ((uint32_t)got & 0x7f800000u) == 0x7f800000u && ((uint32_t)got & 0x7fffffu) != 0, 1); break;
      case NAN64: check(c->name, (got & 0x7ff0000000000000ull) == 0x7ff0000000000000ull && (got & 0xfffffffffffffull) != 0, 1); break;
      case NEAR32: check(c->name, near((uint32_t)got, c->want) ? c->want : (uint32_t)got, c->want); break;
      case NEAR64: check(c->name, near(got, c->want) ? c->want : got, c->want); break;
    }
  }
}

static void check_bits_and_memory(void) {
  uint32_t (*popcount32)(uint32_t) = rom_func('P', '3');
  uint32_t (*reverse32)(uint32_t) = rom_func('R', '3');
  uint32_t (*clz32)(uint32_t) = rom_func('L', '3');
  uint32_t (*ctz32)(uint32_t) = rom_func('T', '3');
  check("popcount32", popcount32(0xf00f0001u), 9);
  check("reverse32", reverse32(0x00000001u), 0x80000000u);
  check("reverse32 pattern", reverse32(0x12345678u), 0x1e6a2c48u);
  check("clz32", clz32(0x00010000u), 15);
  check("clz32 of 0", clz32(0), 32);
  check("ctz32", ctz32(0x00010000u), 16);
  check("ctz32 of 0", ctz32(0), 32);
  check("lookup of an unknown code is 0", (uintptr_t)rom_func('Z', 'Z'), 0);

  static uint32_t buffer[8], copy[8];
  uint8_t *(*memset_)(uint8_t *, uint8_t, uint32_t) = rom_func('M', 'S');
  uint32_t *(*memset4)(uint32_t *, uint8_t, uint32_t) = rom_func('S', '4');
  uint8_t *(*memcpy_)(uint8_t *, const uint8_t *, uint32_t) = rom_func('M', 'C');
  void *(*memcpy44)(uint32_t *, const uint32_t *, uint32_t) = rom_func('C', '4');
  check("memset4 returns ptr", (uintptr_t)memset4(buffer, 0xa5, sizeof buffer), (uintptr_t)buffer);
  check("memset4", buffer[7], 0xa5a5a5a5u);
  check("memset returns ptr", (uintptr_t)memset_((uint8_t *)buffer + 1, 0x11, 2), (uintptr_t)buffer + 1);
  check("memset", buffer[0], 0xa51111a5u);
  check("memcpy returns dest", (uintptr_t)memcpy_((uint8_t *)copy + 3, (const uint8_t *)buffer, 5), (uintptr_t)copy + 3);
  check("memcpy", copy[1], 0xa5a51111u);
  memcpy44(copy, buffer, sizeof buffer);
  check("memcpy44", copy[0], 0xa51111a5u);
}

/* A sector well past this image: 1 MiB into the 2 MiB flash. */
#define TEST_FLASH_OFFSET 0x100000u
#define XIP_BASE 0x10000000u

/* Runs from SRAM, as flash programming code must: XIP is off while the ROM talks to the flash. */
__attribute__((noinline, long_call, section(".data.ram_func"))) static void flash_round_trip(const uint8_t *page, uint32_t erase_only) {
  void (*connect)(void) = rom_func('I', 'F');
  void (*exit_xip)(void) = rom_func('E', 'X');
  void (*erase)(uint32_t, uint32_t, uint32_t, uint8_t) = rom_func('R', 'E');
  void (*program)(uint32_t, const uint8_t *, uint32_t) = rom_func('R', 'P');
  void (*flush)(void) = rom_func('F', 'C');
  void (*enter_xip)(void) = rom_func('C', 'X');
  connect();
  exit_xip();
  if (erase_only) erase(TEST_FLASH_OFFSET, 4096, 1u << 16, 0xd8);
  else program(TEST_FLASH_OFFSET, page, 256);
  flush();
  enter_xip();
}

static void check_flash(void) {
  static uint8_t page[256];
  volatile const uint32_t *xip = (volatile const uint32_t *)(XIP_BASE + TEST_FLASH_OFFSET);
  for (uint32_t i = 0; i < sizeof page; i++) page[i] = (uint8_t)(i * 7u + 1u);
  flash_round_trip(page, 1);
  check("flash erased", xip[0] & xip[63] & xip[1023], 0xffffffffu);
  flash_round_trip(page, 0);
  check("flash programmed word 0", xip[0], 0x160f0801u);
  check("flash programmed word 63", xip[63], 0xfaf3ece5u);
  check("flash beyond the page still erased", xip[64], 0xffffffffu);
  /* Programming only clears bits, as on NOR flash: the page again leaves it unchanged. */
  flash_round_trip(page, 0);
  check("flash reprogrammed with the same data", xip[1], 0x322b241du);
  flash_round_trip(page, 1);
  check("flash erased again", xip[0], 0xffffffffu);
}

int main(void) {
  board_init();
  uart_puts("hilbench rom-test board=" BOARD_ID " rom=v");
  uart_putu(rom_byte(0x13));
  uart_puts("\r\n");
  check("magic", rom_byte(0x10) | rom_byte(0x11) << 8 | rom_byte(0x12) << 16, 0x01754du);
  check_bits_and_memory();
  check_flash();
  check_soft_tables();
  if (failures == 0) {
    uart_puts("rom-test PASS ");
    uart_putu(checks);
    uart_puts(" checks\r\n");
  } else {
    uart_puts("rom-test FAIL ");
    uart_putu(failures);
    uart_puts(" of ");
    uart_putu(checks);
    uart_puts("\r\n");
  }
  uart_flush();
  board_exit(failures == 0 ? 0 : 1);
}
