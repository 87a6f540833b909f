#!/usr/bin/env bash
# Builds the example firmware (hello, exit, crash) for every board in boards/*.yaml.
#
#   firmware/examples/build.sh [--out DIR] [--arduino-out DIR] [BOARD...]
#
# Default output is this folder: <board>/<program>.elf, the committed prebuilt images.
# Needs Debian's arm-none-eabi-gcc (gcc-arm-none-eabi) and avr-gcc (gcc-avr, avr-libc).
# The target uno-arduino (Arduino-core sketches, built when arduino-core-avr is installed) goes
# to --arduino-out, default <repo>/.tmp/arduino (gitignored): those images are never committed.
# Builds are reproducible with one toolchain (no build id, no .comment, no absolute paths),
# but not across toolchain versions: ci/check-firmware.ts compares behaviour, not bytes.
# After a rebuild of the committed images run `npx tsx firmware/examples/update-manifest.ts`.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUT="$HERE"
ARDUINO_OUT="$(cd "$HERE/../.." && pwd)/.tmp/arduino"
BOARDS=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) OUT="$(mkdir -p "$2" && cd "$2" && pwd)"; shift 2 ;;
    --arduino-out) ARDUINO_OUT="$2"; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    -*) echo "build.sh: unknown option $1" >&2; exit 2 ;;
    *) BOARDS+=("$1"); shift ;;
  esac
done
cd "$HERE"

PROGRAMS=(hello exit crash)
# -g0 and no __FILE__ keep absolute paths out of the images (avr-gcc 5.4 lacks -ffile-prefix-map).
COMMON_CFLAGS=(-Os -std=c11 -ffreestanding -fno-builtin -ffunction-sections -fdata-sections -fno-ident -g0
  -Wall -Wextra -Werror)
# A small segment alignment keeps the images a few hundred bytes instead of padded to 64 KiB pages.
COMMON_LDFLAGS=(-Wl,--gc-sections -Wl,-z,max-page-size=16 -Wl,--strip-debug)

