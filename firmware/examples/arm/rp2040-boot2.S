/*
 * A boot2 stage of the project's own for the RP2040 test firmware (RP2040 datasheet §2.8.1.3):
 * the 256 bytes the boot ROM copies from flash, checks (CRC32 in the last 4 bytes, written by
 * boot2-checksum.ts after linking) and runs. It calls no ROM function. It sets the SSI up for
 * plain 03h serial reads through XIP (§4.10.13: CTRLR0 32-bit frames, EEPROM-read mode;
 * SPI_CTRLR0 command 03h, 8-bit instruction, 24-bit address), then enters the image as every
 * boot2 does: VTOR = 0x10000100, SP and PC from that vector table.
 * Not run on silicon here: the simulator starts images as boot2 leaves them.
 */
/* A fixed FILE symbol: without it the assembler names the temporary file, and rebuilds differ. */
.file "rp2040-boot2.S"
.syntax unified
.cpu cortex-m0plus
.thumb

.section .boot2, "ax"
.global boot2_entry
.type boot2_entry, %function
.thumb_func
boot2_entry:
    ldr r3, =0x18000000        @ XIP_SSI_BASE
    movs r1, #0
    str r1, [r3, #0x08]        @ SSIENR = 0: registers are writable only while disabled
    movs r1, #4
    str r1, [r3, #0x14]        @ BAUDR = 4: clk_sys / 4
    ldr r1, =((31 << 16) | (3 << 8))
    str r1, [r3, #0x00]        @ CTRLR0: DFS_32 = 31 (32-bit frames), TMOD = 3 (EEPROM read)
    ldr r1, =((0x03 << 24) | (2 << 8) | (6 << 2))
    ldr r2, =0x180000f4
    str r1, [r2]               @ SPI_CTRLR0: XIP_CMD 03h, INST_L 8 bits, ADDR_L 24 bits
    movs r1, #0
    str r1, [r3, #0x04]        @ CTRLR1 = 0: one data frame per read
    movs r1, #1
    str r1, [r3, #0x08]        @ SSIENR = 1
    ldr r0, =0x10000100        @ the image's vector table, right after boot2
    ldr r1, =0xe000ed08        @ VTOR
    str r0, [r1]
    ldmia r0, {r0, r1}
    msr msp, r0
    bx r1
.ltorg

.org 252
boot2_checksum:
.word 0                        @ replaced by boot2-checksum.ts with the CRC32 of bytes 0..251
