/**
 * The Renode platform files the stand-in knows, keyed by the path Renode resolves them from
 * (relative to its install directory, as `@platforms/boards/...` in the monitor).
 *
 * The stand-in cannot execute a Cortex-M4 itself. For each platform it names a qemu-system-arm
 * machine with the same memory map and the same UART registers at the same addresses, and which
 * QEMU `-serial` index each Renode UART peripheral corresponds to. Facts:
 * - Renode `platforms/cpus/stm32f4.repl`: flash 0x08000000, sram 0x20000000, usart1 0x40011000,
 *   usart2 0x40004400, usart3 0x40004800 (STM32_UART model).
 * - QEMU 7.2 `hw/arm/stm32f405_soc.c` (machine netduinoplus2): the same STM32F4 flash/SRAM map and
 *   USART1..6 at 0x40011000, 0x40004400, 0x40004800, 0x40004C00, 0x40005000, 0x40011400 as
 *   serial0..5. QEMU does not model RCC/GPIO (writes are ignored), which bare-metal firmware that
 *   only enables clocks and pins does not notice.
 */
export interface StandinPlatform {
  /** What Renode's `cpu` is, for log lines. */
  cpu: string;
  /** qemu-system-arm machine that executes the firmware instead of Renode's tlib. */
  qemuMachine: string;
  /** Renode UART peripheral name (as `connector Connect` takes it) -> QEMU serial index. */
  uarts: Record<string, number>;
}

export const standinPlatforms: Record<string, StandinPlatform> = {
  'platforms/boards/stm32f4_discovery-kit.repl': {
    cpu: 'CPU.CortexM (cortex-m4f)',
    qemuMachine: 'netduinoplus2',
    uarts: { 'sysbus.usart1': 0, 'sysbus.usart2': 1, 'sysbus.usart3': 2, 'sysbus.uart4': 3, 'sysbus.uart5': 4, 'sysbus.usart6': 5 },
  },
};
