import type { RP2040 } from 'rp2040js';
import { SimError } from '../sim-error.js';
import { hex } from './core-faults.js';

/** USB MAIN_CTRL (datasheet §4.1.4): CONTROLLER_EN, bit 0. */
const USB_MAIN_CTRL = 0x40;

/**
 * No USB host is attached to the simulated chip: an image that enables the controller (stdio
 * over USB, TinyUSB) would wait for enumeration for ever, so enabling it stops the run with a
 * `bad-image` error that says why, in the job's failure.
 */
export function refuseUsbController(chip: RP2040): void {
  const usb = chip.usbCtrl;
  const write = usb.writeUint32.bind(usb);
  usb.writeUint32 = (offset: number, value: number) => {
    if (offset === USB_MAIN_CTRL && value & 1) {
      throw new SimError(
        'bad-image',
        `the USB controller is not modelled: the firmware enabled it (USB MAIN_CTRL.CONTROLLER_EN) near PC ${hex(chip.core.PC)}, as stdio over USB and TinyUSB do; ` +
          `no USB host is attached, so it would wait for enumeration for ever. Build the image with stdio on a UART (docs/backends/sim.md)`,
      );
    }
    write(offset, value);
  };
}