BUILT=()
wanted() { # is board $1 selected on the command line (or no selection)?
  [[ ${#BOARDS[@]} -eq 0 ]] && return 0
  local b; for b in "${BOARDS[@]}"; do [[ "$b" == "$1" ]] && return 0; done; return 1
}

# arm BOARD CPU LAYOUT PLATFORM [-DNAME=VALUE...]
arm() {
  local board="$1" cpu="$2" layout="$3" platform="$4"; shift 4
  wanted "$board" || return 0
  mkdir -p "$OUT/$board"
  local prog
  for prog in "${PROGRAMS[@]}"; do
    arm-none-eabi-gcc -mcpu="$cpu" -mthumb "${COMMON_CFLAGS[@]}" -nostdlib -DBOARD_ID="\"$board\"" "$@" \
      -Lld -T "$layout.ld" "${COMMON_LDFLAGS[@]}" -Wl,--build-id=none \
      -o "$OUT/$board/$prog.elf" arm/startup.c arm/arm-common.c "arm/$platform.c" src/print.c "src/$prog.c" -lgcc
  done
  BUILT+=("$board")
  echo "built $board (arm $cpu, ld/$layout.ld, arm/$platform.c)"
}

# avr BOARD MCU F_CPU
avr() {
  local board="$1" mcu="$2" fcpu="$3"
  wanted "$board" || return 0
  mkdir -p "$OUT/$board"
  local prog
  for prog in "${PROGRAMS[@]}"; do
    avr-gcc -mmcu="$mcu" "${COMMON_CFLAGS[@]}" -DF_CPU="${fcpu}UL" -DBOARD_ID="\"$board\"" \
      "${COMMON_LDFLAGS[@]}" -o "$OUT/$board/$prog.elf" avr/uno.c src/print.c "src/$prog.c"
  done
  BUILT+=("$board")
  echo "built $board (avr $mcu)"
}

# SYSTICK_HZ is the core clock the board's backend models from reset (delays count it):
#   QEMU 7.2 hw/arm/mps2.c SYSCLK_FRQ 25 MHz; hw/arm/mps2-tz.c 20 MHz; hw/arm/netduino2.c 120 MHz;
#   hw/arm/netduinoplus2.c 168 MHz; hw/arm/stm32vldiscovery.c 24 MHz; lm3s6965evb: 12 MHz, the
#   clock QEMU's stellaris.c derives from the reset value of RCC (measured: 10 ticks per second).
#   stm32f4-discovery: 16 MHz HSI, what the real chip runs on after reset. Renode's stm32f4.repl
#   clocks SysTick at 72 MHz, so there ticks come 4.5 times as often (unverified here).
# USART_CLOCK_HZ is the STM32 reset clock (HSI) so the baud rate is right on real silicon too.
arm mps2-an385 cortex-m3 mps2 uart-cmsdk -DUART_BASE=0x40004000u -DSYSTICK_HZ=25000000u
arm mps2-an386 cortex-m4 mps2 uart-cmsdk -DUART_BASE=0x40004000u -DSYSTICK_HZ=25000000u
arm mps2-an500 cortex-m7 mps2 uart-cmsdk -DUART_BASE=0x40004000u -DSYSTICK_HZ=25000000u
arm mps2-an505 cortex-m33 mps2-an505 uart-cmsdk -DUART_BASE=0x50200000u -DSYSTICK_HZ=20000000u
arm lm3s6965evb cortex-m3 lm3s6965 uart-stellaris -DSYSTICK_HZ=12000000u
arm netduino2 cortex-m3 stm32f205rf uart-stm32 -DSTM32_F2F4 -DUSART_NUMBER=1 -DUSART_CLOCK_HZ=16000000u -DSYSTICK_HZ=120000000u
arm netduinoplus2 cortex-m4 stm32f4 uart-stm32 -DSTM32_F2F4 -DUSART_NUMBER=1 -DUSART_CLOCK_HZ=16000000u -DSYSTICK_HZ=168000000u
arm stm32vldiscovery cortex-m3 stm32f100rb uart-stm32 -DSTM32_F1 -DUSART_CLOCK_HZ=8000000u -DSYSTICK_HZ=24000000u
arm stm32f4-discovery cortex-m4 stm32f4 uart-stm32 -DSTM32_F2F4 -DUSART_NUMBER=2 -DUSART_CLOCK_HZ=16000000u -DSYSTICK_HZ=16000000u
arm microbit cortex-m0 nrf51822 nrf51
arm pico cortex-m0plus rp2040 rp2040
avr uno atmega328p 16000000

# RP2040 programs with a boot2 stage (ld/rp2040-boot2.ld, arm/rp2040-boot2.S), for the simulator's
# own boot ROM (docs/backends/sim.md). rp2040-rom-cases.h is generated on the host by
# arm/rp2040-rom-cases.host.c (see its header); boot2-checksum.ts writes boot2's CRC32 after linking.
# rp2040_boot2 BOARD PROGRAM SOURCE...
rp2040_boot2() {
  local board="$1" prog="$2"; shift 2
  wanted "$board" || return 0
  mkdir -p "$OUT/$board"
  arm-none-eabi-gcc -mcpu=cortex-m0plus -mthumb "${COMMON_CFLAGS[@]}" -nostdlib -DBOARD_ID="\"$board\"" \
    -Lld -T rp2040-boot2.ld "${COMMON_LDFLAGS[@]}" -Wl,--build-id=none \
    -o "$OUT/$board/$prog.elf" arm/rp2040-boot2.S arm/startup.c arm/arm-common.c arm/rp2040.c src/print.c "$@" -lgcc
  (cd "$HERE/../.." && npx tsx firmware/examples/boot2-checksum.ts "$OUT/$board/$prog.elf") >/dev/null
  echo "built $board/$prog (arm cortex-m0plus, boot2 stage, ld/rp2040-boot2.ld)"
}
rp2040_boot2 pico rom-test arm/rp2040-rom-test.c
rp2040_boot2 pico multicore arm/rp2040-multicore.c
rp2040_boot2 pico multicore-sdk arm/rp2040-multicore-sdk.c
# Bench images (perf/multicore.bench.ts): integer work on core 0 alone, on both cores, and soft float through the ROM.
rp2040_boot2 pico compute arm/rp2040-compute.c
rp2040_boot2 pico compute-dual arm/rp2040-compute.c -DBOTH_CORES
rp2040_boot2 pico float-heavy arm/rp2040-float.c

# Arduino-core sketches for the uno simulator (docs/firmware.md, "Arduino sketches"): Debian's
# arduino-core-avr compiled as the Arduino IDE's platform.txt does for the Uno (without -flto,
# which avr-gcc 5.4's linker plugin does not need to be right), then linked with the sketch.
# The images hold the core's code, so they go to $ARDUINO_OUT and are never committed.
# WString.cpp is left out: the 1.8.7 core needs DECIMAL_DIG, which avr-libc 2.0's float.h lacks,
# and no sketch here uses String.
ARDUINO_AVR="${ARDUINO_AVR:-/usr/share/arduino/hardware/arduino/avr}"
ARDUINO_SKETCHES=(arduino-serial)
ARDUINO_BAUDS=(9600 115200)
arduino_uno() {
  local board=uno-arduino
  # Built by default when the package is there; named on the command line, it must be there.
  if [[ ${#BOARDS[@]} -eq 0 && ! -d "$ARDUINO_AVR/cores/arduino" ]]; then
    echo "skipped $board: arduino-core-avr is not installed (apt-get install -y arduino-core-avr)"
    return 0
  fi
  wanted "$board" || return 0
  if [[ ! -d "$ARDUINO_AVR/cores/arduino" ]]; then
    echo "build.sh: $board needs Debian's Arduino core in $ARDUINO_AVR (apt-get install -y arduino-core-avr)" >&2
    exit 2
  fi
  local core="$ARDUINO_AVR/cores/arduino" variant="$ARDUINO_AVR/variants/standard"
  local flags=(-mmcu=atmega328p -DF_CPU=16000000L -DARDUINO=10807 -DARDUINO_AVR_UNO -DARDUINO_ARCH_AVR
    -Os -g0 -fno-ident -ffunction-sections -fdata-sections -I"$core" -I"$variant")
  local cxxflags=(-std=gnu++11 -fpermissive -fno-exceptions -fno-threadsafe-statics)
  mkdir -p "$ARDUINO_OUT/uno"
  local objs; objs="$(mktemp -d "$ARDUINO_OUT/core.XXXXXX")"
  local src
  for src in "$core"/*.c; do avr-gcc -c -std=gnu11 -w "${flags[@]}" "$src" -o "$objs/$(basename "$src").o"; done
  for src in "$core"/*.cpp; do
    [[ "$(basename "$src")" == WString.cpp ]] && continue
    avr-g++ -c -w "${cxxflags[@]}" "${flags[@]}" "$src" -o "$objs/$(basename "$src").o"
  done
  for src in "$core"/*.S; do avr-gcc -c -x assembler-with-cpp "${flags[@]}" "$src" -o "$objs/$(basename "$src").o"; done
  rm -f "$objs/core.a"
  avr-ar rcs "$objs/core.a" "$objs"/*.o
  local sketch baud
  for sketch in "${ARDUINO_SKETCHES[@]}"; do
    for baud in "${ARDUINO_BAUDS[@]}"; do
      # The sketch is ours: full warnings, as errors.
      avr-g++ -c -x c++ -Wall -Wextra -Werror "${cxxflags[@]}" "${flags[@]}" -DSKETCH_BAUD="$baud" \
        "avr/$sketch.ino" -o "$objs/$sketch-$baud.o"
      avr-gcc -mmcu=atmega328p -Os "${COMMON_LDFLAGS[@]}" -o "$ARDUINO_OUT/uno/$sketch-$baud.elf" \
        "$objs/$sketch-$baud.o" "$objs/core.a" -lm
    done
  done
  rm -rf "$objs"
  BUILT+=("$board")
  echo "built $board (Arduino core $(sed -n 's/^version=//p' "$ARDUINO_AVR/platform.txt"), into $ARDUINO_OUT/uno)"
}
arduino_uno

# A board named on the command line but missing from the table above is a mistake, not a no-op.
for b in "${BOARDS[@]}"; do
  if [[ " ${BUILT[*]} " != *" $b "* ]]; then
    echo "build.sh: no build recipe for board '$b' (add a line to the table in build.sh)" >&2
    exit 2
  fi
done
