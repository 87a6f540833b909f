#!/usr/bin/env bash
# Builds the debug program (debug.c) with debug information for the boards the GDB tests and
# docs/debug.md use: <board>.elf in this folder, committed. Uses the platform files of
# ../examples (its build.sh builds the stripped example programs).
#   firmware/debug/build.sh
# Needs Debian's arm-none-eabi-gcc (gcc-arm-none-eabi) and avr-gcc (gcc-avr, avr-libc).
# -Og keeps every line and variable where GDB expects it; -fdebug-prefix-map writes paths
# relative to the repository, so the images hold no path of the machine that built them.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
FW=firmware/examples
cd "$ROOT"
CFLAGS=(-Og -g -std=c11 -ffreestanding -fno-builtin -fno-ident -Wall -Wextra -Werror "-fdebug-prefix-map=$ROOT=.")
SRC=(firmware/debug/debug.c "$FW/src/print.c")

# arm BOARD CPU LAYOUT PLATFORM [-DNAME=VALUE...] (the same table as ../examples/build.sh)
arm() {
  local board="$1" cpu="$2" layout="$3" platform="$4"; shift 4
  arm-none-eabi-gcc -mcpu="$cpu" -mthumb "${CFLAGS[@]}" -nostdlib -DBOARD_ID="\"$board\"" -I"$FW/src" "$@" \
    -L"$FW/ld" -T "$layout.ld" -Wl,-z,max-page-size=16 -Wl,--build-id=none \
    -o "firmware/debug/$board.elf" "$FW/arm/startup.c" "$FW/arm/arm-common.c" "$FW/arm/$platform.c" "${SRC[@]}" -lgcc
  echo "built $board"
}

arm pico cortex-m0plus rp2040 rp2040
arm mps2-an385 cortex-m3 mps2 uart-cmsdk -DUART_BASE=0x40004000u -DSYSTICK_HZ=25000000u
# The Renode board: Renode runs without semihosting, so the program idles instead of exiting.
arm stm32f4-discovery cortex-m4 stm32f4 uart-stm32 -DDEBUG_ENDS_IN_LOOP -DSTM32_F2F4 -DUSART_NUMBER=2 -DUSART_CLOCK_HZ=16000000u -DSYSTICK_HZ=16000000u
avr-gcc -mmcu=atmega328p "${CFLAGS[@]}" -DF_CPU=16000000UL -DBOARD_ID='"uno"' -I"$FW/src" \
  -o firmware/debug/uno.elf "$FW/avr/uno.c" "${SRC[@]}"
echo "built uno"
